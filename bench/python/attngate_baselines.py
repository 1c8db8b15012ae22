#!/usr/bin/env python3
"""attngate_baselines.py: times the attention baselines that live in Python on attngate's scenarios.

Baselines (each reported as "not installed" when it does not import):
  torch_cudnn   the op under torch.nn.functional.scaled_dot_product_attention's cuDNN backend, with LSE
  torch_flash   torch.nn.functional.scaled_dot_product_attention, FlashAttention backend only (PyTorch's
                bundled FlashAttention-2)
  fa3           FlashAttention-3, fa3_fwd_interface.flash_attn_func (PyPI fa3-fwd: forward only, no fp16), else
                flash_attn_interface.flash_attn_func (built from flash-attention/hopper)
  fa4           FlashAttention-4, flash_attn.cute.flash_attn_func (CuTe DSL; PyPI flash-attn-4)

The scenarios come from attngate itself (`attngate_scenarios --suite NAME --json`, one parser for
the YAML). The method follows bench/ (bench/README.md), adapted to Python:
  * inputs: BSHD tensors, U[-1, 1) like attngate's `standard` distribution, several input sets
    rotated through so no call finds its inputs in L2 from the previous one;
  * warm-up calls (these also pay for JIT compilation and cuDNN graph builds), untimed;
  * before every timed call, outside the timed region: a 256 MB buffer is zeroed (L2 flush) and
    the stream synchronized; then a spin kernel (torch.cuda._sleep) holds the GPU while the host
    records the start event, enqueues the call and records the stop event, so event time is the
    GPU's time for the call and not Python's launch latency (attngate_bench's stream hold). The
    hold is sized from the measured enqueue time; calls whose enqueue outlasted it are counted in
    held_timeouts;
  * the median of N CUDA-event times (event_ms), with min, CV and the 95% interval half-width;
  * kernel time from torch.profiler beside it (kernel_ms: the sum of the call's kernel durations,
    median over profiled calls, flushed the same way), and the names of the kernels that actually
    ran: a call whose longest kernel does not look like the baseline's own (a silent fallback,
    e.g. to the math or memory-efficient path) is reported as status "fallback";
  * a correctness check of each baseline's output against an fp32 reference computed in PyTorch
    from the same inputs (bottom-right causal with an explicit mask, fully masked rows O = 0);
  * versions of every package involved, the device, its clocks.
The output is one JSON document (schema attngate.baseline_results/1, described in README.md) that
bench/python/attngate_compare.py joins with attngate_bench's JSON.

  python3 bench/python/attngate_baselines.py --suite gate --out gate_baselines.json
  python3 bench/python/attngate_baselines.py --suite gate --suite prod --best-out auto
      (also merges the correct results into bench/baselines/<gpu slug>.json, attngate.best_baselines/1)
  python3 bench/python/attngate_baselines.py --best-from gate_baselines.json --best-out auto   (no GPU)
  python3 bench/python/attngate_baselines.py --self-test      (pure-Python checks, no GPU)
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import importlib.metadata
import inspect
import json
import math
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schema_check import check_schema  # noqa: E402

SCHEMA = "attngate.baseline_results/1"
BASELINES = ("torch_cudnn", "torch_flash", "fa3", "fa4")
STATUSES = ("ok", "wrong", "fallback", "unsupported", "error", "not installed")
DEFAULT_PEAK_TFLOPS = 989.5  # dense bf16, H100 SXM / H200 (bench/src/device_peak.cpp)
FLUSH_BYTES = 256 << 20

# The kernel a baseline's call must spend most of its time in; anything else is a fallback.
EXPECTED_KERNEL = {
    "torch_cudnn": re.compile(r"cudnn|sdpa|fprop", re.I),
    "torch_flash": re.compile(r"flash", re.I),
    "fa3": re.compile(r"flash", re.I),
    "fa4": re.compile(r"flash|fwd", re.I),
}

# FlashAttention-3's Python modules, in the order tried, with the build-configuration module each
# ships (CONFIG["build_flags"]): the forward-only wheel fa3-fwd (ci/fetch_fa3_wheel.sh), then a
# FlashAttention-3 built from flash-attention/hopper.
FA3_MODULES = {"fa3_fwd_interface": "fa3_fwd_config", "flash_attn_interface": "flash_attn_config"}
FA3_HEAD_DIMS = (64, 96, 128, 192, 256)  # the kernels' head dims; a smaller one runs in the next larger

PACKAGES = (
    "torch", "triton", "numpy", "flash-attn-4", "fa4", "fa3-fwd", "flash_attn_3", "flash-attn-3", "flash-attn",
    "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "nvidia-cutlass-dsl-libs-core",
    "nvidia-cutlass-dsl-libs-cu12", "nvidia-cutlass-dsl-libs-cu13", "quack-kernels", "apache-tvm-ffi",
    "torch-c-dlpack-ext", "cuda-bindings", "cuda-pathfinder", "cuda-python", "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13", "nvidia-cudnn-frontend", "einops",
)


class Unsupported(Exception):
    """The baseline cannot run this scenario (its own limitation); the message says why."""


# ------------------------------------------------------------------------------------------------
# Pure logic: no torch, no GPU (checked by --self-test)
# ------------------------------------------------------------------------------------------------

def seqlen_k_effective(seqlen_q: int, seqlen_k: int, causal: bool) -> float:
    """Mean number of keys a query row sees (scenarios/README.md): bottom-right causal, fully
    masked rows counting 0."""
    if not causal:
        return float(seqlen_k)
    if seqlen_q <= seqlen_k:
        return (2.0 * seqlen_k - seqlen_q + 1.0) / 2.0
    return seqlen_k * (seqlen_k + 1.0) / (2.0 * seqlen_q)


def scenario_flops(s: dict) -> float:
    """4 * batch * heads_q * seqlen_q * seqlen_k_effective * head_dim, as Scenario::flops()."""
    return (4.0 * s["batch"] * s["heads_q"] * float(s["seqlen_q"]) *
            seqlen_k_effective(s["seqlen_q"], s["seqlen_k"], s["causal"]) * s["head_dim"])


def tflops(flops: float, ms: float) -> float:
    return flops / (ms * 1e-3) / 1e12 if ms and ms > 0 else 0.0


def summarize(times_ms: list[float]) -> dict:
    """Median, min, CV and the distribution-free 95% interval of the median (bench/ stats.cpp:
    order statistics at ranks n/2 -+ 0.98 sqrt(n)), as a half-width relative to the median."""
    if not times_ms:
        return {"event_ms": 0.0, "min_ms": 0.0, "cv": 0.0, "rel_noise": 0.0, "samples": 0}
    xs = sorted(times_ms)
    n = len(xs)
    med = statistics.median(xs)
    mean = statistics.fmean(xs)
    cv = statistics.pstdev(xs) / mean if n > 1 and mean > 0 else 0.0
    half = 0.98 * math.sqrt(n)
    lo = xs[max(0, int(math.floor(n / 2 - half)))]
    hi = xs[min(n - 1, int(math.ceil(n / 2 + half)))]
    rel_noise = max(med - lo, hi - med) / med if med > 0 else 0.0
    return {"event_ms": med, "min_ms": xs[0], "cv": cv, "rel_noise": rel_noise, "samples": n}


def attribute_kernels(cpu_events: list[dict], call_marker: str = "attngate_call",
                      flush_marker: str = "attngate_flush") -> tuple[list[list[tuple[str, float]]], int]:
    """Groups the GPU kernels of profiled calls by call.

    cpu_events: the profiler's CPU events in any order, each {"id", "name", "parent" (id or None),
    "start_us", "kernels": [(kernel name, duration us), ...]}: a kernel belongs to the CPU event that
    launched it. Each kernel is attributed to the nearest enclosing `call_marker` range (a
    record_function around one call); kernels under `flush_marker` or under no marker are not the
    calls'. Returns (kernels per call, in the order the calls started; kernels under no marker)."""
    by_id = {e["id"]: e for e in cpu_events}
    calls: dict = {}
    orphans = 0

    def marker_of(e):
        seen = set()
        while e is not None and e["id"] not in seen:
            seen.add(e["id"])
            if e["name"] in (call_marker, flush_marker):
                return e
            e = by_id.get(e.get("parent"))
        return None

    for e in cpu_events:
        if not e.get("kernels"):
            continue
        m = marker_of(e)
        if m is None:
            orphans += len(e["kernels"])
            continue
        if m["name"] != call_marker:
            continue
        calls.setdefault(m["id"], (m["start_us"], []))[1].extend(e["kernels"])
    for e in cpu_events:  # a call that launched nothing still counts as a call
        if e["name"] == call_marker and e["id"] not in calls:
            calls[e["id"]] = (e["start_us"], [])
    ordered = [k for _, (_, k) in sorted(calls.items(), key=lambda kv: kv[1][0])]
    return ordered, orphans


def kernel_summary(per_call: list[list[tuple[str, float]]], baseline: str) -> dict:
    """kernel_ms (median over calls of the sum of durations), kernels per call, the distinct names,
    the dominant kernel and whether it is the baseline's own."""
    if not per_call or not any(per_call):
        return {"kernel_ms": 0.0, "kernels_per_call": 0, "kernel_names": [], "main_kernel": "",
                "kernel_match": False, "profiled_calls": len(per_call)}
    sums = [sum(d for _, d in ks) * 1e-3 for ks in per_call]
    names = sorted({n for ks in per_call for n, _ in ks})
    totals: dict = {}
    for ks in per_call:
        for n, d in ks:
            totals[n] = totals.get(n, 0.0) + d
    main = max(totals, key=totals.get)
    pattern = EXPECTED_KERNEL.get(baseline)
    return {"kernel_ms": statistics.median(sums),
            "kernels_per_call": statistics.median([len(ks) for ks in per_call]),
            "kernel_names": names,
            "main_kernel": main,
            "kernel_match": bool(pattern.search(main)) if pattern else True,
            "profiled_calls": len(per_call)}


def fa3_unsupported(s: dict, build_flags: dict) -> str | None:
    """Why FlashAttention-3 (flash_attn_func) cannot run scenario s, or None. build_flags: the build's
    CONFIG["build_flags"] (empty when unknown: everything compiled, as upstream's default). Causal
    needs no exclusion: FA3's mask is bottom-right aligned like attngate's, and rows that see no key
    give O = 0 (flash_attn_func's docstring); the fp32 reference check would catch it otherwise."""
    def off(flag):
        return build_flags.get(flag) is True
    if s["dtype"] == "fp16" and off("FLASHATTENTION_DISABLE_FP16"):
        return "this FlashAttention-3 build has no fp16 kernels (FLASHATTENTION_DISABLE_FP16; fa3-fwd ships bf16 and fp8 only)"
    if s["dtype"] not in ("bf16", "fp16"):
        return f"dtype {s['dtype']} is not one attngate's FA3 baseline calls (bf16, fp16)"
    d = s["head_dim"]
    if d % 8:
        return f"head dim {d}: FlashAttention-3 needs a multiple of 8"
    have = [h for h in FA3_HEAD_DIMS if not off(f"FLASHATTENTION_DISABLE_HDIM{h}")]
    if not any(h >= d for h in have):
        return (f"head dim {d}: this FlashAttention-3 build's kernels cover head dims up to "
                f"{max(have) if have else 0} ({', '.join(map(str, have)) or 'none'})")
    if s["heads_q"] % s["heads_kv"]:
        return f"heads_q {s['heads_q']} is not a multiple of heads_kv {s['heads_kv']}"
    return None


def check_results_doc(doc: dict) -> list[str]:
    """Problems with a results document (empty when it follows attngate.baseline_results/1)."""
    errs = []
    for key, typ in (("schema", str), ("created", str), ("suites", list), ("device", dict), ("method", dict),
                     ("versions", dict), ("baselines", dict), ("results", list)):
        if not isinstance(doc.get(key), typ):
            errs.append(f"top level: '{key}' missing or not a {typ.__name__}")
    if doc.get("schema") != SCHEMA:
        errs.append(f"schema is {doc.get('schema')!r}, expected {SCHEMA!r}")
    for name, b in (doc.get("baselines") or {}).items():
        if not isinstance(b, dict) or "available" not in b or "why" not in b:
            errs.append(f"baseline {name}: needs 'available' and 'why'")
    need = {"scenario": str, "suite": str, "baseline": str, "status": str, "reason": str, "flops": float,
            "event_ms": float, "kernel_ms": float, "tflops": float, "kernel_names": list}
    for i, r in enumerate(doc.get("results") or []):
        for key, typ in need.items():
            v = r.get(key)
            if typ is float and isinstance(v, int):
                v = float(v)
            if not isinstance(v, typ):
                errs.append(f"results[{i}]: '{key}' missing or not a {typ.__name__}")
        if r.get("status") not in STATUSES:
            errs.append(f"results[{i}]: status {r.get('status')!r} not one of {STATUSES}")
        if r.get("status") in ("ok", "wrong", "fallback") and not (r.get("event_ms", 0) > 0):
            errs.append(f"results[{i}]: timed status {r.get('status')} without a positive event_ms")
    return errs


def empty_result(s: dict, baseline: str, status: str, reason: str) -> dict:
    return {"scenario": s["id"], "suite": s["suite"], "baseline": baseline, "status": status, "reason": reason,
            "flops": float(s["flops"]), "event_ms": 0.0, "min_ms": 0.0, "cv": 0.0, "rel_noise": 0.0,
            "samples": 0, "kernel_ms": 0.0, "tflops": 0.0, "pct_peak": 0.0, "kernel_names": [],
            "main_kernel": "", "kernel_match": False, "kernels_per_call": 0, "check": None}


def find_scenarios_tool(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    if os.environ.get("ATTNGATE_SCENARIOS_TOOL"):
        return os.environ["ATTNGATE_SCENARIOS_TOOL"]
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    for preset in ("gpu", "cpu"):
        p = os.path.join(root, "build", preset, "scenarios", "tools", "attngate_scenarios")
        if os.access(p, os.X_OK):
            return p
    return shutil.which("attngate_scenarios")


def load_scenarios(suites: list[str], tool: str | None, json_file: str | None) -> tuple[list[dict], dict]:
    """The expanded scenarios of the suites, from attngate_scenarios (or a file it wrote), and the
    suites' metadata (tolerances) by name."""
    if json_file:
        with open(json_file) as f:
            doc = json.load(f)
        source = json_file
    else:
        if not tool:
            raise SystemExit("attngate_baselines: attngate_scenarios not found: build attngate (cmake --build "
                             "--preset gpu) or pass --attngate-scenarios PATH or --scenarios-json FILE")
        cmd = [tool, "--json"] + [a for s in suites for a in ("--suite", s)]
        out = subprocess.run(cmd, check=False, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"attngate_baselines: {' '.join(cmd)} failed: {out.stderr.strip()}")
        doc = json.loads(out.stdout)
        source = " ".join(cmd)
    if doc.get("schema") != "attngate.scenarios/1":
        raise SystemExit(f"attngate_baselines: {source}: not attngate.scenarios/1 JSON")
    meta, scenarios = {}, []
    for suite in doc["suites"]:
        if suites and suite["name"] not in suites:
            continue
        meta[suite["name"]] = {k: suite.get(k) for k in ("description", "tolerance", "settings", "file")}
        scenarios.extend(suite["scenarios"])
    missing = [s for s in suites if s not in meta]
    if missing:
        raise SystemExit(f"attngate_baselines: suite(s) {missing} not in {source}")
    meta["_source"] = source
    return scenarios, meta


def format_table(results: list[dict], peak: float) -> str:
    baselines = [b for b in BASELINES if any(r["baseline"] == b for r in results)]
    ids = []
    for r in results:
        if r["scenario"] not in ids:
            ids.append(r["scenario"])
    cell = {(r["scenario"], r["baseline"]): r for r in results}
    w = max([len(i) for i in ids] + [8])
    lines = [f"{'scenario':<{w}}  " + "  ".join(f"{b:>22}" for b in baselines),
             f"{'':<{w}}  " + "  ".join(f"{'ms / TFLOPS / status':>22}" for _ in baselines)]
    for i in ids:
        row = []
        for b in baselines:
            r = cell.get((i, b))
            if r is None:
                row.append(f"{'-':>22}")
            elif r["event_ms"] > 0:
                row.append(f"{r['event_ms']:9.4f} {r['tflops']:6.1f} {r['status'][:5]:>5}")
            else:
                row.append(f"{r['status'][:22]:>22}")
        lines.append(f"{i:<{w}}  " + "  ".join(row))
    lines.append(f"(TFLOPS = scenario FLOPs / median event time; peak {peak} dense bf16)")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------
# The best correct baseline per scenario and GPU: bench/baselines/<gpu slug>.json (pure, no torch)
# ------------------------------------------------------------------------------------------------

BEST_SCHEMA = "attngate.best_baselines/1"
BEST_SOURCE = "bench/python/attngate_baselines.py"
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BEST_SCHEMA_FILE = os.path.join(REPO_ROOT, "bench", "schema", "best_baselines.schema.json")
BEST_DIR = os.path.join(REPO_ROOT, "bench", "baselines")
# Which entries of a results document's "versions" describe each baseline.
LIBRARY_VERSIONS = {"torch_cudnn": ("torch", "cudnn"), "torch_flash": ("torch",),
                    "fa3": ("fa3-fwd", "flash_attn_3", "flash-attn-3"), "fa4": ("flash-attn-4", "fa4")}


def gpu_slug(name: str) -> str:
    """The device name lowercased, every character that is not an ASCII letter or digit one '_', as
    the gate report's reader (agent_hooks) computes it: 'NVIDIA H200' -> 'nvidia_h200'."""
    return "".join(c.lower() if c.isascii() and c.isalnum() else "_" for c in name)


def default_best_path(gpu: str) -> str:
    return os.path.join(BEST_DIR, gpu_slug(gpu) + ".json")


def load_best_schema() -> dict:
    with open(BEST_SCHEMA_FILE) as f:
        return json.load(f)


def correct_measurements(doc: dict) -> dict:
    """{scenario: {library: measurement}} of one results document (attngate.baseline_results/1): only
    the results that count as correct, i.e. status "ok" (the baseline's own kernel ran, or the
    profile could not tell) with a reference check that passed; a run with --no-check gives none."""
    date = str(doc.get("created", ""))[:10]
    versions = doc.get("versions") or {}
    out: dict = {}
    for r in doc.get("results", []):
        chk = r.get("check")
        if r.get("status") != "ok" or not isinstance(chk, dict) or chk.get("pass") is not True:
            continue
        if not (r.get("event_ms", 0) > 0 and r.get("tflops", 0) > 0):
            continue
        m = {"tflops": round(float(r["tflops"]), 1), "ms": round(float(r["event_ms"]), 5), "date": date,
             "suite": r["suite"]}
        ver = ", ".join(f"{k} {versions[k]}" for k in LIBRARY_VERSIONS.get(r["baseline"], ()) if versions.get(k))
        if ver:
            m["version"] = ver
        out.setdefault(r["scenario"], {})[r["baseline"]] = m
    return out


def merge_best(old: dict | None, runs: list[dict], today: str) -> tuple[dict, list[str]]:
    """Merges the correct results of runs (attngate.baseline_results/1 documents, all on one GPU model)
    into a best-baselines document (attngate.best_baselines/1, or None for a new one). Returns the new
    document and one line per scenario whose entry changed.

    The rule, per scenario: `measured` keeps each library's latest correct measurement; a correct
    result of this run replaces that library's earlier one, faster or slower (a re-measurement: the
    newer figure stands, so a lucky run is not kept forever), unless the earlier one is dated later;
    a result that is not correct (wrong, fallback, unsupported, error, not installed, unchecked)
    changes nothing. The entry is the fastest (highest TFLOPS) of `measured`; on a tie the library
    already listed stays. Scenarios no run measured keep their entry. Raises ValueError when a run
    was measured on another GPU than the file's."""
    gpu = old["gpu"] if old else (runs[0]["device"]["name"] if runs else "")
    for doc in runs:
        name = (doc.get("device") or {}).get("name")
        if name != gpu:
            raise ValueError(f"results of {name!r} cannot go into the best baselines of {gpu!r}")
    prev = dict((old or {}).get("scenarios") or {})
    measured = {}
    for sid, e in prev.items():
        if e.get("correct") is not True:
            continue
        mm = e.get("measured") or {e["library"]: {k: v for k, v in e.items()
                                                   if k not in ("library", "correct", "measured")}}
        # a measurement's source is written only where it is not this program
        measured[sid] = {lib: {k: v for k, v in m.items() if not (k == "source" and v == BEST_SOURCE)}
                         for lib, m in mm.items()}
    for doc in sorted(runs, key=lambda d: str(d.get("created", ""))):
        for sid, libs in correct_measurements(doc).items():
            have = measured.setdefault(sid, {})
            for lib, m in libs.items():
                if lib not in have or m["date"] >= have[lib].get("date", ""):
                    have[lib] = m
    order = {b: i for i, b in enumerate(BASELINES)}
    scenarios, changes = {}, []
    for sid in sorted(measured):
        mm = measured[sid]
        if not mm:
            continue
        was = prev.get(sid)
        lib = max(mm, key=lambda b: (mm[b]["tflops"], was is not None and b == was.get("library"), -order.get(b, 99)))
        best = mm[lib]
        entry = {"library": lib, "tflops": best["tflops"], "ms": best["ms"], "date": best["date"],
                 "suite": best["suite"], "correct": True, "source": best.get("source", BEST_SOURCE)}
        if best.get("version"):
            entry["version"] = best["version"]
        entry["measured"] = {b: mm[b] for b in sorted(mm, key=lambda b: order.get(b, 99))}
        scenarios[sid] = entry
        if was is None:
            changes.append(f"{sid}: new, {lib} {entry['tflops']:.1f} TFLOPS ({entry['date']})")
        elif (was.get("library"), was.get("tflops"), was.get("date")) != (lib, entry["tflops"], entry["date"]):
            changes.append(f"{sid}: {was.get('library')} {was.get('tflops', 0):.1f} TFLOPS ({was.get('date')}) -> "
                           f"{lib} {entry['tflops']:.1f} TFLOPS ({entry['date']})")
    return {"schema": BEST_SCHEMA, "gpu": gpu, "updated": today, "scenarios": scenarios}, changes


def update_best_file(path: str, runs: list[dict], today: str, schema: dict | None = None) -> list[str]:
    """Merges runs into the best-baselines file at path (created when missing), validating the old
    file and the new document against bench/schema/best_baselines.schema.json first; writes it
    atomically. Returns the changes (merge_best). Raises ValueError on a schema problem."""
    schema = schema or load_best_schema()
    old = None
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        errs = check_schema(old, schema)
        if errs:
            raise ValueError(f"{path} is not {BEST_SCHEMA}: " + "; ".join(errs[:5]))
    doc, changes = merge_best(old, runs, today)
    errs = check_schema(doc, schema)
    if errs:
        raise ValueError(f"merged best baselines do not follow {BEST_SCHEMA}: " + "; ".join(errs[:5]))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)
    return changes


# ------------------------------------------------------------------------------------------------
# GPU side (torch)
# ------------------------------------------------------------------------------------------------

def package_versions() -> dict:
    v = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            v[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
        except Exception as e:  # a broken install says so rather than stopping the run
            v[name] = f"error: {e}"
    return v


def nvidia_smi() -> dict:
    q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,persistence_mode"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20, check=True).stdout.strip().splitlines()
        return {"gpus": [dict(zip(q.split(","), [x.strip() for x in line.split(",")])) for line in out]}
    except Exception as e:
        return {"error": f"nvidia-smi: {e}"}


def exact_error(e: BaseException) -> str:
    """The exception as a person debugging it needs it: type, message and the innermost frames."""
    tb = traceback.extract_tb(e.__traceback__)[-3:]
    where = "; ".join(f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in tb)
    return f"{type(e).__name__}: {e}" + (f" [{where}]" if where else "")


def fa3_build_flags(config_module: str) -> dict:
    """CONFIG["build_flags"] of a FlashAttention-3 install (fa3_fwd_config / flash_attn_config), or {}
    when it has none (then every kernel is assumed built, as upstream's default)."""
    try:
        flags = importlib.import_module(config_module).CONFIG["build_flags"]
        return dict(flags) if isinstance(flags, dict) else {}
    except Exception:
        return {}


class Baseline:
    name = ""
    description = ""

    def __init__(self):
        self.available, self.why, self.module_file = False, "", ""
        try:
            self._import()
            self.available = True
        except Exception as e:  # ImportError, and whatever a broken install raises on import
            self.why = "not installed: " + exact_error(e)

    def _import(self):
        raise NotImplementedError

    def context(self):
        return contextlib.nullcontext()

    def prepare(self, s: dict):
        """A function of (q, k, v) (BSHD) returning (O BSHD, LSE [B, Hq, Sq] or None); raises
        Unsupported for a scenario the baseline cannot do."""
        raise NotImplementedError


class TorchSdpa(Baseline):
    backend_name = ""

    def _import(self):
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        self.torch, self.F, self.sdpa_kernel = torch, F, sdpa_kernel
        self.backend = getattr(SDPBackend, self.backend_name)
        self.module_file = torch.__file__

    def context(self):
        return self.sdpa_kernel([self.backend])

    def causal_mask(self, s):
        """(attn_mask, is_causal) for attngate's bottom-right causal mask; raises Unsupported where
        the backend cannot have it."""
        sq, sk, causal = s["seqlen_q"], s["seqlen_k"], s["causal"]
        if not (causal and sq != sk):
            return None, causal
        # PyTorch's is_causal is aligned top-left; attngate's mask is bottom-right.
        if self.backend_name != "FLASH_ATTENTION":
            raise Unsupported("PyTorch SDPA: is_causal is top-left aligned, and bottom-right causal "
                              "(CausalBias lower_right) with seqlen_q != seqlen_k never reaches the cuDNN backend")
        from torch.nn.attention.bias import causal_lower_right
        return causal_lower_right(sq, sk), False

    def prepare(self, s):
        F = self.F
        mask, is_causal = self.causal_mask(s)
        kwargs = {"scale": s["softmax_scale"], "is_causal": is_causal}
        if mask is not None:
            kwargs["attn_mask"] = mask
        if s["heads_q"] != s["heads_kv"]:
            kwargs["enable_gqa"] = True

        def call(q, k, v):
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), **kwargs)
            return o.transpose(1, 2), None
        return call


class TorchCudnn(TorchSdpa):
    name, backend_name = "torch_cudnn", "CUDNN_ATTENTION"
    description = ("PyTorch SDPA, cuDNN backend, O and LSE "
                   "(aten._scaled_dot_product_cudnn_attention, compute_log_sumexp=True)")

    def prepare(self, s):
        # attngate's kernels return O and LSE. F.scaled_dot_product_attention without autograd asks
        # cuDNN for O only, a variant of the same-named kernel that ran 2.6% slower to 1.6% faster on
        # the H200 gate suite (bench/results/2026-11-29-h200/cudnn_same_version), so the baseline is
        # called the way PyTorch's training forward calls it: through the op under F.sdpa, with stats.
        _, causal = self.causal_mask(s)
        op = getattr(self.torch.ops.aten, "_scaled_dot_product_cudnn_attention", None)
        if op is None:
            raise Unsupported("this PyTorch has no aten._scaled_dot_product_cudnn_attention, the only way to ask "
                              "its cuDNN backend for the LSE attngate's kernels also write")
        scale = s["softmax_scale"]

        def call(q, k, v):
            r = op(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), None, True, 0.0, causal, False,
                   scale=scale)
            lse = r[1]
            return r[0].transpose(1, 2), (lse.squeeze(-1) if lse.dim() == 4 else lse)
        return call


class TorchFlash(TorchSdpa):
    name, backend_name = "torch_flash", "FLASH_ATTENTION"
    description = "PyTorch SDPA, FlashAttention backend"


def _out_lse(r):
    if isinstance(r, (tuple, list)):
        return r[0], (r[1] if len(r) > 1 else None)
    return r, None


class FA3(Baseline):
    """FlashAttention-3: the forward-only wheel fa3-fwd (module fa3_fwd_interface; bf16/fp8, no fp16),
    else a FlashAttention-3 built from flash-attention/hopper (module flash_attn_interface)."""
    name, description = "fa3", "FlashAttention-3"

    def _import(self):
        failures = []
        for modname in FA3_MODULES:
            try:
                mod = importlib.import_module(modname)
                fn = mod.flash_attn_func
            except Exception as e:
                failures.append(f"{modname}: {exact_error(e)}")
                continue
            self.fn, self.module_file = fn, mod.__file__
            self.build_flags = fa3_build_flags(FA3_MODULES[modname])
            params = inspect.signature(fn).parameters
            # return_attn_probs=True makes flash_attn_func return (out, softmax_lse): LSE fp32
            # [B, Hq, Sq], the natural-log logsumexp of the scaled scores, as attngate's kernels write it.
            # The kernel computes the LSE either way, so asking for it costs nothing.
            self.extra = {"return_attn_probs": True} if "return_attn_probs" in params else {}
            off = sorted(k.replace("FLASHATTENTION_DISABLE_", "").replace("FLASH_ATTENTION_DISABLE_", "").lower()
                         for k, v in self.build_flags.items() if v is True)
            self.description = (f"FlashAttention-3 ({modname}.flash_attn_func"
                                f"{', return_attn_probs=True' if self.extra else ''})"
                                + (f"; build disables: {', '.join(off)}" if off else "")
                                + (f"; not used: {'; '.join(failures)}" if failures else ""))
            return
        raise ImportError("no FlashAttention-3 module imports: " + "; ".join(failures))

    def prepare(self, s):
        why = fa3_unsupported(s, self.build_flags)
        if why:
            raise Unsupported(why)
        fn, scale, causal, extra = self.fn, s["softmax_scale"], s["causal"], self.extra

        def call(q, k, v):
            return _out_lse(fn(q, k, v, softmax_scale=scale, causal=causal, **extra))
        return call


FA4_PYTHON = (3, 12)  # the CPython of the pinned FA4 wheels (requirements.txt)


class FA4(Baseline):
    name, description = "fa4", "FlashAttention-4 (flash_attn.cute)"

    def _import(self):
        try:
            import flash_attn.cute as fa4
        except ImportError as first:
            if sys.version_info[:2] != FA4_PYTHON:
                # The pinned wheels (requirements.txt, ci/fetch_fa4_wheels.sh) are CPython 3.12 builds.
                raise ImportError(f"{first}; FA4's pinned wheels are built for Python "
                                  f"{FA4_PYTHON[0]}.{FA4_PYTHON[1]} and this is {sys.version_info[0]}."
                                  f"{sys.version_info[1]}: make a venv with python{FA4_PYTHON[0]}.{FA4_PYTHON[1]} "
                                  "(bench/python/README.md, 'A virtual environment')") from None
            # FA4 ships flash_attn as a namespace package; an installed FlashAttention-2 (a regular
            # flash_attn package) wins the import even when FA4 comes first on sys.path. Then
            # flash_attn.cute is reachable by adding FA4's folder to the package's path.
            extra = [os.path.join(p, "flash_attn") for p in sys.path
                     if p and os.path.isfile(os.path.join(p, "flash_attn", "cute", "__init__.py"))]
            if not extra:
                raise
            try:
                import flash_attn
            except ImportError:
                raise first from None
            flash_attn.__path__ = list(flash_attn.__path__) + [e for e in extra if e not in flash_attn.__path__]
            fa4 = importlib.import_module("flash_attn.cute")
            self.description += f" (via {extra[0]}: the installed flash_attn package is another FlashAttention)"
        self.fn = fa4.flash_attn_func
        self.module_file = fa4.__file__
        self.extra = {"return_lse": True} if "return_lse" in inspect.signature(self.fn).parameters else {}

    def prepare(self, s):
        fn, scale, causal, extra = self.fn, s["softmax_scale"], s["causal"], self.extra

        def call(q, k, v):
            return _out_lse(fn(q, k, v, softmax_scale=scale, causal=causal, **extra))
        return call


BASELINE_CLASSES = {c.name: c for c in (TorchCudnn, TorchFlash, FA3, FA4)}


def reference_attention(torch, q, k, v, causal, scale, budget_bytes=1 << 30):
    """fp32 attention of BSHD q [B, Sq, Hq, D], k, v [B, Sk, Hkv, D]: O fp32 [B, Sq, Hq, D] and LSE
    fp32 [B, Hq, Sq]. Bottom-right causal (key j visible to query i iff j <= i + Sk - Sq), built
    as an explicit mask; rows with no visible key give O = 0, LSE = -inf. Chunked over heads and
    query rows so that the score matrix never exceeds budget_bytes."""
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    group = Hq // Hkv
    out = torch.empty((B, Sq, Hq, D), dtype=torch.float32, device=q.device)
    lse = torch.empty((B, Hq, Sq), dtype=torch.float32, device=q.device)
    rows = max(1, min(Sq, budget_bytes // (4 * Sk * 3)))
    cols = torch.arange(Sk, device=q.device)[None, :]
    for b in range(B):
        for hk in range(Hkv):
            kf = k[b, :, hk, :].float()
            vf = v[b, :, hk, :].float()
            for h in range(hk * group, (hk + 1) * group):
                for i0 in range(0, Sq, rows):
                    i1 = min(Sq, i0 + rows)
                    s = (q[b, i0:i1, h, :].float() @ kf.T) * scale
                    if causal:
                        r = torch.arange(i0, i1, device=q.device)[:, None]
                        s.masked_fill_(cols > r + (Sk - Sq), float("-inf"))
                    m = s.amax(dim=1, keepdim=True)
                    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
                    p = torch.exp(s - m)
                    l = p.sum(dim=1, keepdim=True)
                    out[b, i0:i1, h, :] = (p @ vf) / torch.where(l > 0, l, torch.ones_like(l))
                    lse[b, h, i0:i1] = (m + torch.log(l)).squeeze(1)
    return out, lse


def compare_outputs(torch, o, lse, ref_o, ref_lse, bound):
    """Max abs and relative L2 error of O (any layout convertible to BSHD), LSE error scaled as
    verify/ does (|got - ref| / max(1, |ref|)) over rows with a visible key, and the pass rule:
    finite and O max abs within the suite's bound for a sane kernel (initial_o_max_abs)."""
    of = o.float()
    nonfinite = int((~torch.isfinite(of)).sum().item())
    d = (of - ref_o).abs()
    o_max = float(torch.nan_to_num(d, nan=float("inf")).max().item())
    rel_l2 = float(torch.linalg.vector_norm(torch.nan_to_num(of - ref_o, nan=0.0)).item() /
                   max(torch.linalg.vector_norm(ref_o).item(), 1e-30))
    res = {"o_max_abs": o_max, "o_rel_l2": rel_l2, "nonfinite": nonfinite, "o_bound": bound}
    if lse is not None:
        lf = lse.float()
        if lf.dim() == 3 and lf.shape[0] == ref_lse.shape[0] and lf.shape[1] == ref_lse.shape[1] and \
                lf.shape[2] >= ref_lse.shape[2]:
            lf = lf[:, :, :ref_lse.shape[2]]
            visible = torch.isfinite(ref_lse)
            err = (lf - ref_lse).abs() / torch.clamp(ref_lse.abs(), min=1.0)
            err = torch.where(visible, err, torch.zeros_like(err))
            res["lse_max_scaled"] = float(torch.nan_to_num(err, nan=float("inf")).max().item())
        else:
            res["lse_note"] = f"LSE shape {tuple(lf.shape)} not comparable with {tuple(ref_lse.shape)}"
    res["pass"] = nonfinite == 0 and o_max <= bound
    return res


class Runner:
    def __init__(self, args):
        import torch
        self.torch, self.args = torch, args
        if not torch.cuda.is_available():
            raise SystemExit("attngate_baselines: needs a CUDA GPU (torch.cuda.is_available() is False)")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        self.dev = torch.device("cuda", args.device)
        torch.cuda.set_device(self.dev)
        self.flush = torch.empty(FLUSH_BYTES // 8, dtype=torch.int64, device=self.dev)
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)
        self.cycles_per_ms = self._calibrate_sleep()

    def _calibrate_sleep(self):
        torch = self.torch
        if not hasattr(torch.cuda, "_sleep"):
            return 0.0
        torch.cuda._sleep(1000)  # load the kernel
        torch.cuda.synchronize()
        n = 20_000_000
        self.start.record()
        torch.cuda._sleep(n)
        self.stop.record()
        self.stop.synchronize()
        ms = self.start.elapsed_time(self.stop)
        return n / ms if ms > 0 else 0.0

    def inputs(self, s, sets):
        torch = self.torch
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[s["dtype"]]
        out = []
        for i in range(sets):
            g = torch.Generator(device=self.dev)
            g.manual_seed((hash_id(s["id"]) * 1000003 + i) & 0x7FFFFFFFFFFFFFFF)

            def u(*shape):
                return (torch.rand(*shape, generator=g, device=self.dev, dtype=torch.float32) * 2 - 1).to(dt)
            out.append((u(s["batch"], s["seqlen_q"], s["heads_q"], s["head_dim"]),
                        u(s["batch"], s["seqlen_k"], s["heads_kv"], s["head_dim"]),
                        u(s["batch"], s["seqlen_k"], s["heads_kv"], s["head_dim"])))
        return out

    def input_sets_for(self, s):
        e = 2
        per_set = e * (2 * s["batch"] * s["seqlen_q"] * s["heads_q"] * s["head_dim"] +
                       2 * s["batch"] * s["seqlen_k"] * s["heads_kv"] * s["head_dim"])
        free, _ = self.torch.cuda.mem_get_info(self.dev)
        return max(1, min(self.args.input_sets, int(free * 0.25 // max(per_set, 1))))

    def timed(self, call, sets):
        torch, a = self.torch, self.args
        n = len(sets)
        host = []
        for i in range(a.warmup):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            call(*sets[i % n])
            host.append(time.perf_counter() - t0)
            torch.cuda.synchronize()
        enqueue_ms = statistics.median(host[-3:]) * 1e3 if host else 1.0
        hold_ms = max(a.min_hold_ms, 3.0 * enqueue_ms) if self.cycles_per_ms > 0 and not a.no_hold else 0.0
        cycles = int(hold_ms * self.cycles_per_ms)
        times, walls, late = [], [], 0
        for i in range(a.iters):
            self.flush.zero_()
            torch.cuda.synchronize()
            if cycles:
                torch.cuda._sleep(cycles)
            t0 = time.perf_counter()
            self.start.record()
            call(*sets[i % n])
            self.stop.record()
            t_enq = (time.perf_counter() - t0) * 1e3
            self.stop.synchronize()
            walls.append((time.perf_counter() - t0) * 1e3)
            times.append(self.start.elapsed_time(self.stop))
            if cycles and t_enq > 0.9 * hold_ms:
                late += 1
        return times, {"wall_ms": statistics.median(walls), "enqueue_ms": enqueue_ms, "hold_ms": hold_ms,
                       "held_timeouts": late}

    def profiled(self, call, sets, baseline):
        torch = self.torch
        from torch.profiler import ProfilerActivity, profile, record_function
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(self.args.profile_calls):
                with record_function("attngate_flush"):
                    self.flush.zero_()
                torch.cuda.synchronize()
                with record_function("attngate_call"):
                    call(*sets[i % len(sets)])
                torch.cuda.synchronize()
        evts = prof.events()
        cpu = []
        for e in evts:
            if str(getattr(e, "device_type", "")).endswith("CPU"):
                cpu.append({"id": id(e), "name": e.name,
                            "parent": id(e.cpu_parent) if getattr(e, "cpu_parent", None) is not None else None,
                            "start_us": e.time_range.start,
                            "kernels": [(k.name, float(k.duration)) for k in getattr(e, "kernels", [])]})
        per_call, orphans = attribute_kernels(cpu)
        summary = kernel_summary(per_call, baseline)
        summary["unattributed_kernels"] = orphans
        if not any(per_call):  # the profiler linked no kernel to a CPU range: list what ran at all
            names = sorted({e.name for e in evts if str(getattr(e, "device_type", "")).endswith("CUDA")})
            summary["kernel_names"] = names
            summary["kernel_match"] = None  # unknown, not a fallback
            summary["attribution"] = "failed: kernel names are every GPU kernel of the profile, flushes included"
        return summary

    def run_one(self, s, b, sets, reference, bound):
        torch = self.torch
        r = empty_result(s, b.name, "error", "")
        try:
            with b.context(), torch.no_grad():
                call = b.prepare(s)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        o, lse = call(*sets[0])
                        torch.cuda.synchronize()
                    except Exception as e:
                        if isinstance(e, getattr(torch.cuda, "OutOfMemoryError", ())):
                            raise
                        said = "; ".join(str(w.message) for w in caught)[:2000]
                        raise Unsupported(exact_error(e) + (f" (warnings: {said})" if said else "")) from e
                if reference is not None:
                    r["check"] = compare_outputs(torch, o, lse, reference[0], reference[1], bound)
                del o, lse
                times, extra = self.timed(call, sets)
                r.update(summarize(times))
                r.update(extra)
                if self.args.profile_calls > 0:
                    r.update(self.profiled(call, sets, b.name))
            r["tflops"] = tflops(s["flops"], r["event_ms"])
            r["pct_peak"] = 100.0 * r["tflops"] / self.args.peak_tflops if self.args.peak_tflops else 0.0
            if r["check"] is not None and not r["check"]["pass"]:
                r["status"], r["reason"] = "wrong", "output differs from the fp32 reference beyond the suite's bound"
            elif self.args.profile_calls > 0 and r.get("kernel_match") is False:
                r["status"] = "fallback"
                r["reason"] = f"the call spent its time in '{r.get('main_kernel')}', not a {b.name} kernel"
            else:
                r["status"] = "ok"
        except Unsupported as e:
            r["status"], r["reason"] = "unsupported", str(e)
        except Exception as e:
            r["status"], r["reason"] = "error", exact_error(e)
        torch.cuda.synchronize()
        return r


def hash_id(s: str) -> int:
    h = 1469598103934665603
    for c in s.encode():
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def run(args) -> int:
    scenarios, meta = load_scenarios(args.suite, find_scenarios_tool(args.attngate_scenarios), args.scenarios_json)
    if args.filter:
        rx = re.compile(args.filter)
        scenarios = [s for s in scenarios if rx.search(s["id"])]
    if args.max_scenarios:
        scenarios = scenarios[:args.max_scenarios]
    if not scenarios:
        raise SystemExit("attngate_baselines: no scenario selected")
    wanted = args.baselines.split(",") if args.baselines else list(BASELINES)
    for w in wanted:
        if w not in BASELINE_CLASSES:
            raise SystemExit(f"attngate_baselines: unknown baseline '{w}' (have {', '.join(BASELINES)})")
    baselines = [BASELINE_CLASSES[w]() for w in wanted]
    for b in baselines:
        print(f"attngate_baselines: {b.name:12s} {'available' if b.available else b.why}", flush=True)

    runner = Runner(args)
    torch = runner.torch
    props = torch.cuda.get_device_properties(runner.dev)
    doc = {
        "schema": SCHEMA,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "suites": list(args.suite),
        "scenario_source": meta.get("_source", ""),
        "device": {"name": props.name, "capability": f"{props.major}.{props.minor}",
                   "sm_count": props.multi_processor_count, "memory_bytes": props.total_memory,
                   "peak_tflops": args.peak_tflops, "nvidia_smi_before": nvidia_smi()},
        "method": {"timer": "CUDA events around one call, GPU held by torch.cuda._sleep while enqueuing"
                            if runner.cycles_per_ms > 0 and not args.no_hold else "CUDA events around one call",
                   "warmup": args.warmup, "iters": args.iters, "profile_calls": args.profile_calls,
                   "flush_bytes": FLUSH_BYTES, "flush": "int64 buffer zeroed, then stream synchronized",
                   "input_sets": args.input_sets, "distribution": "U[-1,1) like attngate's standard",
                   "reference": "fp32 PyTorch, explicit bottom-right causal mask, TF32 off" if not args.no_check
                                else "none (--no-check)",
                   "sleep_cycles_per_ms": runner.cycles_per_ms},
        "versions": dict(package_versions(), cuda=torch.version.cuda,
                         cudnn=str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else ""),
        "baselines": {b.name: {"available": b.available, "why": b.why, "description": b.description,
                               "module_file": b.module_file} for b in baselines},
        "results": [],
    }
    t_all = time.perf_counter()
    for s in scenarios:
        tol = (meta.get(s["suite"], {}).get("tolerance") or {}).get(s["dtype"], {})
        bound = float(tol.get("initial_o_max_abs", 2e-2))
        sets = runner.inputs(s, runner.input_sets_for(s))
        reference = None
        usable = [b for b in baselines if b.available]
        if usable and not args.no_check:
            q, k, v = sets[0]
            reference = reference_attention(torch, q, k, v, s["causal"], s["softmax_scale"])
        for b in baselines:
            if not b.available:
                r = empty_result(s, b.name, "not installed", b.why)
            else:
                r = runner.run_one(s, b, sets, reference, bound)
            doc["results"].append(r)
            shown = f"{r['event_ms']:.4f} ms {r['tflops']:.1f} TFLOPS" if r["event_ms"] > 0 else ""
            print(f"  {s['id']:44s} {b.name:12s} {r['status']:12s} {shown} {r['reason'][:160]}", flush=True)
        del sets, reference
        torch.cuda.empty_cache()
    doc["wall_s"] = time.perf_counter() - t_all
    doc["device"]["nvidia_smi_after"] = nvidia_smi()
    problems = check_results_doc(doc)
    if problems:
        print("attngate_baselines: internal schema problems:\n  " + "\n  ".join(problems), file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(format_table(doc["results"], args.peak_tflops))
    print(f"attngate_baselines: wrote {args.out} ({len(doc['results'])} results, {doc['wall_s']:.0f} s)")
    if args.best_out and not problems:
        if args.no_check:
            print("attngate_baselines: --no-check: no result was checked, so none enters the best baselines")
        rc = write_best(args.best_out, [doc])
        if rc:
            return rc
    return 1 if problems else 0


def today_utc() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def write_best(best_out: str, docs: list[dict]) -> int:
    """--best-out: merges docs into FILE, or with 'auto' into bench/baselines/<gpu slug>.json."""
    if not docs:
        return 0
    path = default_best_path(docs[0]["device"]["name"]) if best_out == "auto" else best_out
    try:
        changes = update_best_file(path, docs, today_utc())
    except (ValueError, OSError) as e:
        print(f"attngate_baselines: best baselines not written: {e}", file=sys.stderr)
        return 1
    print(f"attngate_baselines: merged into {path}: {len(changes)} scenario(s) changed")
    for c in changes:
        print(f"  {c}")
    return 0


def best_from(files: list[str], best_out: str) -> int:
    """--best-from: merges results documents written earlier (no GPU needed)."""
    docs = []
    for path in files:
        with open(path) as f:
            doc = json.load(f)
        problems = check_results_doc(doc)
        if problems:
            print(f"attngate_baselines: {path} is not {SCHEMA}: {'; '.join(problems[:5])}", file=sys.stderr)
            return 1
        docs.append(doc)
    return write_best(best_out, docs)


# ------------------------------------------------------------------------------------------------
# --self-test
# ------------------------------------------------------------------------------------------------

def self_test(tool: str | None) -> int:
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    # FLOPs: the closed forms against a row-by-row count of visible keys.
    for sq, sk in ((1, 1), (17, 17), (77, 33), (33, 77), (1, 4095), (4095, 1), (128, 4096), (1000, 17)):
        for causal in (False, True):
            brute = sum(max(0, min(sk, i + sk - sq + 1)) if causal else sk for i in range(sq)) / sq
            got = seqlen_k_effective(sq, sk, causal)
            check(abs(got - brute) < 1e-9 * max(1, brute), f"seqlen_k_effective({sq},{sk},{causal}) = {got}, rows say {brute}")
    s = {"batch": 32, "heads_q": 32, "seqlen_q": 512, "seqlen_k": 512, "causal": False, "head_dim": 64}
    check(scenario_flops(s) == 68719476736.0, "gate_mha_d64_s512 FLOPs")
    check(abs(tflops(68719476736.0, 0.25) - 274.877906944) < 1e-9, "TFLOPS")

    # FA4 under another Python than its pinned wheels': the reason names the Python it needs.
    fa4 = FA4()
    if not fa4.available and sys.version_info[:2] != FA4_PYTHON:
        check(f"built for Python {FA4_PYTHON[0]}.{FA4_PYTHON[1]}" in fa4.why and "A virtual environment" in fa4.why,
              f"FA4's reason under Python {sys.version_info[0]}.{sys.version_info[1]}: {fa4.why}")

    # Statistics.
    st = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    check(st["event_ms"] == 3.0 and st["min_ms"] == 1.0 and st["samples"] == 5, f"summarize {st}")
    check(summarize([])["samples"] == 0, "summarize of nothing")

    # Kernel attribution: two calls, one flush each, a kernel under no marker, nested ops.
    ev = [
        {"id": 1, "name": "attngate_flush", "parent": None, "start_us": 0, "kernels": []},
        {"id": 2, "name": "aten::zero_", "parent": 1, "start_us": 1, "kernels": [("FillFunctor<long>", 900.0)]},
        {"id": 3, "name": "attngate_call", "parent": None, "start_us": 10, "kernels": [("cute_flash_fwd", 5.0)]},
        {"id": 4, "name": "aten::sdpa", "parent": 3, "start_us": 11, "kernels": []},
        {"id": 5, "name": "aten::_cudnn_attention", "parent": 4, "start_us": 12,
         "kernels": [("cudnn_generated_sdpa_sm90_flash_fprop", 100.0), ("memset", 1.0)]},
        {"id": 7, "name": "attngate_call", "parent": None, "start_us": 30, "kernels": []},
        {"id": 8, "name": "aten::_cudnn_attention", "parent": 7, "start_us": 31,
         "kernels": [("cudnn_generated_sdpa_sm90_flash_fprop", 104.0)]},
        {"id": 9, "name": "stray", "parent": None, "start_us": 40, "kernels": [("x", 1.0)]},
        {"id": 6, "name": "attngate_call", "parent": None, "start_us": 20, "kernels": []},
    ]
    per_call, orphans = attribute_kernels(ev)
    check(len(per_call) == 3 and orphans == 1, f"attribution: {per_call}, {orphans} orphans")
    check(sorted(n for n, _ in per_call[0]) == ["cudnn_generated_sdpa_sm90_flash_fprop", "cute_flash_fwd", "memset"],
          f"first call's kernels {per_call[0]}")
    check(per_call[1] == [], "the call at 20 us launched nothing")
    ks = kernel_summary([c for c in per_call if c], "torch_cudnn")
    check(ks["main_kernel"] == "cudnn_generated_sdpa_sm90_flash_fprop" and ks["kernel_match"], f"summary {ks}")
    check(abs(ks["kernel_ms"] - 0.105) < 1e-12, f"kernel_ms {ks['kernel_ms']}")
    check(not kernel_summary([[("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", 9.0)]], "torch_cudnn")["kernel_match"],
          "the memory-efficient kernel is a fallback for torch_cudnn")
    check(not kernel_summary([[("void at::native::softmax_warp_forward", 1.0), ("ampere_bf16_gemm", 9.0)]],
                             "torch_flash")["kernel_match"], "math path is a fallback for torch_flash")
    check(kernel_summary([[("void cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>", 9.0)]], "fa3")["kernel_match"],
          "FA3's kernel")

    # The results document: what run() writes must satisfy the checker, through a JSON round trip.
    sc = {"id": "gate_mha_d64_s512", "suite": "gate", "flops": 68719476736.0}
    ok = empty_result(sc, "torch_cudnn", "ok", "")
    ok.update(summarize([0.25, 0.26, 0.24]), tflops=274.9, kernel_ms=0.24, kernel_names=["k"])
    doc = {"schema": SCHEMA, "created": "2026-11-29T00:00:00+00:00", "suites": ["gate"], "device": {}, "method": {},
           "versions": {}, "baselines": {"torch_cudnn": {"available": True, "why": ""},
                                         "fa4": {"available": False, "why": "not installed: ModuleNotFoundError"}},
           "results": [ok, empty_result(sc, "fa4", "not installed", "ModuleNotFoundError")]}
    doc = json.loads(json.dumps(doc))
    check(check_results_doc(doc) == [], f"schema: {check_results_doc(doc)}")
    bad = json.loads(json.dumps(doc))
    bad["results"][0]["status"] = "great"
    bad["results"][1]["event_ms"] = "slow"
    check(len(check_results_doc(bad)) == 2, f"schema checker misses problems: {check_results_doc(bad)}")
    table = format_table(doc["results"], DEFAULT_PEAK_TFLOPS)
    check("gate_mha_d64_s512" in table and "not installed" in table, f"table:\n{table}")

    # attngate's own scenario JSON: every scenario's FLOPs agree with this file's formula.
    if tool:
        scen, meta = load_scenarios(["gate", "prod", "smoke", "full"], tool, None)
        check(len([x for x in scen if x["suite"] == "gate"]) >= 1, "gate suite is empty")
        for x in scen:
            if abs(scenario_flops(x) - x["flops"]) > 1e-9 * x["flops"]:
                failures.append(f"{x['id']}: attngate says {x['flops']} FLOPs, this runner {scenario_flops(x)}")
            if abs(x["softmax_scale"] - 1 / math.sqrt(x["head_dim"])) > 1e-12:
                failures.append(f"{x['id']}: softmax_scale {x['softmax_scale']}")
        check("tolerance" in meta["gate"] and "bf16" in meta["gate"]["tolerance"], "suite tolerances")
        # FlashAttention-3 as the fa3-fwd wheel builds it (fa3_fwd_config.py: no fp16): every bf16
        # scenario is supported, every fp16 one is not, with the reason.
        fwd_flags = {"FLASHATTENTION_DISABLE_FP16": True, "FLASHATTENTION_DISABLE_BACKWARD": True}
        for x in scen:
            why = fa3_unsupported(x, fwd_flags)
            if (why is None) != (x["dtype"] == "bf16") or (why and "fp16" not in why):
                failures.append(f"{x['id']}: fa3 (fa3-fwd) support says {why!r}")
            if fa3_unsupported(x, {}) is not None:
                failures.append(f"{x['id']}: a full FlashAttention-3 build would not run it: {fa3_unsupported(x, {})}")
        print(f"self-test: {len(scen)} scenarios from {tool}")
    else:
        print("self-test: attngate_scenarios not given, its JSON not checked")

    # The fp32 reference, where torch is installed (CPU is enough).
    try:
        import torch
    except ImportError:
        torch = None
        print("self-test: SKIPPED the reference checks: torch is not installed")
    if torch is not None:
        g = torch.Generator().manual_seed(0)
        for (b, sq, sk, hq, hkv, d, causal) in ((1, 7, 5, 4, 2, 8, True), (2, 5, 9, 2, 1, 16, True), (1, 6, 6, 2, 2, 8, False)):
            q = torch.rand(b, sq, hq, d, generator=g) * 2 - 1
            k = torch.rand(b, sk, hkv, d, generator=g) * 2 - 1
            v = torch.rand(b, sk, hkv, d, generator=g) * 2 - 1
            scale = 1 / math.sqrt(d)
            o, lse = reference_attention(torch, q, k, v, causal, scale, budget_bytes=4 * sk * 3 * 2)
            for bb in range(b):
                for h in range(hq):
                    for i in range(sq):
                        last = min(sk - 1, i + sk - sq) if causal else sk - 1
                        if last < 0:
                            check(bool((o[bb, i, h] == 0).all()) and lse[bb, h, i].item() == float("-inf"),
                                  "fully masked row")
                            continue
                        s_ = (q[bb, i, h] @ k[bb, :last + 1, h // (hq // hkv)].T) * scale
                        p = torch.softmax(s_, 0)
                        want = p @ v[bb, :last + 1, h // (hq // hkv)]
                        check(torch.allclose(o[bb, i, h], want, atol=1e-5), f"reference O row {i}")
                        check(abs(lse[bb, h, i].item() - torch.logsumexp(s_, 0).item()) < 1e-5, f"reference LSE row {i}")
        print("self-test: reference checked against a row-by-row softmax")

    for f in failures:
        print(f"self-test FAILED: {f}")
    print("self-test: " + ("PASSED" if not failures else f"{len(failures)} failure(s)"))
    return 0 if not failures else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Details: bench/python/README.md")
    p.add_argument("--suite", action="append", default=None, help="suite to run (repeatable; default gate)")
    p.add_argument("--baselines", default="", help=f"comma-separated subset of {','.join(BASELINES)} (default all)")
    p.add_argument("--out", default=None, help="results JSON (default baselines_<suites>.json)")
    p.add_argument("--attngate-scenarios", default=None, help="path of the attngate_scenarios binary")
    p.add_argument("--scenarios-json", default=None, help="read scenarios from a file attngate_scenarios --json wrote")
    p.add_argument("--filter", default="", help="regular expression on scenario ids")
    p.add_argument("--max-scenarios", type=int, default=0)
    p.add_argument("--warmup", type=int, default=5, help="untimed calls first (JIT and graph builds happen here)")
    p.add_argument("--iters", type=int, default=30, help="timed calls")
    p.add_argument("--profile-calls", type=int, default=3, help="calls traced by torch.profiler (0: none)")
    p.add_argument("--input-sets", type=int, default=3)
    p.add_argument("--min-hold-ms", type=float, default=1.0, help="shortest GPU hold before a timed call")
    p.add_argument("--no-hold", action="store_true", help="no GPU hold: event time includes Python's launch latency")
    p.add_argument("--no-check", action="store_true", help="skip the fp32 reference check")
    p.add_argument("--peak-tflops", type=float, default=DEFAULT_PEAK_TFLOPS)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--best-out", default=None, metavar="FILE|auto",
                   help="merge this run's correct results into the best-baselines file FILE "
                        "(attngate.best_baselines/1; 'auto': bench/baselines/<gpu slug>.json); default: off")
    p.add_argument("--best-from", nargs="+", default=None, metavar="RESULTS.json",
                   help="no run: merge results files written earlier into --best-out (no GPU needed)")
    p.add_argument("--self-test", action="store_true", help="pure-Python checks; no GPU needed")
    args = p.parse_args(argv)
    if args.self_test:
        return self_test(args.attngate_scenarios)
    if args.best_from:
        if not args.best_out:
            p.error("--best-from needs --best-out FILE|auto")
        return best_from(args.best_from, args.best_out)
    args.suite = args.suite or ["gate"]
    args.out = args.out or f"baselines_{'_'.join(args.suite)}.json"
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
