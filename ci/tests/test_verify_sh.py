import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

CI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ROOT = os.path.join(CI, "..")
sys.path.insert(0, CI)
import verify_summary  # noqa: E402


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


def read(path):
    with open(path) as f:
        return f.read()


def junit(cases):
    """CTest's JUnit file: (name, status[, skipped message]) per test."""
    rows = []
    for name, status, *message in cases:
        inner = f'<skipped message="{message[0]}"/>' if message else ("<failure message=\"\"/>" if status == "fail" else "")
        rows.append(f'<testcase name="{name}" classname="{name}" time="0.1" status="{status}">{inner}</testcase>')
    return '<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="(empty)" tests="%d">\n%s\n</testsuite>\n' % (
        len(cases), "\n".join(rows))


def result(kernel, scenario, status, reasons):
    return {"schema": "attngate.verify_result/1", "test": f"verify.{kernel}.{scenario}", "kernel": kernel,
            "scenario": scenario, "suite": "smoke", "status": status, "detail": "",
            "runs": [{"distribution": "standard", "seed": "1", "pass": not reasons, "reasons": reasons}]}


SKIP = "SKIP_REGULAR_EXPRESSION_MATCHED"
NONDET = "not deterministic: a second call on the same inputs differs in 12 elements of O"


class VerifyShDevice(unittest.TestCase):
    """ci/verify.sh checks for an sm_90 GPU before it installs or builds anything: stand-ins for
    nvidia-smi, cmake, ctest and apt-get on PATH record whether they were called."""

    def run_verify(self, nvidia_smi):
        with tempfile.TemporaryDirectory() as d:
            bin_dir = os.path.join(d, "bin")
            os.makedirs(bin_dir)
            calls = os.path.join(d, "calls")
            for tool in ("cmake", "ctest", "apt-get", "dpkg-query"):
                executable(os.path.join(bin_dir, tool), f"#!/bin/sh\necho {tool} \"$@\" >> {calls}\nexit 0\n")
            if nvidia_smi is not None:
                executable(os.path.join(bin_dir, "nvidia-smi"), nvidia_smi)
            # Only the stand-ins and the basic tools: no real nvidia-smi, cmake or ctest can be found.
            tools = os.path.join(d, "tools")
            os.makedirs(tools)
            for t in ("bash", "sh", "env", "grep", "sed", "tr", "sort", "paste", "cat", "mktemp", "rm", "dirname",
                      "id", "awk", "python3", "uname", "head"):
                p = shutil.which(t)
                if p:
                    os.symlink(p, os.path.join(tools, t))
            env = dict(os.environ, PATH=bin_dir + os.pathsep + tools)
            p = subprocess.run(["bash", os.path.join(CI, "verify.sh")], capture_output=True, text=True, env=env,
                               timeout=60)
            called = read(calls) if os.path.exists(calls) else ""
            return p.returncode, p.stdout + p.stderr, called

    def test_compute_capability_8_0_exits_before_building(self):
        rc, out, called = self.run_verify("#!/bin/sh\ncase \"$*\" in *compute_cap*) echo 8.0;; *) echo 0;; esac\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("compute capability 8.0 found, sm_90 needed", out)
        self.assertEqual(called, "", "verify.sh built or installed without an sm_90 GPU")

    def test_no_nvidia_smi_exits_before_building(self):
        rc, out, called = self.run_verify(None)
        self.assertEqual(rc, 1, out)
        self.assertIn("no nvidia-smi", out)
        self.assertEqual(called, "")

    def test_no_gpu_exits_before_building(self):
        rc, out, called = self.run_verify("#!/bin/sh\necho 'No devices were found'\nexit 6\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("no GPU", out)
        self.assertEqual(called, "")

    def test_several_gpus_none_sm90(self):
        rc, out, called = self.run_verify("#!/bin/sh\nprintf '8.0\\n8.6\\n8.0\\n'\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("compute capability 8.0, 8.6 found, sm_90 needed", out)
        self.assertEqual(called, "")


class VerifyShEndToEnd(unittest.TestCase):
    """verify.sh on a stand-in sm_90 machine, in a copy of ci/ whose install-deps.sh does nothing:
    its verdict is the JUnit file's, not ctest's exit code."""

    def run_verify(self, cases, results=(), gate_yaml=None):
        with tempfile.TemporaryDirectory() as d:
            tree, bin_dir = os.path.join(d, "tree"), os.path.join(d, "bin")
            os.makedirs(os.path.join(tree, "ci"))
            os.makedirs(os.path.join(tree, "scenarios"))
            os.makedirs(os.path.join(tree, "build", "gpu", "verify", "results"))
            os.makedirs(bin_dir)
            shutil.copy(os.path.join(CI, "verify.sh"), os.path.join(tree, "ci"))
            shutil.copy(os.path.join(CI, "verify_summary.py"), os.path.join(tree, "ci"))
            executable(os.path.join(tree, "ci", "install-deps.sh"), "#!/bin/sh\nexit 0\n")
            with open(os.path.join(tree, "scenarios", "gate.yaml"), "w") as f:
                f.write(gate_yaml or read(os.path.join(ROOT, "scenarios", "gate.yaml")))
            for doc in results:
                with open(os.path.join(tree, "build", "gpu", "verify", "results", doc["test"] + ".json"), "w") as f:
                    json.dump(doc, f)
            xml = os.path.join(d, "junit.xml")
            with open(xml, "w") as f:
                f.write(junit(cases))
            executable(os.path.join(bin_dir, "nvidia-smi"),
                       "#!/bin/sh\ncase \"$*\" in *compute_cap*) echo 9.0;; *) echo 50;; esac\n")
            executable(os.path.join(bin_dir, "cmake"), "#!/bin/sh\nexit 0\n")
            # ctest exits 0 whatever the file says, as CTest does when every test was skipped.
            executable(os.path.join(bin_dir, "ctest"),
                       "#!/bin/sh\nfor a in \"$@\"; do [ \"$prev\" = --output-junit ] && cp " + xml +
                       " \"$a\"; prev=$a; done\nexit 0\n")
            env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
            p = subprocess.run(["bash", os.path.join(tree, "ci", "verify.sh")], capture_output=True, text=True,
                               env=env, timeout=60)
            return p.returncode, p.stdout + p.stderr

    def test_all_skipped_fails(self):
        rc, out = self.run_verify([("verify.batch.smoke", "notrun", SKIP), ("verify.candidate.a", "notrun", SKIP),
                                   ("verify.initial.a", "notrun", SKIP)])
        self.assertEqual(rc, 1, out)
        self.assertIn("3 tests: 0 passed, 0 failed, 3 skipped", out)
        self.assertIn("no verify test ran", out)

    def test_no_tests_fails(self):
        rc, out = self.run_verify([])
        self.assertEqual(rc, 1, out)
        self.assertIn("no verify test ran (none found)", out)

    def test_passes(self):
        rc, out = self.run_verify([("verify.batch.smoke", "run"), ("verify.candidate.a", "run"),
                                   ("verify.initial.a", "run"), ("verify.candidate.b", "notrun", SKIP)])
        self.assertEqual(rc, 0, out)
        self.assertIn("4 tests: 3 passed, 0 failed, 1 skipped", out)

    def test_a_failure_fails(self):
        rc, out = self.run_verify([("verify.candidate.a", "run"), ("verify.candidate.b", "fail")],
                                  [result("candidate", "b", "failed", ["max abs error 1.0 > bound"])])
        self.assertEqual(rc, 1, out)
        self.assertIn("FAILED verify.candidate.b", out)

    def test_library_nondeterminism_is_reported_not_failed(self):
        rc, out = self.run_verify([("verify.candidate.a", "run"), ("verify.cudnn.a", "fail")],
                                  [result("cudnn", "a", "failed", [NONDET])])
        self.assertEqual(rc, 0, out)
        self.assertIn("verify.cudnn.a: library nondeterminism (reported, not failed)", out)
        self.assertIn("1 failed (1 of them library nondeterminism)", out)

    def test_library_nondeterminism_fails_when_configured(self):
        gate = read(os.path.join(ROOT, "scenarios", "gate.yaml")).replace(
            'library_nondeterminism: "report"', 'library_nondeterminism: "fail"')
        self.assertIn('library_nondeterminism: "fail"', gate)
        rc, out = self.run_verify([("verify.candidate.a", "run"), ("verify.cudnn.a", "fail")],
                                  [result("cudnn", "a", "failed", [NONDET])], gate_yaml=gate)
        self.assertEqual(rc, 1, out)
        self.assertIn("library nondeterminism (failed)", out)


class Summary(unittest.TestCase):
    """ci/verify_summary.py's rules, without the shell around them."""

    def summarize(self, cases, results=(), policy="report"):
        with tempfile.TemporaryDirectory() as d:
            xml = os.path.join(d, "j.xml")
            with open(xml, "w") as f:
                f.write(junit(cases))
            for doc in results:
                with open(os.path.join(d, doc["test"] + ".json"), "w") as f:
                    json.dump(doc, f)

            class Out:
                text = ""

                def write(self, s):
                    Out.text += s

            rc = verify_summary.summarize(xml, d, policy, out=Out())
            return rc, Out.text

    def test_other_library_failures_fail(self):
        for reasons in (["max abs error 1.0 > bound"], [NONDET, "guard bytes changed"],
                        ["not deterministic: 40 elements of O left unwritten by the second call"], []):
            rc, out = self.summarize([("verify.cudnn.a", "fail")], [result("cudnn", "a", "failed", reasons)])
            self.assertEqual(rc, 1, (reasons, out))
            self.assertIn("FAILED verify.cudnn.a", out)

    def test_library_failure_without_a_result_fails(self):
        rc, out = self.summarize([("verify.candidate.a", "run"), ("verify.cudnn.a", "fail")])
        self.assertEqual(rc, 1, out)

    def test_a_result_of_another_test_is_not_read_as_this_one(self):
        doc = result("cudnn", "b", "failed", [NONDET])
        doc["test"] = "verify.cudnn.a"
        rc, out = self.summarize([("verify.candidate.a", "run"), ("verify.cudnn.b", "fail")], [doc])
        self.assertEqual(rc, 1, out)

    def test_a_result_of_an_earlier_run_is_not_read(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "verify.cudnn.a.json"), "w") as f:
                json.dump(result("cudnn", "a", "failed", [NONDET]), f)
            os.utime(os.path.join(d, "verify.cudnn.a.json"), (1000, 1000))
            self.assertFalse(verify_summary.library_nondeterministic("verify.cudnn.a", d, since=2000))
            self.assertTrue(verify_summary.library_nondeterministic("verify.cudnn.a", d, since=500))

    def test_the_candidates_nondeterminism_fails(self):
        rc, out = self.summarize([("verify.candidate.a", "fail")], [result("candidate", "a", "failed", [NONDET])])
        self.assertEqual(rc, 1, out)

    def test_not_run_is_a_failure(self):
        rc, out = self.summarize([("verify.candidate.a", "run"), ("verify.candidate.b", "notrun",
                                                                   "Fixture dependency failed")])
        self.assertEqual(rc, 1, out)
        self.assertIn("FAILED verify.candidate.b (not run: Fixture dependency failed)", out)

    def test_only_batches_ran(self):
        rc, out = self.summarize([("verify.batch.smoke", "run"), ("verify.candidate.a", "notrun", SKIP)])
        self.assertEqual(rc, 1, out)
        self.assertIn("no verify test ran", out)

    def test_unreadable_junit(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "j.xml")
            with open(bad, "w") as f:
                f.write("<testsuite")
            with open(os.devnull, "w") as null:
                self.assertEqual(verify_summary.summarize(bad, d, "report", out=null), 1)

    def test_policy(self):
        self.assertEqual(verify_summary.library_nondeterminism_policy(os.path.join(ROOT, "scenarios", "gate.yaml")),
                         "report")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "gate.yaml")
            for text, want in (("suite: gate\nsettings:\n  nondeterminism: \"fail\"\n", "report"),
                               ("suite: gate\nsettings:\n  library_nondeterminism: \"fail\"  # x\n", "fail"),
                               ("suite: gate\nsettings:\n  # library_nondeterminism: \"fail\"\n", "report")):
                with open(path, "w") as f:
                    f.write(text)
                self.assertEqual(verify_summary.library_nondeterminism_policy(path), want, text)
            with open(path, "w") as f:
                f.write("suite: gate\nsettings:\n  library_nondeterminism: \"sometimes\"\n")
            with self.assertRaises(ValueError):
                verify_summary.library_nondeterminism_policy(path)

    def test_policy_without_pyyaml(self):
        real = sys.modules.get("yaml")
        sys.modules["yaml"] = None  # import yaml raises ImportError
        try:
            self.test_policy()
        finally:
            if real is None:
                del sys.modules["yaml"]
            else:
                sys.modules["yaml"] = real


if __name__ == "__main__":
    unittest.main()
