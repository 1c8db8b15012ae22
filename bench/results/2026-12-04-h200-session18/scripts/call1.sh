CALL=1; source .carry/common.sh; source .carry/commit_best.sh
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
START=$(git rev-parse HEAD); echo $START > $R/start.txt
setup; step setup
cp .carry/v16.cu kernels/candidate/candidate.cu
build || exit 1; step "built v16"
precheck v16 || exit 1
gate v16 "v16: v13 (persistent, dynamic tile claims from a self-resetting counter, head-major non-causal order, scheduler one tile ahead, ring position from a count of key tiles) with v6n's split key loop (masked / unmasked iterations) and incremental wgmma descriptors. Predicted 1.85-1.95x."
commit_best 0 v16
timeout 90 build/gpu/bench/attngate_bench --suite=gate --compare=candidate,cudnn > $R/vs_cudnn.txt 2>&1; step "gate vs cudnn rc=$? $(grep -i 'geomean speedup' $R/vs_cudnn.txt | tail -1)"
timeout 90 build/gpu/bench/attngate_bench --suite=prod --compare=candidate,cudnn > $R/prod_vs_cudnn.txt 2>&1; step "prod vs cudnn rc=$? $(grep -i 'geomean speedup' $R/prod_vs_cudnn.txt | tail -1)"
ci/install_fa3_offline.sh /tmp/fa3 > $R/fa3_install.txt 2>&1; export PYTHONPATH=/tmp/fa3:$PYTHONPATH
left 430 && { timeout 100 python3 bench/python/attngate_baselines.py --suite gate --baselines fa3 --out $R/gate_fa3.json > $R/gate_fa3.log 2>&1; step "fa3 gate rc=$?"; }
left 480 && { timeout 50 python3 bench/python/attngate_baselines.py --suite prod --baselines fa3 --out $R/prod_fa3.json > $R/prod_fa3.log 2>&1; step "fa3 prod rc=$?"; }
prof() { timeout 40 $AG profile --scenario $2 --compare $3 > $R/profile_$1_$2.txt 2>&1; step "profile $1 $2 rc=$?"; }
left 530 && prof v16 gate_mha_d128_s4096 initial
left 545 && prof v16 gate_mha_d64_s16384 initial
left 560 && prof v16 gate_mha_d128_s16384_causal initial
step done
