# Not run: no machine was lent when it was sent (the next session's first call).
CALL=5; source .carry/common.sh; source .carry/commit_best.sh
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
setup
# The device's git starts at d325aa1: bring this checkout's commits (772b800, v16) so that the
# commit rule's bar is the latest committed version; the tree stays as copied.
git fetch -q .carry/local.bundle HEAD && git reset -q FETCH_HEAD; git log --oneline -2 > $R/head.txt; git status --short > $R/status.txt
START=$(git rev-parse HEAD); echo $START > $R/start.txt; step "setup $(head -1 $R/head.txt)"
try v21 "v21: v16 with 176-key tiles and two stages for d128 without a mask (v18's +2.6-5.6 % there) and 80-key tiles for d256 (v19's +2.7-5.1 %), without v17's earlier hand-over (-1 to -3.5 % on causal d64). Predicted 1.82-1.83x (v16 1.806x on call 4's machine)."
commit_best 0 v21  # attngate commit applies the bar of the best committed version
git checkout kernels/candidate/candidate.cu 2>/dev/null; build; step "built HEAD $(git log --oneline -1 | cut -c1-60)"
timeout 290 ctest --test-dir build/gpu -L adversarial -j 8 --output-on-failure > $R/adversarial.txt 2>&1; step "adversarial rc=$? $(grep -E 'tests passed|tests failed' $R/adversarial.txt)"
left 515 && { git show 7417e3d:kernels/candidate/candidate.cu > kernels/candidate/candidate.cu; build; ATTNGATE_GEOMEAN_TARGET=0.97 timeout 70 ctest --test-dir build/gpu -L gate --output-on-failure > $R/aa_gate.txt 2>&1; step "aa rc=$? $(grep -iE 'tests passed' $R/aa_gate.txt | tail -1)"; cp build/gpu/gate/report.md $R/report_aa.md 2>/dev/null; git checkout kernels/candidate/candidate.cu; }
step done
