# Sourced by the device scripts. R: results (packed into $OUT on exit).
set -u
R=$OUT/r; mkdir -p $R
T0=$(date +%s)
step() { echo "$(( $(date +%s) - T0 ))s $*" | tee -a $R/steps.txt; }
pack() { step "pack"; tar -C $OUT -czf $OUT/results${CALL:-}.tgz r; rm -rf $R; }
trap pack EXIT
export GIT_AUTHOR_NAME=attngate-campaign GIT_AUTHOR_EMAIL=campaign@attngate.invalid
export GIT_COMMITTER_NAME=attngate-campaign GIT_COMMITTER_EMAIL=campaign@attngate.invalid
setup() {
  pip install -q --no-index --target /tmp/site .whl/*.whl > $R/pip.txt 2>&1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  mkdir -p ~/.local/state/attngate
  if [ -f .carry/state/key ]; then cp .carry/state/key ~/.local/state/attngate/key; chmod 600 ~/.local/state/attngate/key; fi
  rm -rf .carry/state
  nvidia-smi > $R/gpu.txt 2>&1
}
build() {
  [ -f build/gpu/build.ninja ] || cmake --preset gpu -G Ninja -DCMAKE_PREFIX_PATH=$PWD/.carry/root/usr > $R/configure.txt 2>&1 || { step "configure FAILED"; tail -30 $R/configure.txt; return 1; }
  cmake --build --preset gpu > $R/build_last.txt 2>&1 || { step "build FAILED"; tail -40 $R/build_last.txt; return 1; }
}
AG=build/gpu/agent_hooks/attngate
# gate NAME NOTE: one `attngate gate --json` run; report kept as report_NAME.*
gate() {
  timeout 200 $AG gate --json --note "$2" > $R/gate_$1.json 2> $R/gate_$1.err; local rc=$?
  cp build/gpu/gate/report.json $R/report_$1.json 2>/dev/null; cp build/gpu/gate/report.md $R/report_$1.md 2>/dev/null
  step "gate $1 rc=$rc $(geo $R/gate_$1.json)"
}
geo() { python3 -c '
import json,sys
try: j=json.load(open(sys.argv[1]))
except Exception as e: print("unreadable", e); sys.exit()
g=j.get("geomean") or {}
print(j.get("verdict"), "v%s" % j.get("version"), g.get("speedup"), g.get("ci_low"), g.get("ci_high"), [r.get("code") for r in j.get("reasons",[])], [s.get("kind") for s in j.get("signals",[])])' "$1"; }
field() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j.get(sys.argv[2]) if sys.argv[2]!="lo" else j["geomean"]["ci_low"])' "$1" "$2" 2>/dev/null; }
precheck() {
  timeout 45 build/gpu/verify/attngate_verify --gtest_filter='candidate.smoke_*:candidate.gate_mha_d64_s512*:candidate.gate_mha_d128_s1024_causal*' > $R/precheck_$1.txt 2>&1; local rc=$?
  step "precheck $1 rc=$rc $(grep -E 'PASSED|FAILED' $R/precheck_$1.txt | tail -2 | tr '\n' ' ')"; return $rc
}
# try NAME NOTE: put .carry/NAME.cu in the candidate folder, build, precheck, gate
try() {
  cp .carry/$1.cu kernels/candidate/candidate.cu
  build || return 1; step "built $1"
  precheck $1 || return 1
  gate "$1" "$2"
}
