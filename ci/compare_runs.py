#!/usr/bin/env python3
"""Checks that two comparison runs of the same suite agree within noise, scenario by scenario.

  ci/compare_runs.py REFERENCE.json RUN.json [--threshold 0.02] [--md summary.md]

Both files are `attngate_bench --compare=K,B --compare_out=...` JSONs or their merge by
ci/merge_shards.py, checked against bench/schema/comparison.schema.json (e.g. a single-GPU run and the same suite sharded over every GPU of a host).
Each scenario's interleaved speedup is judged with regression_judge's rules (SAME / FASTER /
SLOWER / AMBIGUOUS); the absolute median times of both kernels are shown beside it, as they move
with the SM clock and are not judged. Exits 1 when a scenario is missing from either side, the
runs measure different kernels or suites, or any scenario is FASTER or SLOWER.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import merge_shards as ms  # noqa: E402
import regression_judge as rj  # noqa: E402


def compare(ref, run, threshold):
    problems, rows = [], []
    for key in ("kernel", "base", "suite"):
        if ref.get(key) != run.get(key):
            problems.append(f"{key} differs: {ref.get(key)} vs {run.get(key)}")
    a = {s["id"]: s for s in ref["scenarios"]}
    b = {s["id"]: s for s in run["scenarios"]}
    for sid in sorted(set(a) ^ set(b)):
        problems.append(f"{sid} only in {'the reference' if sid in a else 'the run'}")
    for sid in sorted(set(a) & set(b)):
        x, y = a[sid], b[sid]
        verdict, r, lo, hi = rj.judge(y["speedup"], y["speedup_ci95"], x["speedup"], x["speedup_ci95"], threshold)
        rows.append({"id": sid, "verdict": verdict, "ratio": r, "ci95": [lo, hi],
                     "ref_speedup": x["speedup"], "run_speedup": y["speedup"],
                     "kernel_ms_ratio": y["kernel_ms"] / x["kernel_ms"] if x.get("kernel_ms") else None,
                     "base_ms_ratio": y["base_ms"] / x["base_ms"] if x.get("base_ms") else None})
    counts = {}
    for row in rows:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    differ = [row["id"] for row in rows if row["verdict"] in (rj.FASTER, rj.SLOWER)]
    if differ:
        problems.append(f"{len(differ)} scenarios differ beyond noise: {', '.join(differ)}")
    return rows, counts, problems


def markdown(ref, run, rows, counts, problems, threshold):
    geo = lambda key: math.exp(sum(math.log(r[key]) for r in rows) / len(rows)) if rows else float("nan")
    out = [f"# {run.get('kernel')} vs {run.get('base')} on `{run.get('suite')}`: run against reference",
           "",
           f"- reference geomean {ref.get('geomean_speedup', float('nan')):.4f} "
           f"{[round(v, 4) for v in ref.get('geomean_ci95', [])]}, run {run.get('geomean_speedup', float('nan')):.4f} "
           f"{[round(v, 4) for v in run.get('geomean_ci95', [])]}",
           f"- verdicts (threshold {threshold:.0%}): " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
           f"- geomean of absolute median time, run / reference: {run.get('kernel')} {geo('kernel_ms_ratio'):.4f}, "
           f"{run.get('base')} {geo('base_ms_ratio'):.4f} (moves with the clock; not judged)",
           f"- wall time: reference {ref.get('wall_s', float('nan')):.1f} s, run {run.get('wall_s', float('nan')):.1f} s",
           "", "| scenario | verdict | speedup ref | speedup run | ratio [95% CI] | kernel ms run/ref |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['id']} | {r['verdict']} | {r['ref_speedup']:.4f} | {r['run_speedup']:.4f} | "
                   f"{r['ratio']:.4f} [{r['ci95'][0]:.4f}, {r['ci95'][1]:.4f}] | {r['kernel_ms_ratio']:.4f} |")
    out += [""] + [f"- problem: {p}" for p in problems]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reference")
    ap.add_argument("run")
    ap.add_argument("--threshold", type=float, default=0.02)
    ap.add_argument("--md")
    a = ap.parse_args()
    ref, run = ms.load_comparison(a.reference), ms.load_comparison(a.run)
    rows, counts, problems = compare(ref, run, a.threshold)
    md = markdown(ref, run, rows, counts, problems, a.threshold)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    print(md)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
