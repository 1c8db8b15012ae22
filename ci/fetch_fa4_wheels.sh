#!/usr/bin/env bash
# Downloads FlashAttention-4 (PyPI: flash-attn-4, the CuTe-DSL FlashAttention imported as
# flash_attn.cute) and the packages it needs beyond what the GPU runner has, as wheels for CPython
# 3.12 on manylinux x86_64, into .whl/ (git-ignored), for a GPU runner without network: carry them
# there and run ci/install_fa4_offline.sh. Needs PyPI only. bench/python/README.md explains the
# whole round trip.
#
#   ci/fetch_fa4_wheels.sh [DEST]            (default DEST: <repo>/.whl)
#   FA4_WITH_COMMON=1 ...   also cuda-bindings, cuda-pathfinder, einops, protobuf, typing-extensions
#                           (the H200 image has them; another runner may not)
#   FA4_WITH_CU12=1 ...     also the CUDA 12 DSL libraries (+88 MB; for a driver older than CUDA 13)
#   FA4_SPLIT_MIB=45 ...    size of the pieces in DEST/parts/ (default 45; 0: no pieces)
#   FA4_PYTHON_VERSION=3.11 ...   wheels for another CPython
#
# Versions are pinned (the newest on 2026-11-29) so the runner gets what was tested together:
#   flash-attn-4 4.0.0b36 needs nvidia-cutlass-dsl>=4.6.2 (the [cu13] extra for CUDA 13),
#   apache-tvm-ffi>=0.1.11,<0.2, torch-c-dlpack-ext, quack-kernels>=0.5.3, einops, typing_extensions;
#   nvidia-cutlass-dsl 4.8.1 is a 10 KB meta package over -libs-base, -libs-core and -libs-cu12
#   (always) / -libs-cu13 (extra cu13), which need cuda-bindings>=12.8 and protobuf>=4.21.12;
#   cuda-bindings 13 needs cuda-pathfinder. The CUDA 13 DSL libraries (88 MB) are the bulk; the
#   CUDA 12 ones are not needed on a CUDA 13 driver (the DSL loads the newest flavor installed that
#   the driver supports), and installing with --no-deps, as install_fa4_offline.sh does, lets the
#   meta package go without them. torch is not fetched: the runner's PyTorch is used.
#
# The set is larger than what one call of the GPU runner can carry (64 MiB with the tree), so the
# script also writes DEST/parts/fa4-wheels.tar.partNN, pieces of one tar of every wheel: carry
# some pieces per call, gather them in one folder there, and install_fa4_offline.sh joins them.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/.whl}"
pyver="${FA4_PYTHON_VERSION:-3.12}"
python="${PYTHON:-python3}"

pkgs=(
  flash-attn-4==4.0.0b36
  nvidia-cutlass-dsl==4.8.1
  nvidia-cutlass-dsl-libs-base==4.8.1
  nvidia-cutlass-dsl-libs-core==4.8.1
  nvidia-cutlass-dsl-libs-cu13==4.8.1
  apache-tvm-ffi==0.1.15.post2
  torch-c-dlpack-ext==0.1.5
  quack-kernels==0.6.5
)
if [[ "${FA4_WITH_COMMON:-0}" == 1 ]]; then
  pkgs+=(cuda-bindings==13.0.3 cuda-pathfinder==1.9.1 einops==0.8.2 typing-extensions==4.16.0 protobuf==7.36.2)
fi
if [[ "${FA4_WITH_CU12:-0}" == 1 ]]; then
  pkgs+=(nvidia-cutlass-dsl-libs-cu12==4.8.1)
fi

mkdir -p "$dest"
rm -f "$dest"/*.whl "$dest"/FA4_WHEELS "$dest"/FA4_SHA256SUMS
rm -rf "$dest/parts"
# --no-deps: the list above is the closure (minus torch); pip would otherwise pull torch and its
# CUDA wheels (gigabytes). Several --platform tags, since pip matches them exactly.
"$python" -m pip download --no-deps --only-binary=:all: --pre \
  --python-version "$pyver" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$dest" "${pkgs[@]}"

# The manifest install_fa4_offline.sh installs from and checks.
(cd "$dest" && ls -1 *.whl | sort > FA4_WHEELS && sha256sum $(cat FA4_WHEELS) > FA4_SHA256SUMS)
echo "fetch_fa4_wheels: $(wc -l < "$dest/FA4_WHEELS") wheels, $(cd "$dest" && du -ch $(cat FA4_WHEELS) | tail -1 | cut -f1) in $dest:"
(cd "$dest" && du -h $(cat FA4_WHEELS))

split_mib="${FA4_SPLIT_MIB:-45}"
if ((split_mib > 0)); then
  mkdir -p "$dest/parts"
  (cd "$dest" && tar -cf - FA4_WHEELS FA4_SHA256SUMS $(cat FA4_WHEELS)) |
    split -b "${split_mib}m" -d -a 2 - "$dest/parts/fa4-wheels.tar.part"
  echo "fetch_fa4_wheels: pieces of at most $split_mib MiB for carrying, in $dest/parts:"
  (cd "$dest/parts" && ls -l fa4-wheels.tar.part* | awk '{printf "  %s  %.1f MiB\n", $NF, $5 / 1048576}')
fi
