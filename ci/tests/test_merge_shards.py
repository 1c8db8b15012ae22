import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import merge_shards as ms  # noqa: E402


def timing(name, ms):
    return {"name": name, "event_ms": ms, "kernel_ms": ms * 0.99, "wall_ms": ms + 0.6}


def shard(path, i, n, rows):
    with open(path, "w") as f:
        json.dump({"schema": "attngate.comparison/1", "kernel": "candidate", "base": "initial", "suite": "full",
                   "device": "gpu", "device_sm": 90, "geomean_speedup": 1.0, "geomean_ci95": [0.99, 1.01],
                   "wall_s": 3.0 + i, "shard": {"index": i, "of": n}, "failed": [],
                   "scenarios": [{"id": s, "flops": 1e12, "speedup": v, "speedup_ci95": [v * 0.99, v * 1.01],
                                  "kernel_timing": timing("candidate", 1.0 / v), "base_timing": timing("initial", 1.0)}
                                 for s, v in rows]}, f)


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

    def test_a_file_that_is_not_a_comparison_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            a = os.path.join(d, "a.json")
            shard(a, 0, 1, [("s1", 1.0)])
            with open(a) as f:
                doc = json.load(f)
            del doc["scenarios"][0]["kernel_timing"]
            with open(a, "w") as f:
                json.dump(doc, f)
            with self.assertRaises(SystemExit) as e:
                ms.merge_bench([a])
            self.assertIn("not an attngate.comparison/1 document", str(e.exception))
            self.assertIn("kernel_timing", str(e.exception))


def verify_result(test, status):
    """A result as attngate_verify writes it (verify/include/attngate/verify/result_document.hpp)."""
    stats = {"max_abs": 0.004, "max_scaled": 0.004, "rel_l2": 1e-4, "nonfinite": 0, "masked_mismatch": 0}
    run = {"distribution": "standard", "seed": "11", "pass": status == "passed", "reasons": [], "o": stats,
           "lse": stats, "initial_o": stats, "initial_lse": None, "o_worst_at": "b=0 s=1 h=0 d=2",
           "lse_worst_at": "b=0 h=0 s=1", "o_guard_violations": 0, "lse_guard_violations": 0, "input_mismatches": 0}
    _, kernel, scenario = test.split(".", 2)
    return {"schema": "attngate.verify_result/1", "test": test, "kernel": kernel, "scenario": scenario,
            "suite": "full", "status": status, "detail": "", "skip_reason": None, "ctest_gpu": "0",
            "pci_bus_id": "00000000:19:00.0",
            "ground_truth": "gpu_reference_fp32", "base_seed": "7", "runs": [run], "device_bytes": 1048576,
            "batch": "verify.batch.full.1of4", "kernel_tree_sha256": None}


class MergeVerify(unittest.TestCase):
    def write(self, d, test, status, doc=None):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, test + ".json"), "w") as f:
            json.dump(doc or verify_result(test, status), f)

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

    def test_results_are_checked_against_the_schema(self):
        with tempfile.TemporaryDirectory() as d:
            skipped = verify_result("verify.a.y", "skipped")
            skipped.update(ctest_gpu=None, pci_bus_id=None, ground_truth=None, base_seed=None, runs=[])
            self.write(d, "verify.a.y", "skipped", skipped)
            _, problems = ms.merge_verify([d], None)
            self.assertEqual([p for p in problems if "not a" in p], [])
            bad = verify_result("verify.a.x", "passed")
            del bad["base_seed"]
            bad["runs"][0]["pass"] = "yes"
            bad["runs"][0]["o"] = {"max_abs": 0.1}
            self.write(d, "verify.a.x", "passed", bad)
            summary, problems = ms.merge_verify([d], None)
            schema_problems = [p for p in problems if "not a attngate.verify_result/1" in p]
            self.assertEqual(len(schema_problems), 1, problems)
            for what in ("'base_seed' is a required property", "$.runs[0].pass", "$.runs[0].o: 'max_scaled' is a required property"):
                self.assertIn(what, schema_problems[0])
            self.assertEqual(summary["tests"], 2)  # still counted: it names its test and status
            self.write(d, "verify.a.z", "passed", {"schema": "attngate.verify_result/1"})
            summary, problems = ms.merge_verify([d], None)
            self.assertEqual(summary["tests"], 2)
            self.assertTrue(any("verify.a.z.json" in p and "'test' is a required property" in p for p in problems), problems)

    def test_the_schema_names_what_the_writer_writes(self):
        with open(ms.VERIFY_RESULT_SCHEMA) as f:
            schema = json.load(f)
        doc = verify_result("verify.a.x", "passed")
        self.assertEqual(set(schema["required"]), set(doc))
        self.assertEqual(set(schema["$defs"]["run"]["required"]), set(doc["runs"][0]))
        self.assertEqual(ms.check_schema(doc, schema), [])


if __name__ == "__main__":
    unittest.main()


class ResourceSpec(unittest.TestCase):
    def test_one_entry_per_gpu_with_slots(self):
        import ctest_resources as cr
        s = cr.spec(["0", "1"], 4)
        self.assertEqual(s["version"], {"major": 1, "minor": 0})
        self.assertEqual(s["local"][0]["gpus"], [{"id": "0", "slots": 4}, {"id": "1", "slots": 4}])
