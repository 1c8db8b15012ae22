#!/usr/bin/env bash
# The main job: check for an sm_90 GPU, install what is missing, build, and verify every bundled
# kernel on every bundled suite (50 s of tests on an H200). It exits non-zero, saying why, before
# building when no GPU reports compute capability 9.0, and after the tests when any failed or none
# ran (all skipped: no usable CUDA device). A library control's (verify.cudnn.*) nondeterminism alone
# is reported, not failed, unless scenarios/gate.yaml sets `library_nondeterminism: "fail"`.
set -euo pipefail
cd "$(dirname "$0")/.."

# The device first: building for an hour to find that every GPU test skips tells nobody anything.
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "attngate: no nvidia-smi on this machine (no NVIDIA driver): verification needs an sm_90 GPU; nothing was built." >&2
  echo "attngate: run this on a GPU machine (README.md: 'On a GPU machine without network')." >&2
  exit 1
fi
smi_err=$(mktemp)
smi_rc=0
caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>"$smi_err") || smi_rc=$?
smi_text=$(printf '%s %s' "$caps" "$(cat "$smi_err")" | tr '\n' ' ' | sed 's/  */ /g; s/^ //; s/ $//')
rm -f "$smi_err"
caps=$(printf '%s\n' "$caps" | tr -d ' \r' | grep -v '^$' || true)
if [[ $smi_text == *"No devices were found"* ]] || { ((smi_rc == 0)) && [[ -z $caps ]]; }; then
  echo "attngate: no GPU: nvidia-smi lists none; verification needs an sm_90 GPU; nothing was built." >&2
  exit 1
fi
if ((smi_rc != 0)); then
  echo "attngate: nvidia-smi cannot report the GPUs' compute capability (exit ${smi_rc}): ${smi_text}" >&2
  echo "attngate: verification needs an sm_90 GPU; nothing was built." >&2
  exit 1
fi
if ! grep -qx '9\.0' <<<"$caps"; then
  found=$(sort -u <<<"$caps" | paste -sd, - | sed 's/,/, /g')
  echo "attngate: compute capability ${found} found, sm_90 needed (the kernels are built for sm_90a only); nothing was built." >&2
  exit 1
fi

ci/install-deps.sh
cmake --preset gpu
cmake --build --preset gpu

# Every kernel on every suite, in batches (verify/README.md); the GPUs' mean utilization is printed
# at the end, so a host-bound run shows itself. The verdict comes from CTest's JUnit file and the
# verify result documents (ci/verify_summary.py), not from CTest's exit code, which is 0 when
# every test was skipped.
junit=$PWD/build/gpu/verify-junit.xml
rm -f "$junit"
util=$(mktemp)
nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 500 >"$util" 2>/dev/null &
sampler=$!
started=$(date +%s)
ctest_rc=0
ctest --test-dir build/gpu -L verify --output-on-failure --output-junit "$junit" -j "${ATTNGATE_CTEST_JOBS:-8}" "$@" ||
  ctest_rc=$?
kill "$sampler" 2>/dev/null || true
awk '{s += $1; n++} END {if (n) printf "attngate: GPU utilization during verify: %.0f%% mean over %d samples\n", s / n, n}' "$util"
rm -f "$util"
if [[ ! -s $junit ]]; then
  echo "attngate: ctest wrote no JUnit file (exit ${ctest_rc}): nothing was verified." >&2
  exit 1
fi
python3 ci/verify_summary.py --junit "$junit" --results-dir build/gpu/verify/results --gate-yaml scenarios/gate.yaml \
  --since "$((started - 1))"
