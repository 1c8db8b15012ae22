"""ci/check_doc_facts.py on a tiny repository: a stated number that differs from its fact, or a
statement that no longer matches, fails; a true one passes."""
import json
import os
import pathlib
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "check_doc_facts.py"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


class CheckDocFacts(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.repo = pathlib.Path(self.tmp.name)
        tool = self.repo / "fake_scenarios_tool"
        tool.write_text("#!/bin/sh\necho '" + json.dumps({"suites": [
            {"name": "gate", "scenarios": [{}, {}, {}]}, {"name": "smoke", "scenarios": [{}]}]}) + "'\n")
        tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
        self.tool = str(tool)
        write(self.repo / "scenarios/gate.yaml", 'settings:\n  correctness_suites: "smoke"\n')
        write(self.repo / "kernels/adversarial/scenarios/adversarial.yaml", "scenarios: [{id: a}, {id: b}]\n")
        write(self.repo / "kernels/adversarial/cheats.yaml", """\
            cheats:
              - {name: initial, does: the initial kernel (control)}
              - {name: cheat_x, does: cheats}
              - {name: cheat_fault, does: faults}
            """)
        write(self.repo / "bench/baselines/nvidia_h200.json", json.dumps({"scenarios": {"g1": {"tflops": 751.6}}}))
        write(self.repo / "ci/doc_facts.json", json.dumps({"facts": [
            {"file": "DOC.md", "pattern": r"(\d+) scenarios checked", "fact": "scenarios.correctness"},
            {"file": "DOC.md", "pattern": r"(\d+) planted", "fact": "cheats.planted"},
            {"file": "DOC.md", "pattern": r"(\d+) TFLOPS", "fact": "best.g1.tflops"}]}))

    def tearDown(self):
        self.tmp.cleanup()

    def run_check(self, doc):
        write(self.repo / "DOC.md", doc)
        return subprocess.run([sys.executable, str(SCRIPT), "--repo", str(self.repo), "--scenarios-tool", self.tool],
                              capture_output=True, text=True)

    def test_true_numbers_pass(self):
        r = self.run_check("4 scenarios checked, 2 planted, 752 TFLOPS\n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_wrong_number_fails_and_is_named(self):
        r = self.run_check("4 scenarios checked, 3 planted, 752 TFLOPS\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("says 3 where cheats.planted is 2", r.stdout)

    def test_a_statement_that_no_longer_matches_fails(self):
        r = self.run_check("4 scenarios checked, 2 planted\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no text matches", r.stdout)


if __name__ == "__main__":
    unittest.main()
