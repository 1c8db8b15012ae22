"""Sums Nsight Compute's source counters (sass_v6.csv.gz, sass_v11.csv.gz, here): the share of warp
samples per stall reason, and the instructions with the most long-scoreboard samples.
    python3 sass_stalls.py
"""
import csv, gzip, pathlib
from collections import Counter

HERE = pathlib.Path(__file__).resolve().parent

def load(v):
    rows = list(csv.reader(gzip.open(HERE / f"sass_{v}.csv.gz", "rt")))
    hdr = rows[1]
    return hdr, [dict(zip(hdr, r)) for r in rows[2:] if len(r) == len(hdr)]

def number(x):
    try:
        return int(x)
    except ValueError:
        return 0

for v in ("v6", "v11"):
    hdr, rows = load(v)
    stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    total = Counter()
    for r in rows:
        for s in stalls:
            total[s] += number(r[s])
    samples = sum(number(r["Warp Stall Sampling (All Samples)"]) for r in rows)
    print(v, "samples", samples, "instructions executed", sum(number(r["Instructions Executed"]) for r in rows))
    print("  ", [(k[6:], round(100 * c / samples, 1)) for k, c in total.most_common(9)])
    for r in sorted(rows, key=lambda r: -number(r["stall_long_sb"]))[:6]:
        print("   long_sb", r["stall_long_sb"], r["Address"][-5:], r["Source"].strip()[:60], "executed",
              r["Instructions Executed"])
