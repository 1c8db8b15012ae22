#!/usr/bin/env python3
"""Writes a CTest resource specification with one `gpus` slot per GPU present.

  ci/ctest_resources.py build/gpu/gpus.json
  ctest --test-dir build/gpu --resource-spec-file build/gpu/gpus.json -j 16 -L verify

Every GPU test declares RESOURCE_GROUPS "gpus:1"; CTest hands each one GPU's id in
CTEST_RESOURCE_GROUP_0_GPUS and the test binaries pin themselves to it (CUDA_VISIBLE_DEVICES), so
`ctest -j N` spreads verification over all GPUs with one test per GPU at a time.
"""
import json
import subprocess
import sys


def gpu_ids():
    out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                         text=True, check=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def spec(ids, slots=1):
    return {"version": {"major": 1, "minor": 0}, "local": [{"gpus": [{"id": i, "slots": slots} for i in ids]}]}


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    try:
        ids = gpu_ids()
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"ctest_resources: no GPUs found ({e})")
    if not ids:
        sys.exit("ctest_resources: no GPUs found")
    with open(argv[1], "w") as f:
        json.dump(spec(ids), f, indent=1)
    print(f"ctest_resources: {len(ids)} GPU(s) -> {argv[1]}")


if __name__ == "__main__":
    main(sys.argv)
