import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import compare_runs as cr  # noqa: E402


def run(rows, kernel="candidate", width=0.005):
    return {"kernel": kernel, "base": "initial", "suite": "gate", "geomean_speedup": 1.0, "geomean_ci95": [0.99, 1.01],
            "wall_s": 10.0,
            "scenarios": [{"id": s, "speedup": v, "speedup_ci95": [v * (1 - width), v * (1 + width)],
                           "kernel_ms": 1.0 / v, "base_ms": 1.0} for s, v in rows]}


class CompareRuns(unittest.TestCase):
    def test_identical_runs_are_same(self):
        rows, counts, problems = cr.compare(run([("a", 1.0), ("b", 0.9)]), run([("a", 1.001), ("b", 0.899)]), 0.02)
        self.assertEqual(counts, {"SAME": 2})
        self.assertEqual(problems, [])

    def test_a_shifted_scenario_is_a_problem(self):
        _, counts, problems = cr.compare(run([("a", 1.0), ("b", 1.0)]), run([("a", 1.0), ("b", 0.95)]), 0.02)
        self.assertEqual(counts, {"SAME": 1, "SLOWER": 1})
        self.assertTrue(any("b" in p for p in problems))

    def test_missing_scenario_and_other_kernel_are_problems(self):
        _, _, problems = cr.compare(run([("a", 1.0), ("b", 1.0)]), run([("a", 1.0)], kernel="x"), 0.02)
        self.assertTrue(any("only in the reference" in p for p in problems))
        self.assertTrue(any("kernel differs" in p for p in problems))

    def test_markdown_lists_every_scenario(self):
        ref, new = run([("a", 1.0), ("b", 0.9)]), run([("a", 1.0), ("b", 0.9)])
        rows, counts, problems = cr.compare(ref, new, 0.02)
        md = cr.markdown(ref, new, rows, counts, problems, 0.02)
        self.assertIn("| a | SAME", md)
        self.assertIn("| b | SAME", md)


if __name__ == "__main__":
    unittest.main()
