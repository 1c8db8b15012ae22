#!/usr/bin/env bash
# Fetches the headers of cudnn-frontend (NVIDIA's header-only C++ graph API over cuDNN) at a pinned
# version from PyPI, where the nvidia-cudnn-frontend wheel carries them under include/, into
# .carry/cudnn_frontend/include (git-ignored; it travels to offline GPU runners with the tree).
# kernels/cudnn/CMakeLists.txt looks there first. Needs PyPI (not GitHub); run it once per machine
# with network, or copy .carry/ along.
#
#   ci/fetch_cudnn_frontend.sh [DEST]      (default DEST: <repo>/.carry/cudnn_frontend)
#   CUDNN_FRONTEND_VERSION=1.31.0 ci/fetch_cudnn_frontend.sh    (another version)
set -euo pipefail

version="${CUDNN_FRONTEND_VERSION:-1.32.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/.carry/cudnn_frontend}"
python="${PYTHON:-python3}"

if [[ -f "$dest/include/cudnn_frontend_version.h" && -f "$dest/VERSION" && "$(cat "$dest/VERSION")" == "$version" ]]; then
  echo "cudnn-frontend $version already in $dest/include"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Any one wheel of the version will do: the headers are the same in every wheel (only the Python
# extension differs), so pin one platform tag for reproducibility rather than the local Python's.
if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 --implementation cp "nvidia-cudnn-frontend==$version" -d "$tmp/whl"; then
  echo "fetch_cudnn_frontend: no wheel of nvidia-cudnn-frontend==$version; trying the sdist" >&2
  "$python" -m pip download --quiet --no-deps --no-binary=:all: "nvidia-cudnn-frontend==$version" -d "$tmp/whl"
fi

"$python" - "$tmp/whl" "$tmp/out" <<'EOF'
import pathlib, sys, tarfile, zipfile
src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
archive = next(iter(sorted(src.iterdir())))
# The wheel has include/ at its root; an sdist has <name>-<version>/include/.
if archive.suffix == ".whl":
    with zipfile.ZipFile(archive) as z:
        names = [n for n in z.namelist() if n.startswith("include/") and not n.endswith("/")]
        for n in names:
            target = out / n
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(n))
else:
    with tarfile.open(archive) as t:
        members = [m for m in t.getmembers() if m.isfile() and "/include/" in m.name and m.name.count("/") >= 2]
        for m in members:
            rel = m.name.split("/include/", 1)[1]
            target = out / "include" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(t.extractfile(m).read())
        names = members
if not (out / "include" / "cudnn_frontend.h").is_file():
    sys.exit(f"fetch_cudnn_frontend: {archive.name} has no include/cudnn_frontend.h")
print(f"fetch_cudnn_frontend: {len(names)} headers from {archive.name}")
EOF

got="$(sed -n 's/^#define CUDNN_FRONTEND_\(MAJOR\|MINOR\|PATCH\)_VERSION \([0-9]*\).*/\2/p' \
  "$tmp/out/include/cudnn_frontend_version.h" | paste -sd.)"
if [[ "$got" != "$version" ]]; then
  echo "fetch_cudnn_frontend: asked for $version, the headers say $got" >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
mv "$tmp/out/include" "$dest/include"
echo "$version" > "$dest/VERSION"
echo "cudnn-frontend $version headers in $dest/include"
