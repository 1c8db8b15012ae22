"""CPU tests of bench/python/attngate_baselines.py's best-baselines file (bench/baselines/<gpu>.json,
attngate.best_baselines/1) and of its FlashAttention-3 backend's support rules and import."""
import copy
import glob
import json
import os
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "python"))
import attngate_baselines as ab  # noqa: E402

# The fa3-fwd 0.0.3 wheel's fa3_fwd_config.CONFIG["build_flags"], as shipped.
FA3_FWD_FLAGS = {
    "FLASHATTENTION_DISABLE_BACKWARD": True, "FLASHATTENTION_DISABLE_SPLIT": False,
    "FLASHATTENTION_DISABLE_PAGEDKV": True, "FLASHATTENTION_DISABLE_APPENDKV": False,
    "FLASHATTENTION_DISABLE_LOCAL": True, "FLASHATTENTION_DISABLE_SOFTCAP": False,
    "FLASHATTENTION_DISABLE_PACKGQA": False, "FLASHATTENTION_DISABLE_FP16": True,
    "FLASHATTENTION_DISABLE_FP8": False, "FLASHATTENTION_DISABLE_VARLEN": False,
    "FLASHATTENTION_DISABLE_CLUSTER": False, "FLASHATTENTION_DISABLE_HDIM64": False,
    "FLASHATTENTION_DISABLE_HDIM96": False, "FLASHATTENTION_DISABLE_HDIM128": False,
    "FLASHATTENTION_DISABLE_HDIM192": False, "FLASHATTENTION_DISABLE_HDIM256": False,
    "FLASHATTENTION_DISABLE_SM8x": False, "FLASHATTENTION_ENABLE_VCOLMAJOR": False,
    "FLASH_ATTENTION_DISABLE_HDIMDIFF64": False, "FLASH_ATTENTION_DISABLE_HDIMDIFF192": False,
}


def result(scenario, baseline, tflops, status="ok", passed=True, suite="gate"):
    r = {"scenario": scenario, "suite": suite, "baseline": baseline, "status": status, "reason": "",
         "flops": 1e12, "event_ms": 1e3 / tflops if tflops else 0.0, "kernel_ms": 0.0,
         "tflops": float(tflops), "kernel_names": []}
    r["check"] = None if passed is None else {"o_max_abs": 1e-3, "pass": passed}
    return r


def run_doc(created, results, gpu="NVIDIA H200"):
    return {"schema": ab.SCHEMA, "created": created, "suites": ["gate"], "device": {"name": gpu},
            "method": {}, "versions": {"torch": "2.11.0", "cudnn": "91900", "fa3-fwd": "0.0.3",
                                       "flash-attn-4": "4.0.0b36"},
            "baselines": {}, "results": results}


class Slug(unittest.TestCase):
    def test_slug(self):
        self.assertEqual(ab.gpu_slug("NVIDIA H200"), "nvidia_h200")
        self.assertEqual(ab.gpu_slug("NVIDIA H100 80GB HBM3"), "nvidia_h100_80gb_hbm3")
        self.assertEqual(ab.gpu_slug("NVIDIA A100-SXM4-80GB"), "nvidia_a100_sxm4_80gb")
        self.assertEqual(ab.gpu_slug(" NVIDIA  GH200/480GB"), "_nvidia__gh200_480gb")  # one '_' per character
        self.assertTrue(ab.default_best_path("NVIDIA H200").endswith(os.path.join("bench", "baselines", "nvidia_h200.json")))


class Merge(unittest.TestCase):
    schema = ab.load_best_schema()

    def valid(self, doc):
        self.assertEqual(ab.check_schema(doc, self.schema), [])

    def test_only_correct_results_count(self):
        doc = run_doc("2026-12-02T10:00:00+00:00", [
            result("a", "fa3", 700), result("a", "fa4", 900, status="wrong", passed=False),
            result("a", "torch_flash", 800, status="fallback"), result("a", "torch_cudnn", 950, passed=None),
            result("b", "fa4", 0, status="not installed", passed=None), result("b", "fa3", 0, status="unsupported", passed=None),
            result("c", "fa4", 600, passed=False)])
        m = ab.correct_measurements(doc)
        self.assertEqual(m, {"a": {"fa3": {"tflops": 700.0, "ms": round(1e3 / 700, 5), "date": "2026-12-02",
                                           "suite": "gate", "version": "fa3-fwd 0.0.3"}}})
        new, changes = ab.merge_best(None, [doc], "2026-12-02")
        self.valid(new)
        self.assertEqual(list(new["scenarios"]), ["a"])
        e = new["scenarios"]["a"]
        self.assertEqual((e["library"], e["tflops"], e["correct"], e["source"], new["gpu"]),
                         ("fa3", 700.0, True, ab.BEST_SOURCE, "NVIDIA H200"))
        self.assertEqual(len(changes), 1)

    def test_fastest_wins_and_remeasurement_replaces(self):
        run1 = run_doc("2026-11-29T23:00:00+00:00", [result("s", "fa4", 753), result("s", "torch_cudnn", 740),
                                                     result("t", "fa4", 500)])
        best, _ = ab.merge_best(None, [run1], "2026-11-29")
        self.assertEqual(best["scenarios"]["s"]["library"], "fa4")
        # fa4 re-measured slower: its new figure stands; the fastest of the latest figures is torch_cudnn's.
        run2 = run_doc("2026-12-02T10:00:00+00:00", [result("s", "fa4", 700)])
        best2, changes = ab.merge_best(best, [run2], "2026-12-02")
        self.valid(best2)
        s = best2["scenarios"]["s"]
        self.assertEqual((s["library"], s["tflops"], s["date"]), ("torch_cudnn", 740.0, "2026-11-29"))
        self.assertEqual(s["measured"]["fa4"]["tflops"], 700.0)
        self.assertEqual(best2["scenarios"]["t"], best["scenarios"]["t"])  # not measured: kept
        self.assertEqual(best2["updated"], "2026-12-02")
        self.assertEqual(len(changes), 1)
        self.assertIn("fa4 753.0", changes[0])
        # a new library that is faster takes the entry
        run3 = run_doc("2026-12-03T10:00:00+00:00", [result("s", "fa3", 760), result("s", "fa4", 0, "error", None)])
        s3 = ab.merge_best(best2, [run3], "2026-12-03")[0]["scenarios"]["s"]
        self.assertEqual((s3["library"], s3["tflops"]), ("fa3", 760.0))
        self.assertEqual(s3["measured"]["fa4"]["tflops"], 700.0)  # an error changes nothing

    def test_incorrect_or_missing_results_change_nothing(self):
        best, _ = ab.merge_best(None, [run_doc("2026-11-29T23:00:00+00:00", [result("s", "fa4", 753)])], "2026-11-29")
        run = run_doc("2026-12-02T10:00:00+00:00", [result("s", "fa4", 900, status="wrong", passed=False),
                                                    result("s", "fa3", 0, status="not installed", passed=None)])
        new, changes = ab.merge_best(best, [run], "2026-12-02")
        self.assertEqual(new["scenarios"], best["scenarios"])
        self.assertEqual(changes, [])

    def test_older_run_does_not_replace_newer_measurement(self):
        new_run = run_doc("2026-12-02T10:00:00+00:00", [result("s", "fa4", 700)])
        old_run = run_doc("2026-11-29T10:00:00+00:00", [result("s", "fa4", 753)])
        best, _ = ab.merge_best(None, [new_run], "2026-12-02")
        self.assertEqual(ab.merge_best(best, [old_run], "2026-12-02")[0]["scenarios"]["s"]["tflops"], 700.0)
        # several runs in one merge are applied oldest first, whatever their order
        self.assertEqual(ab.merge_best(None, [new_run, old_run], "2026-12-02")[0]["scenarios"]["s"]["tflops"], 700.0)

    def test_tie_keeps_listed_library(self):
        best, _ = ab.merge_best(None, [run_doc("2026-11-29T10:00:00+00:00", [result("s", "fa4", 700)])], "2026-11-29")
        run = run_doc("2026-12-02T10:00:00+00:00", [result("s", "torch_cudnn", 700)])
        self.assertEqual(ab.merge_best(best, [run], "2026-12-02")[0]["scenarios"]["s"]["library"], "fa4")

    def test_hand_written_entry_without_measured(self):
        old = {"schema": ab.BEST_SCHEMA, "gpu": "NVIDIA H200", "updated": "2026-12-01",
               "scenarios": {"s": {"library": "fa3", "tflops": 705.1, "ms": 1.23, "date": "2026-12-01",
                                   "suite": "gate", "correct": True, "source": "hand"}}}
        self.valid(old)
        run = run_doc("2026-12-02T10:00:00+00:00", [result("s", "fa4", 690)])
        s = ab.merge_best(old, [run], "2026-12-02")[0]["scenarios"]["s"]
        self.assertEqual((s["library"], s["source"], sorted(s["measured"])), ("fa3", "hand", ["fa3", "fa4"]))

    def test_other_gpu_is_refused(self):
        best, _ = ab.merge_best(None, [run_doc("2026-11-29T10:00:00+00:00", [result("s", "fa4", 700)])], "2026-11-29")
        with self.assertRaises(ValueError):
            ab.merge_best(best, [run_doc("2026-12-02T10:00:00+00:00", [result("s", "fa4", 800)], gpu="NVIDIA H100")],
                          "2026-12-02")

    def test_file_round_trip_and_malformed_file(self):
        run = run_doc("2026-12-02T10:00:00+00:00", [result("s", "fa3", 705.1), result("u", "torch_cudnn", 600)])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sub", "nvidia_h200.json")
            self.assertEqual(len(ab.update_best_file(path, [run], "2026-12-02")), 2)
            with open(path) as f:
                first = f.read()
            self.valid(json.loads(first))
            self.assertEqual(ab.update_best_file(path, [run], "2026-12-02"), [])  # idempotent
            with open(path) as f:
                self.assertEqual(f.read(), first)
            bad = json.loads(first)
            bad["scenarios"]["s"]["correct"] = False
            with open(path, "w") as f:
                json.dump(bad, f)
            with self.assertRaises(ValueError):
                ab.update_best_file(path, [run], "2026-12-02")
            with open(path) as f:
                self.assertEqual(json.load(f), bad)  # left as it was

    def test_cli_best_from(self):
        run = run_doc("2026-12-02T10:00:00+00:00", [result("s", "fa3", 705.1)])
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "run.json"), os.path.join(d, "best.json")
            with open(src, "w") as f:
                json.dump(run, f)
            self.assertEqual(ab.main(["--best-from", src, "--best-out", out]), 0)
            with open(out) as f:
                self.assertEqual(json.load(f)["scenarios"]["s"]["library"], "fa3")

    def test_schema_checker_finds_problems(self):
        good = {"schema": ab.BEST_SCHEMA, "gpu": "NVIDIA H200", "updated": "2026-12-01",
                "scenarios": {"gate_x": {"library": "fa3", "tflops": 705.1, "ms": 1.23, "date": "2026-12-01",
                                         "suite": "gate", "correct": True, "source": ab.BEST_SOURCE}}}
        self.valid(good)
        for mutate in (lambda d: d.update(schema="attngate.best_baselines/2"),
                       lambda d: d.update(extra=1),
                       lambda d: d.update(updated="yesterday"),
                       lambda d: d["scenarios"]["gate_x"].update(correct=False),
                       lambda d: d["scenarios"]["gate_x"].update(tflops=0),
                       lambda d: d["scenarios"]["gate_x"].update(tflops=True),
                       lambda d: d["scenarios"]["gate_x"].update(library="xformers"),
                       lambda d: d["scenarios"]["gate_x"].pop("ms"),
                       lambda d: d["scenarios"].update({"bad id": d["scenarios"]["gate_x"]})):
            bad = copy.deepcopy(good)
            mutate(bad)
            self.assertNotEqual(ab.check_schema(bad, self.schema), [], bad)

    def test_committed_files_follow_the_schema(self):
        for path in glob.glob(os.path.join(ROOT, "bench", "baselines", "*.json")):
            with open(path) as f:
                doc = json.load(f)
            self.assertEqual(ab.check_schema(doc, self.schema), [], path)
            self.assertEqual(os.path.basename(path), ab.gpu_slug(doc["gpu"]) + ".json")


def scenario(dtype="bf16", d=128, causal=False, sq=1024, sk=1024, hq=8, hkv=8):
    return {"id": "x", "dtype": dtype, "head_dim": d, "causal": causal, "seqlen_q": sq, "seqlen_k": sk,
            "heads_q": hq, "heads_kv": hkv, "softmax_scale": d ** -0.5}


class FA3Support(unittest.TestCase):
    def test_fa3_fwd_build(self):
        f = FA3_FWD_FLAGS
        self.assertIn("fp16", ab.fa3_unsupported(scenario("fp16"), f))
        for d in (64, 128, 256):
            for causal, sq, sk in ((False, 1024, 1024), (True, 77, 33), (True, 33, 77), (True, 1, 8192)):
                self.assertIsNone(ab.fa3_unsupported(scenario("bf16", d, causal, sq, sk, 32, 8), f))
        self.assertIsNone(ab.fa3_unsupported(scenario(d=72), f))  # runs in the head dim 96 kernel
        self.assertIn("multiple of 8", ab.fa3_unsupported(scenario(d=100), f))
        self.assertIn("up to 256", ab.fa3_unsupported(scenario(d=512), f))

    def test_other_builds(self):
        self.assertIsNone(ab.fa3_unsupported(scenario("fp16"), {}))  # upstream FA3 has fp16
        self.assertIn("up to 192", ab.fa3_unsupported(scenario(d=256), {"FLASHATTENTION_DISABLE_HDIM256": True}))
        self.assertIsNone(ab.fa3_unsupported(scenario(d=64), {"FLASHATTENTION_DISABLE_HDIM64": True}))


FAKE_INTERFACE = textwrap.dedent('''
    calls = []

    def flash_attn_func(q, k, v, softmax_scale=None, causal=False, qv=None, window_size=(-1, -1),
                        num_splits=1, return_attn_probs=False):
        calls.append({"softmax_scale": softmax_scale, "causal": causal, "return_attn_probs": return_attn_probs})
        return (q, "lse") if return_attn_probs else q
''')


class FA3Backend(unittest.TestCase):
    def setUp(self):
        self.saved = (dict(ab.FA3_MODULES), list(sys.path))
        self.tmp = tempfile.TemporaryDirectory()
        self.names = {"attngate_fake_fa3_iface": "attngate_fake_fa3_config"}
        ab.FA3_MODULES.clear()
        ab.FA3_MODULES.update(self.names)
        sys.path.insert(0, self.tmp.name)

    def tearDown(self):
        ab.FA3_MODULES.clear()
        ab.FA3_MODULES.update(self.saved[0])
        sys.path[:] = self.saved[1]
        for n in ("attngate_fake_fa3_iface", "attngate_fake_fa3_config"):
            sys.modules.pop(n, None)
        self.tmp.cleanup()

    def write(self, name, text):
        with open(os.path.join(self.tmp.name, name + ".py"), "w") as f:
            f.write(text)

    def test_missing_module_is_not_installed_with_the_import_error(self):
        b = ab.FA3()
        self.assertFalse(b.available)
        self.assertTrue(b.why.startswith("not installed: ImportError: no FlashAttention-3 module imports: "
                                         "attngate_fake_fa3_iface: ModuleNotFoundError: No module named "
                                         "'attngate_fake_fa3_iface'"), b.why)

    def test_broken_extension_reports_its_error(self):
        self.write("attngate_fake_fa3_iface", "raise OSError('libcudart.so.13: cannot open shared object file')\n")
        b = ab.FA3()
        self.assertFalse(b.available)
        self.assertIn("OSError: libcudart.so.13: cannot open shared object file", b.why)

    def test_calls_with_lse_and_refuses_fp16(self):
        self.write("attngate_fake_fa3_iface", FAKE_INTERFACE)
        self.write("attngate_fake_fa3_config", f"CONFIG = {{'build_flags': {FA3_FWD_FLAGS!r}}}\n")
        b = ab.FA3()
        self.assertTrue(b.available, b.why)
        self.assertIn("attngate_fake_fa3_iface.flash_attn_func, return_attn_probs=True", b.description)
        self.assertIn("fp16", b.description)
        with self.assertRaises(ab.Unsupported) as cm:
            b.prepare(scenario("fp16"))
        self.assertIn("no fp16 kernels", str(cm.exception))
        call = b.prepare(scenario("bf16", 64, True, 33, 77))
        self.assertEqual(call("q", "k", "v"), ("q", "lse"))
        fake = sys.modules["attngate_fake_fa3_iface"]
        self.assertEqual(fake.calls[-1], {"softmax_scale": 0.125, "causal": True, "return_attn_probs": True})


if __name__ == "__main__":
    unittest.main()
