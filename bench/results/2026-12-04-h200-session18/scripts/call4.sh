# Run on call 2's machine, still warm, after `mv bench/results/2026-12-04-h200-session18 /tmp/s18`
# (the untracked results folder had made every gate of call 2 fail with HARNESS_MODIFIED).
CALL=4; source .carry/common.sh; source .carry/commit_best.sh
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
START=$(git rev-parse HEAD); echo $START > $R/start.txt
setup; step setup
git status --short > $R/status.txt
cp kernels/candidate/candidate.cu .carry/v16.cu
try v16 "v16 again (HEAD, committed as 772b800 at 1.808x on another H200 this session), beside v18 and v19 on one machine: its A/B control."
try v18 "v18 again (HARNESS_MODIFIED in call 2: the session's untracked results folder travelled with the tree; 1.812x [1.812, 1.816] there)."
left 330 && try v19 "v19 again (HARNESS_MODIFIED in call 2; 1.812x [1.812, 1.816] there)."
bar=$(field $R/gate_v16.json lo); commit_best ${bar:-1.8075} v18 v19
git checkout kernels/candidate/candidate.cu 2>/dev/null
step done
