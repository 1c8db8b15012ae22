#!/usr/bin/env python3
"""Merges the per-shard results of a suite split across GPUs or runners.

  ci/merge_shards.py --bench shard0.json shard1.json ... --out merged.json
      comparison JSONs of `attngate_bench --compare=K,B --shard=i/N --compare_out=...`, each
      checked against bench/schema/comparison.schema.json; each scenario must appear in exactly one shard; the suite geomean and its 95% interval are
      recomputed from the per-scenario speedups and intervals (regression_judge.geomean_with_ci)
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import regression_judge as rj  # noqa: E402

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
               "integer": int, "number": (int, float)}


def _is_type(value, name):
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _JSON_TYPES[name])


def check_schema(doc, schema, root=None, where="$"):
    """Problems with `doc` against the JSON Schema subset the verify result schema uses (required,
    type, const, enum, minimum, properties, items, oneOf, local $ref); empty when it follows it."""
    root = schema if root is None else root
    if "$ref" in schema:
        return check_schema(doc, root["$defs"][schema["$ref"].rsplit("/", 1)[-1]], root, where)
    errs = []
    if "oneOf" in schema and sum(not check_schema(doc, alt, root, where) for alt in schema["oneOf"]) != 1:
        errs.append(f"{where}: matches none or several of {len(schema['oneOf'])} alternatives")
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(doc, t) for t in types):
            return errs + [f"{where}: {doc!r} is not of type {'/'.join(types)}"]
    if "const" in schema and doc != schema["const"]:
        errs.append(f"{where}: {doc!r}, expected {schema['const']!r}")
    if "minimum" in schema and _is_type(doc, "number") and doc < schema["minimum"]:
        errs.append(f"{where}: {doc!r} is below {schema['minimum']}")
    if "enum" in schema and doc not in schema["enum"]:
        errs.append(f"{where}: {doc!r} is not one of {schema['enum']}")
    if isinstance(doc, dict):
        errs += [f"{where}: '{k}' missing" for k in schema.get("required", []) if k not in doc]
        for k, sub in schema.get("properties", {}).items():
            if k in doc:
                errs += check_schema(doc[k], sub, root, f"{where}.{k}")
    if isinstance(doc, list) and "items" in schema:
        for i, item in enumerate(doc):
            errs += check_schema(item, schema["items"], root, f"{where}[{i}]")
    return errs


def merge_bench(files):
    merged, seen, problems = None, {}, []
    for path in files:
        d = load_comparison(path)
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
