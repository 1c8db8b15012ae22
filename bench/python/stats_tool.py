"""Runs attngate_stats (bench/tools), the one implementation of attngate's geomeans, intervals and
verdicts, for the Python tools, which render what it returns rather than recomputing it."""
import json
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_stats_tool(explicit=None):
    """The attngate_stats binary: `explicit`, else $ATTNGATE_STATS, else build/gpu or build/cpu
    under the repository, else PATH; None when there is none."""
    for path in (explicit, os.environ.get("ATTNGATE_STATS")):
        if path:
            return path
    for preset in ("gpu", "cpu"):
        p = os.path.join(ROOT, "build", preset, "bench", "attngate_stats")
        if os.access(p, os.X_OK):
            return p
    return shutil.which("attngate_stats")


def run_stats(args, explicit=None):
    """`attngate_stats ARGS...` -> its JSON output. Raises SystemExit with its message on failure."""
    tool = find_stats_tool(explicit)
    if not tool:
        raise SystemExit("attngate_stats not found: build it (cmake --build build/cpu --target attngate_stats), "
                         "or name it with ATTNGATE_STATS=PATH")
    try:
        p = subprocess.run([tool, *args], capture_output=True, text=True)
    except OSError as e:
        raise SystemExit(f"attngate_stats could not run ({tool}: {e.strerror}): build it (cmake --build build/cpu "
                         "--target attngate_stats), or name it with ATTNGATE_STATS=PATH")
    if p.returncode != 0:
        raise SystemExit(p.stderr.strip() or f"{tool} {' '.join(args)} failed with exit code {p.returncode}")
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError as e:
        raise SystemExit(f"{tool} {args[0]} printed no JSON: {e}")


def scenario_shapes(explicit=None, scenario_dir=None):
    """Every scenario's shape by id, from `attngate_scenarios --json` (the suites' own loader):
    `explicit`, else build/gpu or build/cpu under the repository, else PATH. {} when there is none."""
    tool = explicit
    for preset in ("gpu", "cpu"):
        p = os.path.join(ROOT, "build", preset, "scenarios", "tools", "attngate_scenarios")
        if not tool and os.access(p, os.X_OK):
            tool = p
    tool = tool or shutil.which("attngate_scenarios")
    if not tool:
        return {}
    args = [tool, "--json"] + (["--scenarios", scenario_dir] if scenario_dir else [])
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(p.stderr.strip() or f"{tool} --json failed with exit code {p.returncode}")
    return {s["id"]: s for suite in json.loads(p.stdout)["suites"] for s in suite["scenarios"]}
