# Sourced after session 16's scripts/common.sh (unchanged, carried as .carry/common.sh) by this
# session's call scripts, as .carry/commit_best.sh: the block each call ran to commit its best
# version. In the calls as they ran it was written out inline; it is factored here with the same
# commands (call 1 printed no "best=" step and logged three commits, not two).
#
# commit_best BAR V...: of the versions V whose gate passed, the one whose CI lower bound is the
# highest above BAR goes into the candidate folder and through `attngate commit` (which applies its
# own bar, the best committed version in git); the commits made are bundled into the results. Then
# the lineage as `attngate history` prints it.
commit_best() {
  local blo=$1 best="" v f lo N
  shift
  for v in "$@"; do
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
}
