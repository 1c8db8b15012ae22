CALL=1; source .carry/common.sh
START=$(git rev-parse HEAD); echo $START > $R/start.txt
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
setup; step setup
build || exit 1; step "built HEAD (v6)"
try v9 "v9: v8 (persistent, dynamic tile claims from a self-resetting counter) with head-major order for non-causal tiles and a scheduler thread that claims one tile ahead (next_slot/next_full/next_empty mbarriers), so the claim leaves the producer's path. Predicted: v6's speed or better non-causal, v8's causal gains kept; geomean 1.74-1.78x."
tried="v9"
if [ "$(field $R/gate_v9.json verdict 2>/dev/null)" != pass ]; then
  left 300 && { try v8c "v8c: v8 with head-major order for non-causal tiles only (no look-ahead scheduler). Fallback for v9. Predicted 1.70-1.73x."; tried="$tried v8c"; }
fi
left 390 && { try v10 "v10: v9 with one empty-barrier arrival per consumer warpgroup (elected thread) instead of one per thread. Predicted +1-4 % at long sequences over v9."; tried="$tried v10"; }
left 470 && { try v11 "v11: v10 with the O rescale placed between the S GEMM issue and the PV GEMM issue (FA3's order), pinned by a register fence. Predicted +1-3 % on d64/d128 over v10."; tried="$tried v11"; }
best=""; blo=1.726
for v in $tried; do
  f=$R/gate_$v.json; [ -f $f ] || continue
  [ "$(field $f verdict)" = pass ] || continue
  lo=$(field $f lo); if python3 -c "import sys; sys.exit(0 if $lo > $blo else 1)"; then best=$v; blo=$lo; fi
done
step "best=$best lo=$blo"
if [ -n "$best" ]; then
  cp .carry/$best.cu kernels/candidate/candidate.cu
  N=$(field $R/gate_$best.json version)
  $AG commit --version $N > $R/commit.txt 2>&1; step "commit v$N rc=$? $(tail -1 $R/commit.txt)"
  git bundle create $R/commit.bundle $START..HEAD > /dev/null 2>&1
  cp kernels/candidate/candidate.cu $R/committed.cu
fi
$AG history > $R/history.txt 2>&1; cp .attngate/lineage.jsonl $R/ 2>/dev/null
step done
