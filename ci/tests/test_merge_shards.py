import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import merge_shards as ms  # noqa: E402


def shard(path, i, n, rows):
    with open(path, "w") as f:
        json.dump({"kernel": "candidate", "base": "initial", "suite": "full", "device": "gpu", "wall_s": 3.0 + i,
                   "shard": {"index": i, "of": n}, "failed": [],
                   "scenarios": [{"id": s, "speedup": v, "speedup_ci95": [v * 0.99, v * 1.01]} for s, v in rows]}, f)


class MergeBench(unittest.TestCase):
    def test_disjoint_shards_merge_and_recompute_geomean(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            shard(a, 0, 2, [("s1", 2.0)])
            shard(b, 1, 2, [("s2", 0.5), ("s3", 1.0)])
            merged, problems = ms.merge_bench([a, b])
            self.assertEqual(problems, [])
            self.assertEqual([s["id"] for s in merged["scenarios"]], ["s1", "s2", "s3"])
            self.assertAlmostEqual(merged["geomean_speedup"], 1.0, places=12)
            self.assertEqual(merged["wall_s"], 4.0)

    def test_overlap_and_missing_shard_are_problems(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            shard(a, 0, 3, [("s1", 1.0)])
            shard(b, 1, 3, [("s1", 1.0)])
            _, problems = ms.merge_bench([a, b])
            self.assertTrue(any("s1" in p for p in problems))
            self.assertTrue(any("split into 3" in p for p in problems))


class MergeVerify(unittest.TestCase):
    def write(self, d, test, status):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, test + ".json"), "w") as f:
            json.dump({"test": test, "status": status}, f)

    def test_counts_and_expectation(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(os.path.join(d, "0"), "verify.a.x", "passed")
            self.write(os.path.join(d, "1"), "verify.a.y", "passed")
            summary, problems = ms.merge_verify([os.path.join(d, "0"), os.path.join(d, "1")], 2)
            self.assertEqual(problems, [])
            self.assertEqual(summary["counts"], {"passed": 2})
            _, problems = ms.merge_verify([os.path.join(d, "0")], 2)
            self.assertTrue(any("expected 2" in p for p in problems))

    def test_failures_and_duplicates(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(os.path.join(d, "0"), "verify.a.x", "failed")
            self.write(os.path.join(d, "1"), "verify.a.x", "failed")
            summary, problems = ms.merge_verify([os.path.join(d, "0"), os.path.join(d, "1")], None)
            self.assertTrue(any("two shards" in p for p in problems))
            self.assertEqual(summary["not_passed"], ["verify.a.x"])


if __name__ == "__main__":
    unittest.main()


class ResourceSpec(unittest.TestCase):
    def test_one_entry_per_gpu_with_slots(self):
        import ctest_resources as cr
        s = cr.spec(["0", "1"], 4)
        self.assertEqual(s["version"], {"major": 1, "minor": 0})
        self.assertEqual(s["local"][0]["gpus"], [{"id": "0", "slots": 4}, {"id": "1", "slots": 4}])
