#!/usr/bin/env python3
"""GPU regression run for attngate: build, verify, benchmark, and judge against stored results.

  ci/regression.py --record        measure this machine and store ci/baselines/<gpu>.json
  ci/regression.py                 measure again and judge each scenario SAME / FASTER / SLOWER /
                                   AMBIGUOUS against that file (ambiguous ones are re-measured once)

Exits 1 on any correctness failure or a confirmed slowdown beyond --threshold, 2 on a usage or
setup error. Writes regression.md (fit for a pull-request comment) and regression.json to --out.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "python"))
from stats_tool import run_stats  # noqa: E402

RECORD_SCHEMA = "attngate.regression_baseline/2"  # kernels: name -> its attngate.comparison/1 document


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, **kw)


def gpu_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True).stdout.strip().splitlines()
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"regression: no NVIDIA GPU visible ({e}); this script runs on GPU runners")
    name, driver = [x.strip() for x in out[0].split(",")]
    return name, driver


def slug(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def bench(args, kernel, out_json, only=None, time_cap=None):
    cmd = [os.path.join(args.build_dir, "bench", "attngate_bench"), f"--suite={args.suite}",
           f"--compare={kernel},{args.yardstick}", f"--compare_out={out_json}",
           f"--time-cap-s={time_cap or args.time_cap_s}"]
    if only:
        cmd.append("--benchmark_filter=/(" + "|".join(re.escape(s) for s in only) + ")$")
    if run(cmd).returncode != 0:
        sys.exit(f"regression: attngate_bench failed for {kernel}")
    with open(out_json) as f:
        data = json.load(f)
    if data.get("failed"):
        sys.exit(f"regression: benchmarks failed for {kernel}: {data['failed']}")
    return data


def judge(args, reference_doc, run_file, kernel):
    """attngate_stats judge (the one in --build-dir, never another found on the way) of a run against
    the recorded comparison of `kernel`; a scenario it could not judge is a failure, not a skip."""
    ref_file = os.path.join(args.out, f"recorded_{kernel}.json")
    with open(ref_file, "w") as f:
        json.dump(reference_doc, f)
    tool = os.path.join(args.build_dir, "bench", "attngate_stats")
    c = run_stats(["judge", ref_file, run_file, "--threshold", repr(args.threshold)], tool)
    c["failures"] = [f"{kernel}: {p}" for p in c["problems"] if "cannot be judged" in p]
    return c


def absolute_check(c, kernel, args, failures):
    """The absolute times against the recorded ones (attngate_stats judge's geomeans of now / recorded
    event time, per kernel and for the yardstick), with what that means for TFLOPS: a slower
    yardstick is a driver, toolchain, clock or harness change that the speedups hide. Appends a
    failure beyond --absolute-threshold; returns the line for the report."""
    parts = []
    for who, key in ((kernel, "geomean_kernel_ms_ratio"), (args.yardstick, "geomean_base_ms_ratio")):
        r = c.get(key)
        if r is None:
            failures.append(f"{kernel}: no absolute time ratio for {who} (a scenario lacks its time)")
            continue
        parts.append(f"{who} {r:.4f}x the recorded time ({1 / r:.4f}x its TFLOPS)")
        if r > 1 + args.absolute_threshold:
            why = ("the yardstick too: a driver, toolchain, clock or harness change, which slows every kernel alike "
                   "and leaves the speedups SAME" if who == args.yardstick else "this kernel itself")
            failures.append(f"{who} is {r - 1:.1%} slower than recorded in absolute time (geomean over "
                            f"{len(c['rows'])} scenarios of {kernel}'s run; {why})")
    return f"{kernel}'s run: " + "; ".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build", "gpu"))
    ap.add_argument("--suite", help="suite to benchmark (default: the reference's suite; full when recording)")
    ap.add_argument("--kernels", default="candidate", help="comma-separated kernels to track")
    ap.add_argument("--yardstick", default="initial", help="kernel every figure is relative to")
    ap.add_argument("--baseline", help="reference results (default ci/baselines/<gpu>.json)")
    ap.add_argument("--record", action="store_true", help="store this run as the reference")
    ap.add_argument("--threshold", type=float, default=0.02, help="slowdown that fails the run")
    ap.add_argument("--absolute-threshold", type=float, default=0.05,
                    help="absolute slowdown (geomean of now / recorded time) of a kernel or of the yardstick that "
                         "fails the run: a driver, toolchain, clock or harness change slows both alike, which the "
                         "speedups cannot see (default 0.05: runs of one kernel differ by up to a few percent)")
    ap.add_argument("--time-cap-s", type=float, default=1.0)
    ap.add_argument("--verify-label", default="verify", help="ctest label of the correctness run")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "regression"))
    args = ap.parse_args()
    if not 0 < args.threshold < 1:
        ap.error("--threshold must be in (0, 1)")
    if not 0 < args.absolute_threshold < 1:
        ap.error("--absolute-threshold must be in (0, 1)")

    name, driver = gpu_name()
    baseline = args.baseline or os.path.join(ROOT, "ci", "baselines", slug(name) + ".json")
    if args.suite is None:
        args.suite = "full"
        if not args.record and os.path.exists(baseline):
            with open(baseline) as f:
                args.suite = json.load(f).get("suite", "full")
    os.makedirs(args.out, exist_ok=True)

    if not args.skip_build:
        if not os.path.exists(os.path.join(args.build_dir, "CMakeCache.txt")):
            if run(["cmake", "--preset", "gpu"], cwd=ROOT).returncode != 0:
                sys.exit("regression: configure failed")
        if run(["cmake", "--build", args.build_dir, "-j", str(os.cpu_count())]).returncode != 0:
            sys.exit("regression: build failed")

    verify = run(["ctest", "--test-dir", args.build_dir, "-L", args.verify_label, "-j", str(args.jobs),
                  "--output-on-failure", "--no-tests=error",
                  "--output-junit", os.path.join(os.path.abspath(args.out), "verify.xml")])
    correct = verify.returncode == 0

    kernels = [k for k in args.kernels.split(",") if k]
    run_file = {k: os.path.join(args.out, f"bench_{k}.json") for k in kernels}
    current = {k: bench(args, k, run_file[k]) for k in kernels}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    if args.record:
        if not correct:
            sys.exit("regression: not recording: the correctness run failed")
        doc = {"schema": RECORD_SCHEMA, "gpu": name, "driver": driver,
               "recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "commit": commit, "suite": args.suite, "yardstick": args.yardstick, "kernels": current}
        os.makedirs(os.path.dirname(baseline), exist_ok=True)
        with open(baseline, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"regression: recorded {sum(len(v['scenarios']) for v in current.values())} scenarios to {baseline}")
        return 0 if correct else 1

    try:
        with open(baseline) as f:
            ref = json.load(f)
    except OSError as e:
        sys.exit(f"regression: no reference results ({e}); run with --record first")
    if ref.get("schema") != RECORD_SCHEMA:
        sys.exit(f"regression: {baseline} is {ref.get('schema')}, not {RECORD_SCHEMA}: record it again with --record")
    if ref.get("yardstick") != args.yardstick or ref.get("suite") != args.suite:
        sys.exit(f"regression: {baseline} was recorded for suite {ref.get('suite')} / yardstick "
                 f"{ref.get('yardstick')}, not {args.suite} / {args.yardstick}")

    rows, failures, absolute = [], [], []
    for k in kernels:
        if k not in ref["kernels"]:
            sys.exit(f"regression: {baseline} has no results for kernel {k}")
        c = judge(args, ref["kernels"][k], run_file[k], k)
        failures += c["failures"]
        verdicts = {r["id"]: r for r in c["rows"]}
        ambiguous = [sid for sid, r in verdicts.items() if r["verdict"] == "AMBIGUOUS"]
        if ambiguous:
            print(f"regression: re-measuring {len(ambiguous)} ambiguous scenarios of {k}")
            again_file = os.path.join(args.out, f"bench_{k}_remeasured.json")
            bench(args, k, again_file, only=ambiguous, time_cap=2 * args.time_cap_s)
            again = judge(args, ref["kernels"][k], again_file, k)
            failures += [f for f in again["failures"] if any(sid in f for sid in ambiguous)]
            verdicts.update({r["id"]: r for r in again["rows"] if r["id"] in ambiguous})
        for sid in c["only_in_run"]:
            rows.append({"kernel": k, "scenario": sid, "verdict": "NEW", "remeasured": False})
        for sid in sorted(verdicts):
            v = verdicts[sid]
            rows.append({"kernel": k, "scenario": sid, "verdict": v["verdict"], "ratio": v["ratio"], "ci": v["ci95"],
                         "speedup": v["run_speedup"], "recorded_speedup": v["ref_speedup"],
                         "remeasured": sid in ambiguous})
            if v["confirmed_slowdown"]:
                failures.append(f"{k}/{sid}: {v['ratio']:.3f}x of the recorded speedup")
        if c["only_in_reference"]:
            failures.append(f"{k}: recorded scenarios not measured: {', '.join(c['only_in_reference'])}")
        absolute.append(absolute_check(c, k, args, failures))
        # Every recorded scenario has a verdict or is named as not measured: none drops out unseen.
        recorded = {s["id"] for s in ref["kernels"][k].get("scenarios", [])}
        unjudged = sorted(recorded - set(verdicts) - set(c["only_in_reference"]))
        if unjudged:
            failures.append(f"{k}: recorded scenarios without a verdict: {', '.join(unjudged)}")

    counts = {v: sum(1 for r in rows if r["verdict"] == v) for v in
              ("SAME", "FASTER", "SLOWER", "AMBIGUOUS", "NEW")}
    ok = correct and not failures
    md = [f"## attngate regression: {'PASS' if ok else 'FAIL'}", "",
          f"{name} (driver {driver}), commit `{commit[:12]}` against the reference recorded "
          f"{ref.get('recorded')} at `{str(ref.get('commit'))[:12]}`; suite `{args.suite}`, figures are "
          f"speedups over `{args.yardstick}` measured interleaved; threshold {args.threshold:.1%}.", "",
          f"- correctness (`ctest -L {args.verify_label}`): {'passed' if correct else 'FAILED'}",
          "- " + ", ".join(f"{v} {n}" for v, n in counts.items() if n)]
    md += [f"- absolute: {a}" for a in absolute]
    md += [f"- **{f}**" for f in failures]
    changed = [r for r in rows if r["verdict"] not in ("SAME", "NEW")]
    if changed:
        md += ["", "| kernel | scenario | verdict | now / recorded | 95% CI |", "| --- | --- | --- | --- | --- |"]
        md += [f"| {r['kernel']} | {r['scenario']} | {r['verdict']}{' (re-measured)' if r['remeasured'] else ''}"
               f" | {r['ratio']:.4f} | [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}] |" for r in changed]
    text = "\n".join(md) + "\n"
    with open(os.path.join(args.out, "regression.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "regression.json"), "w") as f:
        json.dump({"pass": ok, "correct": correct, "gpu": name, "commit": commit, "counts": counts,
                   "failures": failures, "rows": rows}, f, indent=1)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
