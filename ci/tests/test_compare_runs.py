import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import compare_runs as cr  # noqa: E402


def timing(name, ms):
    return {"name": name, "event_ms": ms, "kernel_ms": ms * 0.99, "wall_ms": ms + 0.6}


def run_file(d, name, rows, kernel="candidate", width=0.005):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        json.dump({"schema": "attngate.comparison/1", "kernel": kernel, "base": "initial", "suite": "gate",
                   "device": "gpu", "device_sm": 90, "geomean_speedup": 1.0, "geomean_ci95": [0.99, 1.01],
                   "wall_s": 10.0, "failed": [],
                   "scenarios": [{"id": s, "flops": 1e12, "speedup": v, "speedup_ci95": [v * (1 - width), v * (1 + width)],
                                  "kernel_ms": 1.0 / v, "base_ms": 1.0, "kernel_timing": timing(kernel, 1.0 / v),
                                  "base_timing": timing("initial", 1.0)} for s, v in rows]}, f)
    return path


class CompareRuns(unittest.TestCase):
    """compare_runs.py through attngate_stats judge (the rules themselves: bench/tests/test_comparison_merge.cpp)."""

    def compare(self, ref_rows, run_rows, **run_kw):
        with tempfile.TemporaryDirectory() as d:
            return cr.compare(run_file(d, "ref.json", ref_rows), run_file(d, "run.json", run_rows, **run_kw), 0.02)

    def test_identical_runs_are_same(self):
        c = self.compare([("a", 1.0), ("b", 0.9)], [("a", 1.001), ("b", 0.899)])
        self.assertEqual(c["counts"], {"SAME": 2})
        self.assertEqual(c["problems"], [])

    def test_a_shifted_scenario_is_a_problem(self):
        c = self.compare([("a", 1.0), ("b", 1.0)], [("a", 1.0), ("b", 0.95)])
        self.assertEqual(c["counts"], {"SAME": 1, "SLOWER": 1})
        self.assertTrue(any("b" in p for p in c["problems"]))

    def test_missing_scenario_and_other_kernel_are_problems(self):
        c = self.compare([("a", 1.0), ("b", 1.0)], [("a", 1.0)], kernel="x")
        self.assertTrue(any("only in the reference" in p for p in c["problems"]))
        self.assertTrue(any("kernel differs" in p for p in c["problems"]))

    def test_markdown_lists_every_scenario(self):
        md = cr.markdown(self.compare([("a", 1.0), ("b", 0.9)], [("a", 1.0), ("b", 0.9)]))
        self.assertIn("| a | SAME", md)
        self.assertIn("| b | SAME", md)

    def test_a_file_that_is_not_a_comparison_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            ref = run_file(d, "ref.json", [("a", 1.0)])
            with open(os.path.join(d, "bad.json"), "w") as f:
                json.dump({"schema": "attngate.comparison/1"}, f)
            with self.assertRaises(SystemExit) as e:
                cr.compare(ref, os.path.join(d, "bad.json"), 0.02)
            self.assertIn("not an attngate.comparison/1 document", str(e.exception))


if __name__ == "__main__":
    unittest.main()
