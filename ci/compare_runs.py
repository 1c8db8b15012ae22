#!/usr/bin/env python3
"""Checks that two comparison runs of the same suite agree within noise, scenario by scenario.

  ci/compare_runs.py REFERENCE.json RUN.json [--threshold 0.02] [--md summary.md]

Both files are `attngate_bench --compare=K,B --compare_out=...` JSONs or their merge by
ci/merge_shards.py, checked against bench/schema/comparison.schema.json (e.g. a single-GPU run and
the same suite sharded over every GPU of a host). `attngate_stats judge` (bench/tools) judges each
scenario's interleaved speedup (SAME / FASTER / SLOWER / AMBIGUOUS, stats.hpp judge_run); this
script prints its verdicts with the absolute median times of both kernels beside them, which move
with the SM clock and are not judged. Exits 1 when a scenario is missing from either side, the runs
measure different kernels or suites, or any scenario is FASTER or SLOWER.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import merge_shards as ms  # noqa: E402
from stats_tool import run_stats  # noqa: E402  (bench/python, on the path through merge_shards)


def compare(reference, run, threshold):
    """attngate_stats judge's attngate.run_comparison/1 of two comparison files."""
    ms.load_comparison(reference)
    ms.load_comparison(run)
    return run_stats(["judge", reference, run, "--threshold", repr(threshold)])


def _f(v, spec=".4f"):
    return "n/a" if v is None else format(v, spec)


def markdown(c):
    ref, run = c["reference"], c["run"]
    out = [f"# {c['kernel']} vs {c['base']} on `{c['suite']}`: run against reference",
           "",
           f"- reference geomean {_f(ref['geomean_speedup'])} [{_f(ref['geomean_ci95'][0])}, "
           f"{_f(ref['geomean_ci95'][1])}], run {_f(run['geomean_speedup'])} [{_f(run['geomean_ci95'][0])}, "
           f"{_f(run['geomean_ci95'][1])}]",
           f"- verdicts (threshold {c['threshold']:.0%}): " + ", ".join(f"{k} {v}" for k, v in sorted(c["counts"].items())),
           f"- geomean of absolute median time, run / reference: {c['kernel']} {_f(c['geomean_kernel_ms_ratio'])}, "
           f"{c['base']} {_f(c['geomean_base_ms_ratio'])} (moves with the clock; not judged)",
           f"- wall time: reference {_f(ref['wall_s'], '.1f')} s, run {_f(run['wall_s'], '.1f')} s",
           "", "| scenario | verdict | speedup ref | speedup run | ratio [95% CI] | kernel ms run/ref |",
           "|---|---|---|---|---|---|"]
    for r in c["rows"]:
        out.append(f"| {r['id']} | {r['verdict']} | {r['ref_speedup']:.4f} | {r['run_speedup']:.4f} | "
                   f"{r['ratio']:.4f} [{r['ci95'][0]:.4f}, {r['ci95'][1]:.4f}] | {_f(r['kernel_ms_ratio'])} |")
    out += [""] + [f"- problem: {p}" for p in c["problems"]]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reference")
    ap.add_argument("run")
    ap.add_argument("--threshold", type=float, default=0.02)
    ap.add_argument("--md")
    a = ap.parse_args()
    c = compare(a.reference, a.run, a.threshold)
    md = markdown(c)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    print(md)
    return 1 if c["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
