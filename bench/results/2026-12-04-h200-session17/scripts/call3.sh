CALL=3; source .carry/common.sh
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
setup; step setup
touch kernels/candidate/candidate.cu
build || exit 1; step "built HEAD (v6)"
timeout 60 ctest --test-dir build/gpu -R '^adversarial.candidate$' --output-on-failure > $R/adv_candidate.txt 2>&1; step "adversarial.candidate rc=$? $(grep -E 'tests passed|tests failed' $R/adv_candidate.txt)"
timeout 90 build/gpu/bench/attngate_bench --suite=gate --compare=candidate,cudnn > $R/vs_cudnn.txt 2>&1; step "gate vs cudnn rc=$? $(grep -i 'geomean speedup' $R/vs_cudnn.txt | tail -1)"
timeout 90 build/gpu/bench/attngate_bench --suite=prod --compare=candidate,cudnn > $R/prod_vs_cudnn.txt 2>&1; step "prod vs cudnn rc=$? $(grep -i 'geomean speedup' $R/prod_vs_cudnn.txt | tail -1)"
ci/install_fa3_offline.sh /tmp/fa3 > $R/fa3_install.txt 2>&1; export PYTHONPATH=/tmp/fa3:$PYTHONPATH
left 400 && { timeout 100 python3 bench/python/attngate_baselines.py --suite gate --baselines fa3 --out $R/gate_fa3.json > $R/gate_fa3.log 2>&1; step "fa3 gate rc=$?"; }
left 470 && { timeout 50 python3 bench/python/attngate_baselines.py --suite prod --baselines fa3 --out $R/prod_fa3.json > $R/prod_fa3.log 2>&1; step "fa3 prod rc=$?"; }
step done
