#!/usr/bin/env bash
# Installs the FlashAttention-3 wheel that ci/fetch_fa3_wheel.sh put in .whl/fa3 on a GPU runner
# without network, next to the runner's own PyTorch: checks the pinned sha256, then pip install
# --no-index --no-deps into a target folder (default .carry/fa3; nothing outside it is touched),
# prints the PYTHONPATH that makes it importable and tries `import fa3_fwd_interface`.
#
#   ci/install_fa3_offline.sh [TARGET]                 (default TARGET: <repo>/.carry/fa3)
#   WHEELS=/path/to/dir ci/install_fa3_offline.sh      (the folder holding the wheel; default .whl/fa3)
#   eval "$(ci/install_fa3_offline.sh --print-env [TARGET])"     (only the export line)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
wheels="${WHEELS:-$root/.whl/fa3}"
python="${PYTHON:-python3}"
wheel=fa3_fwd-0.0.3-cp39-abi3-manylinux_2_24_x86_64.whl
sha256=44d26c6cfc69dde5a0f9c6bebbccbb96ed20e97bc8b9ddda638b0bf62e91b93d  # as in ci/fetch_fa3_wheel.sh
print_env=0
if [[ "${1:-}" == "--print-env" ]]; then
  print_env=1
  shift
fi
target="${1:-$root/.carry/fa3}"
if ((print_env)); then
  echo "export PYTHONPATH=$target\${PYTHONPATH:+:\$PYTHONPATH}"
  exit 0
fi

if [[ ! -f "$wheels/$wheel" ]]; then
  echo "install_fa3_offline: no $wheels/$wheel: run ci/fetch_fa3_wheel.sh on a machine with PyPI and carry .whl/fa3 here" >&2
  exit 1
fi
(cd "$wheels" && echo "$sha256  $wheel" | sha256sum --quiet -c -) || {
  echo "install_fa3_offline: $wheels/$wheel does not have the pinned sha256 $sha256 (incomplete copy?)" >&2
  exit 1
}
echo "install_fa3_offline: $wheel sha256 $sha256 OK"
# The wheel needs PyTorch with the stable C ABI it was built against (2.10 or newer) and CUDA 13's runtime.
if ! "$python" -c 'import torch, sys; print("install_fa3_offline: torch", torch.__version__, "CUDA", torch.version.cuda)'; then
  echo "install_fa3_offline: warning: $python cannot import torch; FlashAttention-3 needs the runner's PyTorch" >&2
fi

mkdir -p "$target"
"$python" -m pip install --no-index --no-deps --upgrade --target "$target" "$wheels/$wheel"
echo
echo "install_fa3_offline: installed fa3-fwd 0.0.3 into $target"
echo "  export PYTHONPATH=$target\${PYTHONPATH:+:\$PYTHONPATH}"
echo "  (or: eval \"\$(ci/install_fa3_offline.sh --print-env${1:+ $target})\")"
if PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}" "$python" -c \
  "import fa3_fwd_interface as f; print('install_fa3_offline: import fa3_fwd_interface OK:', f.__file__)"; then
  :
else
  echo "install_fa3_offline: import fa3_fwd_interface failed (above); attngate_baselines.py will report the same error for fa3" >&2
fi
