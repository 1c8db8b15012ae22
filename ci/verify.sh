#!/usr/bin/env bash
# The main job: install what is missing, build, and verify every bundled kernel on every bundled
# suite (50 s of tests on an H200). Verification needs a CUDA GPU (sm_90a); without one this says so and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

ci/install-deps.sh
cmake --preset gpu
cmake --build --preset gpu

if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "attngate: no NVIDIA GPU on this machine: the kernels were built but cannot be verified here." >&2
  echo "attngate: run this on a GPU machine (README.md: 'On a GPU machine without network')." >&2
  exit 1
fi
# Every kernel on every suite, in batches (verify/README.md); the GPUs' mean utilization is printed
# at the end, so a host-bound run shows itself.
util=$(mktemp)
nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 500 >"$util" 2>/dev/null &
sampler=$!
rc=0
ctest --test-dir build/gpu -L verify --output-on-failure -j "${ATTNGATE_CTEST_JOBS:-8}" "$@" || rc=$?
kill "$sampler" 2>/dev/null || true
awk '{s += $1; n++} END {if (n) printf "attngate: GPU utilization during verify: %.0f%% mean over %d samples\n", s / n, n}' "$util"
rm -f "$util"
exit "$rc"
