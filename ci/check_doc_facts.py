#!/usr/bin/env python3
"""Checks the numbers the docs state against where they come from (ci/doc_facts.json).

  check_doc_facts.py --repo DIR --scenarios-tool attngate_scenarios

Facts: scenarios.<suite> and scenarios.total (the expanded suites, from attngate_scenarios --json),
scenarios.correctness (the gate suite plus gate.yaml's correctness_suites), cheats.planted,
cheats.planted_not_fault_or_hang and cheats.controls (kernels/adversarial/cheats.yaml: a control's
`does` says "control"), best.<scenario>.tflops (bench/baselines/nvidia_h200.json, rounded).
Exit 0 when every pattern matches and equals its fact, 1 otherwise (each mismatch named), 2 on
a usage error.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

try:
    import yaml
except ImportError:  # ci/install-deps.sh installs python3-yaml
    sys.exit("check_doc_facts: needs PyYAML (python3-yaml) to read the catalogue")


def scenario_facts(tool, repo):
    out = subprocess.run([tool, "--json", "--scenarios", str(repo / "scenarios")], check=True,
                         capture_output=True, text=True).stdout
    suites = {s["name"]: s for s in json.loads(out)["suites"]}
    facts = {f"scenarios.{n}": len(s["scenarios"]) for n, s in suites.items()}
    facts["scenarios.total"] = sum(len(s["scenarios"]) for s in suites.values())
    gate = yaml.safe_load((repo / "scenarios" / "gate.yaml").read_text())
    checked = ["gate"] + [x for x in re.split(r"[ ,]+", gate["settings"].get("correctness_suites", "")) if x]
    facts["scenarios.correctness"] = sum(len(suites[n]["scenarios"]) for n in checked)
    adv = yaml.safe_load((repo / "kernels/adversarial/scenarios/adversarial.yaml").read_text())
    facts["scenarios.adversarial"] = len(adv["scenarios"])
    return facts


def cheat_facts(repo):
    cat = yaml.safe_load((repo / "kernels/adversarial/cheats.yaml").read_text())["cheats"]
    controls = [c for c in cat if "control" in c["does"]]
    planted = [c for c in cat if "control" not in c["does"]]
    return {"cheats.controls": len(controls), "cheats.planted": len(planted),
            "cheats.planted_not_fault_or_hang": len([c for c in planted if c["name"] not in ("cheat_fault", "cheat_hang")])}


def best_facts(repo):
    best = json.loads((repo / "bench/baselines/nvidia_h200.json").read_text())["scenarios"]
    return {f"best.{sid}.tflops": round(e["tflops"]) for sid, e in best.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True, type=pathlib.Path)
    ap.add_argument("--scenarios-tool", required=True)
    a = ap.parse_args()
    facts = {**scenario_facts(a.scenarios_tool, a.repo), **cheat_facts(a.repo), **best_facts(a.repo)}
    table = json.loads((a.repo / "ci" / "doc_facts.json").read_text())["facts"]
    problems = []
    for f in table:
        text = (a.repo / f["file"]).read_text()
        found = re.findall(f["pattern"], text)
        if f["fact"] not in facts:
            problems.append(f"{f['file']}: fact {f['fact']} is not one check_doc_facts.py knows")
        elif not found:
            problems.append(f"{f['file']}: no text matches /{f['pattern']}/ (fact {f['fact']} = {facts[f['fact']]})")
        for value in found:
            if int(value) != facts.get(f["fact"]):
                problems.append(f"{f['file']}: says {value} where {f['fact']} is {facts[f['fact']]}")
    for p in problems:
        print("FAIL:", p)
    print(f"check_doc_facts: {len(table)} statements, {len(problems)} wrong")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
