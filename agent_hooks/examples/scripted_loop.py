#!/usr/bin/env python3
"""A scripted optimization loop wired to attngate: edit the candidate, run the gate, commit or
revert, read the signals and the one question. It stands in for an agent (its "ideas" are a fixed
list of real edits to kernels/candidate/candidate.cu), so the wiring can be seen end to end.

  agent_hooks/examples/scripted_loop.py [--repo .] [--attngate build/gpu/agent_hooks/attngate]
                                        [--evaluations 5] [--target 0.9] [--dry-run]

--dry-run runs `attngate gate --dry-run` (no build, no GPU; agent_hooks/README.md): every line this
script prints is then prefixed "[dry-run]", and nothing it does is a pass of the real gate. Exit
status: 0 when the loop ran (whatever the verdicts), 1 when the wiring broke (a JSON it could not
read, an exit code outside the documented table), 3 when the gate cannot run here.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

# Real edits of the candidate's tile configuration (kernels/candidate/candidate.cu, struct Cfg):
# each keeps the kernel correct and changes its speed one way or the other. In dry-run mode the
# marker line stands for the speed the edit would have.
EDITS = [
    ("unchanged: the first measurement of the starting point", None, None, "1.00"),
    ("4 warps (64-row blocks) at head dims 64 and 128",
     r"kWarps = D == 256 \? 4 : 8;", "kWarps = D == 256 ? 4 : 4;", "0.93"),
    ("128-key tiles at head dims 64 and 128",
     r"kBlockN = D == 256 \? 32 : 64;", "kBlockN = D == 256 ? 32 : 128;", "0.97"),
    ("two blocks per SM at head dim 128",
     r"kMinBlocks = D == 128 \? 1 : 2;", "kMinBlocks = D == 128 ? 2 : 2;", "1.04"),
    ("Q held in registers at head dim 64 too",
     r"kQInRegs = D == 128;", "kQInRegs = D != 256;", "1.02"),
    ("64-key tiles at head dim 256",
     r"kBlockN = D == 256 \? 32 : 64;", "kBlockN = D == 256 ? 64 : 64;", "0.99"),
]
DRY_MARK = re.compile(r"^// attngate-dry-run: speedup=[0-9.]+\n", re.M)
EXIT = {0: "pass", 1: "fail", 3: "environment failure", 10: "dry-run pass", 11: "dry-run fail"}


class Loop:
    def __init__(self, a):
        self.a = a
        self.prefix = "[dry-run] " if a.dry_run else ""
        self.cand = os.path.join(a.repo, "kernels", "candidate", "candidate.cu")
        self.first = self.last = None  # the first and last versions evaluated

    def say(self, text=""):
        for line in str(text).splitlines() or [""]:
            print(self.prefix + line, flush=True)

    def attngate(self, *args, check_json=False):
        cmd = [self.a.attngate, "--repo", self.a.repo, *args]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if check_json:
            try:
                return p.returncode, json.loads(p.stdout), p.stderr
            except json.JSONDecodeError as e:
                self.say(f"wiring: `{' '.join(args)}` printed no JSON ({e}); stderr: {p.stderr[-400:]}")
                sys.exit(1)
        return p.returncode, p.stdout, p.stderr

    def apply(self, edit):
        _, pattern, replacement, dry_speedup = edit
        src = open(self.cand).read()
        if pattern:
            new, n = re.subn(pattern, replacement, src)
            if n == 0:
                self.say(f"edit not applicable (pattern {pattern!r} not found): skipped")
                return False
            src = new
        if self.a.dry_run:
            src = DRY_MARK.sub("", src)
            src = f"// attngate-dry-run: speedup={dry_speedup}\n" + src
        open(self.cand, "w").write(src)
        return True

    def gate(self, note):
        args = ["gate", "--json", "--note", note]
        if self.a.dry_run:
            args.append("--dry-run")
        if self.a.target:
            args += ["--target", str(self.a.target)]
        if self.a.build_dir:
            args += ["--build-dir", self.a.build_dir]
        rc, result, err = self.attngate(*args, check_json=True)
        if rc not in EXIT:
            self.say(f"wiring: attngate gate exited {rc}, not in the documented table; stderr: {err[-400:]}")
            sys.exit(1)
        return rc, result

    def run(self):
        saved = self.cand + ".loop-start"
        shutil.copyfile(self.cand, saved)
        try:
            for i in range(self.a.evaluations):
                edit = EDITS[i % len(EDITS)]
                self.say(f"== evaluation {i + 1}: {edit[0]}")
                before = open(self.cand).read()
                if not self.apply(edit):
                    continue
                rc, r = self.gate(edit[0])
                if rc == 3:
                    self.say(f"the gate cannot run here: {r.get('detail', '')}")
                    return 3
                if r.get("version") is not None:
                    self.first = self.first or r["version"]
                    self.last = r["version"]
                geo = r.get("geomean") or {}
                self.say(f"verdict {r.get('verdict')} (exit {rc}: {EXIT[rc]}), version {r.get('version')}, "
                         f"geomean {geo.get('speedup')} [{geo.get('ci_low')}, {geo.get('ci_high')}]")
                for reason in r.get("reasons", []):
                    self.say(f"  reason {reason.get('code')}: {str(reason.get('detail', ''))[:160]}")
                for s in r.get("signals", []):
                    self.say(f"  signal {s if isinstance(s, str) else json.dumps(s)[:200]}")
                q = r.get("question")
                if q:
                    self.say(f"  question ({q.get('trigger')}): {q.get('text')}")
                if rc == 10:
                    self.say("  a simulated pass: nothing is committed in a dry run; the edit stays")
                elif rc == 0:
                    crc, out, err = self.attngate("commit")
                    self.say(f"  commit: exit {crc}: {(out + err).strip()[:300]}")
                    if crc != 0:
                        open(self.cand, "w").write(before)  # refused: back to what was there
                else:
                    open(self.cand, "w").write(before)  # failed: revert the edit
            dry = ["--dry-run"] if self.a.dry_run else []
            rc, out, err = self.attngate("history", *dry)
            self.say("== attngate history" + (" --dry-run" if dry else ""))
            self.say(out + err)
            if self.first and self.last and self.first != self.last:
                rc, out, err = self.attngate("diff", str(self.first), str(self.last), *dry)
                self.say(f"== attngate diff {self.first} {self.last}")
                self.say(out + err)
            return 0
        finally:
            if self.a.restore:
                shutil.copyfile(saved, self.cand)
            os.remove(saved)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=".")
    ap.add_argument("--attngate", default=None, help="the attngate binary (default: <repo>/build/gpu/agent_hooks/attngate)")
    ap.add_argument("--build-dir", default=None, help="passed to attngate gate")
    ap.add_argument("--evaluations", type=int, default=5)
    ap.add_argument("--target", type=float, default=None, help="geomean target passed to attngate gate --target")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--restore", action="store_true", help="put the candidate back as it was at the start")
    a = ap.parse_args(argv)
    a.repo = os.path.abspath(a.repo)
    a.attngate = a.attngate or os.path.join(a.repo, "build", "gpu", "agent_hooks", "attngate")
    if a.evaluations < 1:
        ap.error("--evaluations must be >= 1")
    if not os.access(a.attngate, os.X_OK):
        sys.exit(f"scripted_loop: no attngate binary at {a.attngate} (build the project, or pass --attngate)")
    return Loop(a).run()


if __name__ == "__main__":
    sys.exit(main())
