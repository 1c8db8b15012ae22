#!/usr/bin/env python3
"""The verdict of ci/verify.sh, from CTest's JUnit file (a typed document) rather than its text.

    ci/verify_summary.py --junit FILE --results-dir DIR [--gate-yaml scenarios/gate.yaml]

Prints the counts (passed, failed, skipped) and exits 0 only when at least one verify case
(`verify.<kernel>.<scenario>`) ran and nothing failed. A failure of a library control
(`verify.cudnn.*`) whose result document (DIR/verify.cudnn.<scenario>.json, attngate.verify_result/1)
fails only because a repeated call differed bit for bit (every reason of its failing runs starts with
`not deterministic:` and none says `left unwritten`: the gate's NONDETERMINISTIC rule) is reported as
library nondeterminism and does not fail the job, unless gate.yaml's `settings.library_nondeterminism`
is `fail` (values report|fail, default report). The candidate's own policy is `settings.nondeterminism`,
which the gate applies; here any other failure fails.
"""
import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

LIBRARY_KERNELS = ("cudnn",)  # kernels backed by a vendor library (kernels/cudnn)
NOT_DETERMINISTIC = "not deterministic:"  # verify_case.hpp kReasonNotDeterministic
LEFT_UNWRITTEN = "left unwritten"  # a skipped second call: wrong output, not nondeterminism
SKIP_MESSAGES = ("SKIP_REGULAR_EXPRESSION_MATCHED", "SKIP_RETURN_CODE")


def library_nondeterminism_policy(gate_yaml):
    """settings.library_nondeterminism of gate.yaml: 'report' (default) or 'fail'."""
    if not gate_yaml or not os.path.exists(gate_yaml):
        return "report"
    with open(gate_yaml) as f:
        text = f.read()
    try:
        import yaml  # python3-yaml (ci/install-deps.sh)
        doc = yaml.safe_load(text) or {}
        value = ((doc.get("settings") or {}).get("library_nondeterminism"))
    except ImportError:
        # Without PyYAML: the one key, from the indented lines of the top-level `settings:` block.
        value, inside = None, False
        for line in text.splitlines():
            if re.match(r"settings:\s*(#.*)?$", line):
                inside = True
            elif inside and line.strip() and not line[0].isspace():
                break
            elif inside:
                m = re.match(r"[ \t]+library_nondeterminism:\s*([\"']?)([^\"'#\s]*)\1\s*(#.*)?$", line)
                if m:
                    value = m.group(2)
    if value is None or value == "":
        return "report"
    value = str(value)
    if value not in ("report", "fail"):
        raise ValueError(f"{gate_yaml} settings.library_nondeterminism='{value}' is not report or fail")
    return value


def outcome(case):
    """'passed', 'failed' or 'skipped', and why, for one <testcase> of CTest's JUnit file."""
    status = case.get("status", "")
    if status == "run":
        return "passed", ""
    if status == "fail":
        return "failed", ""
    if status == "disabled":
        return "skipped", "disabled"
    skipped = case.find("skipped")
    message = skipped.get("message", "") if skipped is not None else ""
    if any(message.startswith(m) for m in SKIP_MESSAGES):
        return "skipped", message
    # "Unable to find executable", "Fixture dependency failed", ...: CTest fails these too.
    return "failed", "not run: " + (message or status or "unknown status")


def only_nondeterministic(doc):
    """The gate's rule (agent_hooks/gate/src/rules_correctness.cpp only_nondeterministic)."""
    any_reason = False
    for run in doc.get("runs", []):
        if run.get("pass", True):
            continue
        reasons = run.get("reasons") or []
        if not reasons:
            return False
        for text in reasons:
            if not isinstance(text, str) or not text.startswith(NOT_DETERMINISTIC) or LEFT_UNWRITTEN in text:
                return False
            any_reason = True
    return any_reason


def read_result(name, results_dir, since):
    """The result document of test `name`, or None: missing, unreadable, another test's, or older
    than `since` (seconds since the epoch; a stale result of an earlier run is not this run's)."""
    path = os.path.join(results_dir, name + ".json")
    try:
        if since is not None and os.stat(path).st_mtime < since:
            return None
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != "attngate.verify_result/1" or doc.get("test") != name:
        return None
    return doc


def library_nondeterministic(name, results_dir, since=None):
    """True when test `name` is a library control whose result fails on nondeterminism alone."""
    m = re.fullmatch(r"verify\.([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)", name)
    if not m or m.group(1) not in LIBRARY_KERNELS:
        return False
    doc = read_result(name, results_dir, since)
    return doc is not None and doc.get("status") == "failed" and only_nondeterministic(doc)


def summarize(junit, results_dir, policy, out=sys.stdout, since=None):
    try:
        cases = ET.parse(junit).getroot().iter("testcase")
    except (OSError, ET.ParseError) as e:
        print(f"attngate: cannot read CTest's JUnit file {junit}: {e}", file=out)
        return 1
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    ran_cases = 0
    failures, reported, skip_reasons = [], [], {}
    for case in cases:
        name = case.get("name", "")
        result, why = outcome(case)
        if result == "failed" and not why and library_nondeterministic(name, results_dir, since):
            reported.append(name)
            if policy == "fail":
                failures.append(name + " (library nondeterminism; settings.library_nondeterminism: fail)")
        elif result == "failed":
            failures.append(name + (f" ({why})" if why else ""))
        counts[result] += 1
        if result == "skipped":
            doc = read_result(name, results_dir, since)
            detail = doc.get("detail") if doc and doc.get("status") == "skipped" else ""
            reason = str(detail or why or "skipped")
            skip_reasons[reason] = skip_reasons.get(reason, 0) + 1
        if result != "skipped" and not why and name.startswith("verify.") and not name.startswith("verify.batch."):
            ran_cases += 1
    total = sum(counts.values())
    excused = f" ({len(reported)} of them library nondeterminism)" if reported else ""
    print(f"attngate: verify: {total} tests: {counts['passed']} passed, {counts['failed']} failed{excused}, "
          f"{counts['skipped']} skipped", file=out)
    for name in reported:
        verdict = "failed" if policy == "fail" else "reported, not failed"
        print(f"attngate: {name}: library nondeterminism ({verdict})", file=out)
    for name in failures:
        print(f"attngate: FAILED {name}", file=out)
    if ran_cases == 0:
        print(f"attngate: no verify test ran ({'all skipped' if skip_reasons else 'none found'}): nothing was verified "
              "(a usable sm_90 GPU and CUDA are needed)", file=out)
        for reason, n in sorted(skip_reasons.items(), key=lambda kv: -kv[1])[:5]:
            print(f"attngate:   {n} skipped: {reason}", file=out)
        return 1
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--junit", required=True, help="ctest --output-junit FILE")
    ap.add_argument("--results-dir", required=True, help="the verify result documents (build/gpu/verify/results)")
    ap.add_argument("--gate-yaml", default=os.path.join(os.path.dirname(__file__), "..", "scenarios", "gate.yaml"))
    ap.add_argument("--since", type=float, help="ignore result documents older than this (seconds since the epoch)")
    a = ap.parse_args()
    try:
        policy = library_nondeterminism_policy(a.gate_yaml)
    except ValueError as e:
        print(f"attngate: {e}")
        return 1
    return summarize(a.junit, a.results_dir, policy, since=a.since)


if __name__ == "__main__":
    sys.exit(main())
