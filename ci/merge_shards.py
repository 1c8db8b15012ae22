#!/usr/bin/env python3
"""Merges the per-shard results of a suite split across GPUs or runners.

  ci/merge_shards.py --bench shard0.json shard1.json ... --out merged.json
      comparison JSONs of `attngate_bench --compare=K,B --shard=i/N --compare_out=...`, each
      checked against bench/schema/comparison.schema.json, then merged by `attngate_stats merge`
      (bench/tools): each scenario must appear in exactly one shard; the suite geomean and its 95%
      interval come from the per-scenario speedups and intervals
  ci/merge_shards.py --verify DIR0 DIR1 ... --expect N --out summary.json
      per-test JSON results (`<build>/verify/results`) of `ctest -L verify` shards; each test must
      appear once and, with --expect, N tests in all; each result is checked against the required
      keys and types of verify/schema/verify_result.schema.json (attngate.verify_result/1)
Exits 1 when a shard overlaps another, a scenario or test is missing, a verify result does not follow
its schema, or a test failed.
"""
import argparse
import glob
import json
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_ROOT, "bench", "python"))
from schema_check import check_schema  # noqa: E402
from stats_tool import run_stats  # noqa: E402

VERIFY_RESULT_SCHEMA = os.path.join(_ROOT, "verify", "schema", "verify_result.schema.json")
COMPARISON_SCHEMA = os.path.join(_ROOT, "bench", "schema", "comparison.schema.json")


def load_comparison(path):
    """A comparison JSON (attngate_bench --compare_out), checked against bench/schema/comparison.schema.json."""
    with open(COMPARISON_SCHEMA) as f:
        schema = json.load(f)
    with open(path) as f:
        doc = json.load(f)
    errs = check_schema(doc, schema)
    if errs:
        raise SystemExit(f"{path}: not an attngate.comparison/1 document: " + "; ".join(errs[:3]))
    return doc


def merge_bench(files):
    """The merged comparison (attngate_stats merge) and its problems; every shard is checked against
    the schema first."""
    for path in files:
        load_comparison(path)
    merged = run_stats(["merge", *files])
    return merged, merged.get("problems", [])


def merge_verify(dirs, expect):
    tests, problems = {}, []
    with open(VERIFY_RESULT_SCHEMA) as f:
        schema = json.load(f)
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.json"))):
            with open(path) as f:
                r = json.load(f)
            errs = check_schema(r, schema)
            if errs:
                problems.append(f"{path}: not a {schema['properties']['schema']['const']}: {'; '.join(errs[:5])}")
                if not isinstance(r, dict) or not isinstance(r.get("test"), str) or not isinstance(r.get("status"), str):
                    continue
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
    if not a.bench:
        merged["problems"] = problems
    with open(a.out, "w") as f:
        json.dump(merged, f, indent=1)
    for p in problems:
        print("merge_shards:", p, file=sys.stderr)
    if a.bench:
        g, ci = merged["geomean_speedup"], merged["geomean_ci95"]
        print(f"merge_shards: {len(merged['scenarios'])} scenarios from {len(a.bench)} shards, geomean "
              + (f"{g:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]" if g is not None else "none (no scenario)"))
    else:
        print(f"merge_shards: {merged['tests']} tests, {merged['counts']}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
