#!/usr/bin/env python3
"""CI check of the example loop in dry-run mode: a throwaway git repository holding the candidate
and the suites, five evaluations through `attngate gate --dry-run`, then history and diff.

  test_scripted_loop.py ATTNGATE REPO_ROOT
"""
import os
import subprocess
import sys
import tempfile
import unittest

ATTNGATE, ROOT = sys.argv[1], sys.argv[2]
LOOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripted_loop.py")


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.email=ci@attngate", "-c", "user.name=ci", *args], cwd=cwd, check=True,
                   capture_output=True)


class DryRunLoop(unittest.TestCase):
    def test_five_evaluations_all_marked_dry_run(self):
        with tempfile.TemporaryDirectory() as repo:
            files = subprocess.run(["git", "ls-files", "kernels/candidate", "scenarios"], cwd=ROOT, check=True,
                                   capture_output=True, text=True).stdout.split()
            for f in files:
                os.makedirs(os.path.join(repo, os.path.dirname(f)), exist_ok=True)
                with open(os.path.join(ROOT, f), "rb") as src, open(os.path.join(repo, f), "wb") as dst:
                    dst.write(src.read())
            git(repo, "init", "-q")
            git(repo, "add", "-A")
            git(repo, "commit", "-qm", "start")
            p = subprocess.run([sys.executable, LOOP, "--repo", repo, "--attngate", ATTNGATE, "--dry-run",
                                "--evaluations", "5", "--restore"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            lines = p.stdout.splitlines()
            self.assertTrue(lines)
            self.assertEqual([l for l in lines if not l.startswith("[dry-run]")], [])
            self.assertEqual(sum("== evaluation" in l for l in lines), 5)
            self.assertTrue(any("exit 10: dry-run pass" in l for l in lines), p.stdout)
            self.assertTrue(any("exit 11: dry-run fail" in l for l in lines), p.stdout)
            self.assertTrue(any(l.startswith("[dry-run] == attngate diff 1 ") for l in lines), p.stdout)
            # Nothing reached the real lineage, nothing was committed, the candidate is as it was.
            self.assertFalse(os.path.exists(os.path.join(repo, ".attngate", "lineage.jsonl")))
            log = subprocess.run(["git", "log", "--oneline"], cwd=repo, capture_output=True, text=True).stdout
            self.assertEqual(len(log.splitlines()), 1)
            with open(os.path.join(ROOT, "kernels/candidate/candidate.cu")) as a, \
                 open(os.path.join(repo, "kernels/candidate/candidate.cu")) as b:
                self.assertEqual(a.read(), b.read())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
