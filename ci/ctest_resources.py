#!/usr/bin/env python3
"""Writes a CTest resource specification with one `gpus` slot per GPU present.

  ci/ctest_resources.py build/gpu/gpus.json [--slots K] [--gpus N]
  ctest --test-dir build/gpu --resource-spec-file build/gpu/gpus.json -j 16 -L verify

Every GPU test declares RESOURCE_GROUPS "gpus:1"; CTest hands each one GPU's id in
CTEST_RESOURCE_GROUP_0_GPUS and the test binaries pin themselves to it (CUDA_VISIBLE_DEVICES), so
`ctest -j N` spreads verification over all GPUs, at most K tests per GPU at a time (default 1;
correctness tests overlap their host work well with K = 4). --gpus N uses only the first N GPUs.
"""
import argparse
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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--slots", type=int, default=1)
    ap.add_argument("--gpus", type=int)
    a = ap.parse_args(argv[1:])
    if a.slots < 1:
        ap.error("--slots must be >= 1")
    try:
        ids = gpu_ids()
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"ctest_resources: no GPUs found ({e})")
    ids = ids[: a.gpus or None]
    if not ids:
        sys.exit("ctest_resources: no GPUs found")
    with open(a.out, "w") as f:
        json.dump(spec(ids, a.slots), f, indent=1)
    print(f"ctest_resources: {len(ids)} GPU(s), {a.slots} slot(s) each -> {a.out}")


if __name__ == "__main__":
    main(sys.argv)
