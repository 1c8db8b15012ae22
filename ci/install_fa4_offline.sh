#!/usr/bin/env bash
# Installs the FlashAttention-4 wheels that ci/fetch_fa4_wheels.sh put in .whl/ on a GPU runner
# without network, next to the runner's own PyTorch: pip install --no-index --no-deps into a
# target folder (default .carry/fa4; nothing outside it is touched), then prints the PYTHONPATH
# that makes it importable and tries `import flash_attn.cute`. bench/python/README.md has the
# whole round trip.
#
#   ci/install_fa4_offline.sh [TARGET]        (default TARGET: <repo>/.carry/fa4)
#   WHEELS=/path/to/wheels ci/install_fa4_offline.sh
#     WHEELS holds the wheels with FA4_WHEELS and FA4_SHA256SUMS, or the pieces
#     fa4-wheels.tar.partNN the fetch script wrote to .whl/parts (all of them), which are joined
#     and unpacked there first
#   eval "$(ci/install_fa4_offline.sh --print-env)"     (after installing: only the export line)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
wheels="${WHEELS:-$root/.whl}"
python="${PYTHON:-python3}"
print_env=0
if [[ "${1:-}" == "--print-env" ]]; then
  print_env=1
  shift
fi
target="${1:-$root/.carry/fa4}"
# nvidia-cutlass-dsl puts its packages on sys.path through a .pth file, which Python reads only
# in site directories, not in PYTHONPATH entries: its dsl_packages folder goes on PYTHONPATH too.
pythonpath="$target:$target/nvidia_cutlass_dsl/dsl_packages"
if ((print_env)); then
  echo "export PYTHONPATH=$pythonpath\${PYTHONPATH:+:\$PYTHONPATH}"
  exit 0
fi

if [[ ! -f "$wheels/FA4_WHEELS" ]] && compgen -G "$wheels/fa4-wheels.tar.part*" >/dev/null; then
  echo "install_fa4_offline: joining $(ls "$wheels"/fa4-wheels.tar.part* | wc -l) pieces in $wheels"
  cat "$wheels"/fa4-wheels.tar.part* | tar -x -C "$wheels" || {
    echo "install_fa4_offline: the pieces in $wheels do not make a whole tar (one missing?)" >&2
    exit 1
  }
fi
if [[ ! -f "$wheels/FA4_WHEELS" ]]; then
  echo "install_fa4_offline: no $wheels/FA4_WHEELS: run ci/fetch_fa4_wheels.sh on a machine with PyPI and carry .whl/ here" >&2
  exit 1
fi
(cd "$wheels" && sha256sum --quiet -c FA4_SHA256SUMS) || {
  echo "install_fa4_offline: the wheels in $wheels do not match FA4_SHA256SUMS (incomplete copy?)" >&2
  exit 1
}
pyver="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
if grep -q "cp3[0-9]*-" "$wheels/FA4_WHEELS" && ! grep -q "cp${pyver/./}-" "$wheels/FA4_WHEELS"; then
  echo "install_fa4_offline: the wheels are for another CPython than $python ($pyver); fetch with FA4_PYTHON_VERSION=$pyver" >&2
  exit 1
fi
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "install_fa4_offline: warning: $python cannot import torch; FlashAttention-4 needs the runner's PyTorch" >&2
fi

mkdir -p "$target"
mapfile -t files < <(sed "s|^|$wheels/|" "$wheels/FA4_WHEELS")
# --no-deps: the wheel set is the closure minus torch, which pip must not try to fetch; --target
# keeps the install out of the system's site-packages; --upgrade replaces an earlier install.
"$python" -m pip install --no-index --no-deps --upgrade --target "$target" "${files[@]}"

echo
echo "install_fa4_offline: installed ${#files[@]} wheels into $target"
echo "  export PYTHONPATH=$pythonpath\${PYTHONPATH:+:\$PYTHONPATH}"
echo "  (or: eval \"\$(ci/install_fa4_offline.sh --print-env${1:+ $target})\")"
if PYTHONPATH="$pythonpath${PYTHONPATH:+:$PYTHONPATH}" "$python" -c \
  "import flash_attn.cute as f; print('install_fa4_offline: import flash_attn.cute OK:', f.__file__)"; then
  :
else
  echo "install_fa4_offline: import flash_attn.cute failed (above); attngate_baselines.py will report the same error for fa4" >&2
fi
