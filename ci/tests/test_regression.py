import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

CI = os.path.join(os.path.dirname(__file__), "..")
ROOT = os.path.join(CI, "..")


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


def comparison(rows, width=0.005, ms=1.0):
    return {"schema": "attngate.comparison/1", "kernel": "candidate", "base": "initial", "suite": "gate",
            "device": "NVIDIA H200", "failed": [],
            "scenarios": [{"id": s, "speedup": v, "speedup_ci95": [None, None] if v is None else [v * (1 - width), v * (1 + width)],
                           "kernel_ms": ms, "base_ms": ms} for s, v in rows]}


class Regression(unittest.TestCase):
    """ci/regression.py end to end on the CPU: nvidia-smi, ctest and attngate_bench are stand-ins, the
    verdicts come from the real attngate_stats (ATTNGATE_STATS), copied into the stand-in build."""

    def run_regression(self, recorded, measured, measured_ms=1.0):
        with tempfile.TemporaryDirectory() as d:
            bin_dir, bench_dir = os.path.join(d, "bin"), os.path.join(d, "build", "bench")
            os.makedirs(bin_dir)
            os.makedirs(bench_dir)
            executable(os.path.join(bin_dir, "nvidia-smi"), "#!/bin/sh\necho 'NVIDIA H200, 580.159.04'\n")
            executable(os.path.join(bin_dir, "ctest"), "#!/bin/sh\nexit 0\n")
            run_json = os.path.join(d, "run.json")
            with open(run_json, "w") as f:
                json.dump(comparison(measured, ms=measured_ms), f)
            executable(os.path.join(bench_dir, "attngate_bench"),
                       "#!/bin/sh\nfor a in \"$@\"; do case $a in --compare_out=*) cp " + run_json +
                       " \"${a#--compare_out=}\";; esac; done\n")
            os.symlink(os.path.abspath(os.environ["ATTNGATE_STATS"]), os.path.join(bench_dir, "attngate_stats"))
            baseline = os.path.join(d, "recorded.json")
            with open(baseline, "w") as f:
                json.dump({"schema": "attngate.regression_baseline/2", "gpu": "NVIDIA H200", "suite": "gate",
                           "yardstick": "initial", "kernels": {"candidate": comparison(recorded)}}, f)
            env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
            env.pop("ATTNGATE_STATS")  # the script must use the build's own
            p = subprocess.run([sys.executable, os.path.join(CI, "regression.py"), "--skip-build", "--build-dir",
                                os.path.join(d, "build"), "--baseline", baseline, "--out", os.path.join(d, "out")],
                               capture_output=True, text=True, env=env)
            return p.returncode, p.stdout + p.stderr

    def test_an_unchanged_run_passes(self):
        rc, out = self.run_regression([("a", 1.0), ("b", 0.9)], [("a", 1.001), ("b", 0.9)])
        self.assertEqual(rc, 0, out)
        self.assertIn("attngate regression: PASS", out)

    def test_both_kernels_slower_alike_fail_on_absolute_time(self):
        # Same speedups, every kernel 10% slower: a driver or harness change the ratios cannot see.
        rc, out = self.run_regression([("a", 1.0), ("b", 0.9)], [("a", 1.0), ("b", 0.9)], measured_ms=1.10)
        self.assertEqual(rc, 1, out)
        self.assertIn("initial is 10.0% slower than recorded in absolute time", out)
        self.assertIn("candidate 1.1000x the recorded time (0.9091x its TFLOPS)", out)
        rc, out = self.run_regression([("a", 1.0), ("b", 0.9)], [("a", 1.0), ("b", 0.9)], measured_ms=1.02)
        self.assertEqual(rc, 0, out)  # within --absolute-threshold (5%)

    def test_a_slowdown_fails(self):
        rc, out = self.run_regression([("a", 1.0), ("b", 0.9)], [("a", 1.0), ("b", 0.5)])
        self.assertEqual(rc, 1, out)
        self.assertIn("candidate/b", out)

    def test_a_scenario_that_cannot_be_judged_fails_and_none_drops_out(self):
        rc, out = self.run_regression([("a", 1.0), ("b", 0.9), ("c", 1.0)], [("a", 1.0), ("b", None)])
        self.assertEqual(rc, 1, out)
        self.assertIn("b cannot be judged", out)
        self.assertIn("recorded scenarios not measured: c", out)


if __name__ == "__main__":
    unittest.main()
