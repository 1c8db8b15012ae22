#!/usr/bin/env python3
"""Runs one attngate_bench process per GPU of this host, each on its shard of a suite, and merges
their comparison JSONs into one report.

  ci/bench_all_gpus.py --suite full --compare candidate,initial --out build/gpu/bench_full
  (extra arguments after -- go to every attngate_bench process)
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ctest_resources  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(os.path.dirname(HERE), "build", "gpu"))
    ap.add_argument("--suite", default="full")
    ap.add_argument("--compare", default="candidate,initial")
    ap.add_argument("--gpus", type=int, help="how many GPUs to use (default: all)")
    ap.add_argument("--out", required=True)
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    ids = ctest_resources.gpu_ids()[: a.gpus or None]
    os.makedirs(a.out, exist_ok=True)
    exe = os.path.join(a.build_dir, "bench", "attngate_bench")
    extra = a.rest[1:] if a.rest[:1] == ["--"] else a.rest
    procs, outs = [], []
    for i, gpu in enumerate(ids):
        out = os.path.join(a.out, f"shard{i}.json")
        outs.append(out)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu)
        cmd = [exe, f"--suite={a.suite}", f"--compare={a.compare}", f"--shard={i}/{len(ids)}",
               f"--compare_out={out}"] + extra
        log = open(os.path.join(a.out, f"shard{i}.log"), "w")
        print("+", f"CUDA_VISIBLE_DEVICES={gpu}", " ".join(cmd), flush=True)
        procs.append((subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    failed = 0
    for p, log in procs:
        failed += p.wait() != 0
        log.close()
    if failed:
        sys.exit(f"bench_all_gpus: {failed} shard(s) failed; see {a.out}/shard*.log")
    return subprocess.call([sys.executable, os.path.join(HERE, "merge_shards.py"), "--bench", *outs,
                            "--out", os.path.join(a.out, "merged.json")])


if __name__ == "__main__":
    sys.exit(main())
