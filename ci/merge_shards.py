#!/usr/bin/env python3
"""Merges the per-shard results of a suite split across GPUs or runners.

  ci/merge_shards.py --bench shard0.json shard1.json ... --out merged.json
      comparison JSONs of `attngate_bench --compare=K,B --shard=i/N --compare_out=...`; each
      scenario must appear in exactly one shard; the suite geomean and its 95% interval are
      recomputed from the per-scenario speedups and intervals (regression_judge.geomean_with_ci)
  ci/merge_shards.py --verify DIR0 DIR1 ... --expect N --out summary.json
      per-test JSON results (`<build>/verify/results`) of `ctest -L verify` shards; each test must
      appear once and, with --expect, N tests in all
Exits 1 when a shard overlaps another, a scenario or test is missing, or a test failed.
"""
import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import regression_judge as rj  # noqa: E402


def merge_bench(files):
    merged, seen, problems = None, {}, []
    for path in files:
        with open(path) as f:
            d = json.load(f)
        if merged is None:
            merged = {k: v for k, v in d.items() if k not in ("scenarios", "failed", "shard")}
            merged["scenarios"], merged["failed"], merged["shards"] = [], [], []
        elif (d["kernel"], d["base"], d["suite"]) != (merged["kernel"], merged["base"], merged["suite"]):
            problems.append(f"{path}: measures {d['kernel']} vs {d['base']} on {d['suite']}, not "
                            f"{merged['kernel']} vs {merged['base']} on {merged['suite']}")
            continue
        merged["shards"].append({"file": path, "shard": d.get("shard"), "device": d.get("device"),
                                 "wall_s": d.get("wall_s")})
        merged["failed"] += d.get("failed", [])
        for s in d["scenarios"]:
            if s["id"] in seen:
                problems.append(f"scenario {s['id']} in both {seen[s['id']]} and {path}")
                continue
            seen[s["id"]] = path
            merged["scenarios"].append(s)
    if merged is None:
        raise SystemExit("merge_shards: no input")
    expected = {sh.get("shard", {}).get("of") for sh in merged["shards"] if sh.get("shard")}
    if len(expected) == 1 and (n := expected.pop()) and n != len(merged["shards"]):
        problems.append(f"{len(merged['shards'])} shard files for a split into {n}")
    merged["scenarios"].sort(key=lambda s: s["id"])
    rows = [(s["speedup"], *s["speedup_ci95"]) for s in merged["scenarios"]]
    g, lo, hi = rj.geomean_with_ci(rows)
    merged["geomean_speedup"], merged["geomean_ci95"] = g, [lo, hi]
    merged["geomean_method"] = "merged shards: normal approximation in log space from per-scenario intervals"
    merged["wall_s"] = max((sh["wall_s"] or 0) for sh in merged["shards"])
    if merged["failed"]:
        problems.append(f"{len(merged['failed'])} benchmarks failed")
    return merged, problems


def merge_verify(dirs, expect):
    tests, problems = {}, []
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.json"))):
            with open(path) as f:
                r = json.load(f)
            if r["test"] in tests:
                problems.append(f"{r['test']} in two shards")
            tests[r["test"]] = r
    counts = {}
    for r in tests.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    if expect is not None and len(tests) != expect:
        problems.append(f"{len(tests)} test results, expected {expect}")
    bad = sorted(t for t, r in tests.items() if r["status"] != "passed")
    if bad:
        problems.append(f"{len(bad)} tests not passed: {', '.join(bad[:20])}")
    return {"tests": len(tests), "counts": counts, "not_passed": bad}, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", nargs="+")
    ap.add_argument("--verify", nargs="+")
    ap.add_argument("--expect", type=int)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if bool(a.bench) == bool(a.verify):
        ap.error("give exactly one of --bench or --verify")
    merged, problems = merge_bench(a.bench) if a.bench else merge_verify(a.verify, a.expect)
    merged["problems"] = problems
    with open(a.out, "w") as f:
        json.dump(merged, f, indent=1)
    for p in problems:
        print("merge_shards:", p, file=sys.stderr)
    if a.bench:
        print(f"merge_shards: {len(merged['scenarios'])} scenarios from {len(a.bench)} shards, geomean "
              f"{merged['geomean_speedup']:.4f} [{merged['geomean_ci95'][0]:.4f}, {merged['geomean_ci95'][1]:.4f}]")
    else:
        print(f"merge_shards: {merged['tests']} tests, {merged['counts']}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
