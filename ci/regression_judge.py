"""Noise-aware judgement of a benchmark run against stored reference results.

Kept apart from the driver (regression.py) so the rules are unit-tested without a GPU.

A scenario's figure is the speedup of a kernel over a yardstick kernel measured interleaved in the
same run (attngate_bench --compare=KERNEL,YARDSTICK), with its 95% interval. Ratios, not absolute
times, are compared across runs: absolute times of one kernel moved by up to 8% between runs on
the H200 as its SM clock moved under the power cap, while interleaved ratios cancel that drift.
"""
import math

SAME, FASTER, SLOWER, AMBIGUOUS = "SAME", "FASTER", "SLOWER", "AMBIGUOUS"
Z95 = 1.959963984540054


def log_halfwidth(lo, hi):
    """Half-width of a 95% interval in log space (a ratio's interval is symmetric there)."""
    if not (lo > 0 and hi >= lo):
        raise ValueError(f"bad interval [{lo}, {hi}]")
    return (math.log(hi) - math.log(lo)) / 2.0


def judge(current, cur_ci, recorded, rec_ci, threshold):
    """Compare one scenario's speedup now with the recorded one.

    r = current / recorded; its 95% interval combines both intervals in quadrature in log space.
      FASTER     the whole interval of r is above 1
      SLOWER     the whole interval of r is below 1
      SAME       the interval contains 1 and lies within [1 - threshold, 1 + threshold]
      AMBIGUOUS  the interval contains 1 but is wider than the threshold: too noisy to tell
    Returns (verdict, r, lo, hi).
    """
    if current <= 0 or recorded <= 0:
        raise ValueError("speedups must be positive")
    r = current / recorded
    h = math.hypot(log_halfwidth(*cur_ci), log_halfwidth(*rec_ci))
    lo, hi = r * math.exp(-h), r * math.exp(h)
    if lo > 1.0:
        verdict = FASTER
    elif hi < 1.0:
        verdict = SLOWER
    elif lo >= 1.0 - threshold and hi <= 1.0 + threshold:
        verdict = SAME
    else:
        verdict = AMBIGUOUS
    return verdict, r, lo, hi


def confirmed_slowdown(verdict, ratio, threshold):
    """A failure of the run: significantly slower, and by more than the threshold."""
    return verdict == SLOWER and ratio < 1.0 - threshold


def geomean_with_ci(rows):
    """Geometric mean of per-scenario speedups with a 95% interval from their own intervals.

    Used to merge shards, whose raw samples are gone: log(geomean) is a mean of logs, so its
    standard error is sqrt(sum(se_i^2)) / n with se_i from each scenario's interval.
    """
    if not rows:
        raise ValueError("no rows")
    n = len(rows)
    mean = sum(math.log(s) for s, _, _ in rows) / n
    se = math.sqrt(sum((log_halfwidth(lo, hi) / Z95) ** 2 for _, lo, hi in rows)) / n
    return math.exp(mean), math.exp(mean - Z95 * se), math.exp(mean + Z95 * se)
