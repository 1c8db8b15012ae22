CALL=5; source .carry/common.sh
START=$(git rev-parse HEAD); echo $START > $R/start.txt
setup; step setup
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
try v8 "v8: v7e (persistent, L2 groups of 32 MB, first key tile peeled) with tiles claimed from a self-resetting global counter instead of every gridDim.x-th tile; the tile reaches the consumers through shared memory. Predicted (a list-scheduling model): causal d128/d256 up 6-13 % over v6, GQA +3 %, short +3 %; geomean 1.76-1.80x."
f=$R/gate_v8.json
if [ -f $f ] && [ "$(field $f verdict)" = pass ]; then
  $AG commit --version $(field $f version) > $R/commit.txt 2>&1; step "commit rc=$? $(tail -1 $R/commit.txt)"
  git bundle create $R/commit.bundle $START..HEAD > /dev/null 2>&1
fi
$AG history > $R/history.txt 2>&1; cp .attngate/lineage.jsonl $R/ 2>/dev/null
ci/install_fa3_offline.sh /tmp/fa3 > $R/fa3_install.txt 2>&1; export PYTHONPATH=/tmp/fa3:$PYTHONPATH
left 330 && { timeout 90 python3 bench/python/attngate_baselines.py --suite gate --baselines fa3 --out $R/gate_fa3.json > $R/gate_fa3.log 2>&1; step "fa3 gate rc=$?"; }
left 330 && { timeout 60 build/gpu/bench/attngate_bench --suite=gate --compare=candidate,cudnn > $R/vs_cudnn.txt 2>&1; step "gate vs cudnn rc=$? $(grep -i 'geomean speedup' $R/vs_cudnn.txt | tail -1)"; }
left 360 && { timeout 40 python3 bench/python/attngate_baselines.py --suite prod --baselines fa3 --out $R/prod_fa3.json > $R/prod_fa3.log 2>&1; step "fa3 prod rc=$?"; }
left 360 && { timeout 60 build/gpu/bench/attngate_bench --suite=prod --compare=candidate,cudnn > $R/prod_vs_cudnn.txt 2>&1; step "prod vs cudnn rc=$? $(grep -i 'geomean speedup' $R/prod_vs_cudnn.txt | tail -1)"; }
