#!/usr/bin/env bash
# The main job: install what is missing, build, and verify every bundled kernel on every bundled
# suite. Verification needs a CUDA GPU (sm_90a); without one this says so and exits non-zero.
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
ctest --test-dir build/gpu -L verify --output-on-failure -j "${ATTNGATE_CTEST_JOBS:-4}" "$@"
