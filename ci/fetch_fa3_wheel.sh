#!/usr/bin/env bash
# Downloads FlashAttention-3's forward-only wheel, PyPI fa3-fwd 0.0.3 (module fa3_fwd_interface:
# flash_attn_func; sm80 and sm90a kernels, bf16 and fp8, no fp16, head dims up to 256; built against
# CUDA 13 (libcudart.so.13) and PyTorch's stable C ABI; one cp39-abi3 wheel for every CPython >= 3.9),
# into .whl/fa3/ (git-ignored), and checks it against the sha256 pinned below, for a GPU runner without
# network: carry .whl/fa3 there and run ci/install_fa3_offline.sh. Needs PyPI only; the wheel's
# declared dependencies (torch, einops, packaging, ninja) are not fetched: it runs on the runner's
# PyTorch. bench/python/README.md has the round trip.
#
#   ci/fetch_fa3_wheel.sh [DEST]        (default DEST: <repo>/.whl/fa3; 27.6 MB, one carry)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/.whl/fa3}"
python="${PYTHON:-python3}"
wheel=fa3_fwd-0.0.3-cp39-abi3-manylinux_2_24_x86_64.whl
sha256=44d26c6cfc69dde5a0f9c6bebbccbb96ed20e97bc8b9ddda638b0bf62e91b93d  # PyPI, 2026-12-01

mkdir -p "$dest"
"$python" -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_24_x86_64 -d "$dest" fa3-fwd==0.0.3
echo "$sha256  $wheel" > "$dest/FA3_SHA256SUMS"
(cd "$dest" && sha256sum -c FA3_SHA256SUMS) || {
  echo "fetch_fa3_wheel: $dest/$wheel does not have the pinned sha256" >&2
  exit 1
}
echo "fetch_fa3_wheel: $(du -h "$dest/$wheel" | cut -f1) in $dest; carry that folder (e.g. carry [\".whl/fa3\"])"
