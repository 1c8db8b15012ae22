# Run on call 2's machine, still warm, after `mv bench/results/2026-12-04-h200-session18 /tmp/s18`
# (the untracked results folder had made every gate of call 2 fail with HARNESS_MODIFIED).
CALL=4; source .carry/common.sh
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
START=$(git rev-parse HEAD); echo $START > $R/start.txt
setup; step setup
git status --short > $R/status.txt
cp kernels/candidate/candidate.cu .carry/v16.cu
try v16 "v16 again (HEAD, committed as 772b800 at 1.808x on another H200 this session), beside v18 and v19 on one machine: its A/B control."
try v18 "v18 again (HARNESS_MODIFIED in call 2: the session's untracked results folder travelled with the tree; 1.812x [1.812, 1.816] there)."
left 330 && try v19 "v19 again (HARNESS_MODIFIED in call 2; 1.812x [1.812, 1.816] there)."
best=""; blo=$(field $R/gate_v16.json lo); blo=${blo:-1.8075}
for v in v18 v19; do
  f=$R/gate_$v.json; [ -f $f ] || continue
  [ "$(field $f verdict)" = pass ] || continue
  lo=$(field $f lo); if python3 -c "import sys; sys.exit(0 if $lo > $blo else 1)"; then best=$v; blo=$lo; fi
done
step "best=$best lo=$blo"
if [ -n "$best" ]; then
  cp .carry/$best.cu kernels/candidate/candidate.cu
  N=$(field $R/gate_$best.json version)
  $AG commit --version $N > $R/commit.txt 2>&1; step "commit v$N rc=$? $(tail -1 $R/commit.txt)"
  git bundle create $R/commit.bundle $START..HEAD > /dev/null 2>&1; git log -2 --format='%H %s%n%b' > $R/commit_log.txt
fi
$AG history > $R/history.txt 2>&1; cp .attngate/lineage.jsonl $R/ 2>/dev/null
git checkout kernels/candidate/candidate.cu 2>/dev/null
step done
