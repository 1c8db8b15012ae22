#!/usr/bin/env python3
"""attngate_compare.py: one comparison report of a candidate kernel against every baseline.

Renders the join of attngate_bench's Google Benchmark JSON (--benchmark_out; kernels registered in
attngate: initial, candidate, cudnn, plugin_*) with attngate_baselines.py's JSON (PyTorch SDPA cuDNN
and flash, FlashAttention-3/4): per scenario and as a geometric mean over the scenarios both ran,
the candidate's speedup against each baseline, time_baseline / time_candidate on the median
CUDA-event time (above 1: the candidate is faster); where attngate_bench ran an interleaved
comparison (--compare=candidate,X), that speedup and its 95% interval for X. The join and its
geomeans come from `attngate_stats table` (bench/src/baseline_table.cpp): this script computes no
statistic of its own. Writes a terminal table, markdown (with device, clocks and versions: the
dated table the issue asks for), the joined data as JSON, and a PNG in the FlashAttention-3 paper's
layout: a panel per (head dim, causal) with sequence length on x, grouped TFLOPS bars per kernel and
library with 95% intervals, the dense bf16 peak as a line, and the in-process cuDNN's agreement
with PyTorch's as a ratio plot with the 3% band (needs matplotlib, and the shapes from
attngate_scenarios; skipped with a note otherwise).

  attngate_compare.py --bench gate_attngate.json --baselines gate_baselines.json \\
      --kernels kernels.json --md gate_report.md --png gate_report.png
  attngate_compare.py --self-test --attngate-stats build/cpu/bench/attngate_stats
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schema_check import check_schema  # noqa: E402
from stats_tool import run_stats, scenario_shapes  # noqa: E402

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BASELINE_JOIN_SCHEMA = os.path.join(_ROOT, "bench", "schema", "baseline_join.schema.json")
DEFAULT_PEAK_TFLOPS = 989.5
LABELS = {"torch_cudnn": "PyTorch cuDNN", "torch_flash": "PyTorch flash", "fa3": "FA3", "fa4": "FA4",
          "cudnn": "cuDNN (in-process)", "initial": "initial"}


# ------------------------------------------------------------------------------------------------
# The table: attngate_stats table
# ------------------------------------------------------------------------------------------------

def stats_table(tool, bench, baselines, candidate, metric):
    """The join of the result files, per scenario and as geomeans, with the cudnn agreement list:
    `attngate_stats table` computes it (bench/src/baseline_table.cpp); this script only renders it.
    Its shape: bench/schema/baseline_join.schema.json. `tool`: --attngate-stats, else stats_tool's search."""
    args = ["table", "--candidate", candidate, "--metric", metric]
    args += [a for path in bench for a in ("--bench", path)] + [a for path in baselines for a in ("--baselines", path)]
    try:
        table = run_stats(args, tool)
    except SystemExit as e:
        raise SystemExit(f"attngate_compare: {e}")
    with open(BASELINE_JOIN_SCHEMA) as f:
        errs = check_schema(table, json.load(f))
    if errs:
        raise SystemExit(f"attngate_compare: attngate_stats table does not follow {BASELINE_JOIN_SCHEMA}: " + "; ".join(errs[:3]))
    return table


def bench_context(paths):
    """The first attngate_bench file's context (device, date, peak): for the report's header."""
    for path in paths:
        with open(path) as f:
            ctx = json.load(f).get("context", {})
        if ctx:
            return ctx
    return {}


def table_entries(j):
    """Every result in the table: each row's candidate and each cell's entry."""
    for r in j["rows"]:
        for e in [r["candidate"]] + [c["entry"] for c in r["cells"].values()]:
            if e:
                yield e


# ------------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------------

def cell_text(cell):
    e, sp = cell["entry"], cell["speedup"]
    if sp:
        t = f"{sp:.3f}x"
        if cell["interleaved"] and cell["ci"]:
            t += f" [{cell['ci'][0]:.3f},{cell['ci'][1]:.3f}]"
        if e and e["status"] not in ("ok",):
            t += f" ({e['status']})"
        return t
    if e is None:
        return "-"
    return e["status"]


def terminal_table(j):
    bs = j["baselines"]
    heads = ["scenario", f"{j['candidate']} ms", "TFLOPS"] + [f"vs {LABELS.get(b, b)}" for b in bs]
    body = []
    for r in j["rows"]:
        c = r["candidate"]
        body.append([r["scenario"], f"{c['event_ms']:.4f}" if c and c["event_ms"] else (c["status"] if c else "-"),
                     f"{c['tflops']:.1f}" if c and c["tflops"] else ""] + [cell_text(r["cells"][b]) for b in bs])
    body.append(["geomean", "", ""] + [f"{j['geomean'][b]['geomean']:.3f}x (n={j['geomean'][b]['n']})"
                                       if j["geomean"][b]["n"] else "-" for b in bs])
    widths = [max(len(str(x[i])) for x in [heads] + body) for i in range(len(heads))]
    line = lambda cols: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cols, widths)))
    out = [line(heads), "  ".join("-" * w for w in widths)] + [line(b) for b in body[:-1]]
    out += ["  ".join("-" * w for w in widths), line(body[-1])]
    return "\n".join(out) + "\n"


def markdown(j, meta):
    bs = j["baselines"]
    lines = [f"# {meta.get('title', 'attngate comparison')}", ""]
    for k in ("date", "device", "clocks", "peak", "candidate", "method"):
        if meta.get(k):
            lines.append(f"- **{k}**: {meta[k]}")
    if meta.get("versions"):
        lines.append("- **versions**: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items() if v))
    lines += ["", f"Speedup of `{j['candidate']}` = time of the baseline / time of `{j['candidate']}` "
                  f"(median CUDA-event time per call, L2 flushed; above 1: `{j['candidate']}` is faster). "
                  "Intervals: attngate_bench's interleaved comparison (95% bootstrap). A status instead of a "
                  "number: the baseline did not produce a trustworthy time there (README).", ""]
    lines.append("| scenario | " + f"{j['candidate']} ms | TFLOPS | " +
                 " | ".join(f"vs {LABELS.get(b, b)}" for b in bs) + " |")
    lines.append("|" + "---|" * (3 + len(bs)))
    for r in j["rows"]:
        c = r["candidate"]
        lines.append(f"| {r['scenario']} | " + (f"{c['event_ms']:.4f}" if c and c["event_ms"] else (c["status"] if c else "-")) +
                     " | " + (f"{c['tflops']:.1f}" if c and c["tflops"] else "") + " | " +
                     " | ".join(cell_text(r["cells"][b]) for b in bs) + " |")
    lines.append("| **geomean** | | | " + " | ".join(
        f"**{j['geomean'][b]['geomean']:.3f}x** (n={j['geomean'][b]['n']})" if j["geomean"][b]["n"] else "-"
        for b in bs) + " |")
    # TFLOPS of everything, for the absolute picture.
    lines += ["", "TFLOPS per kernel (scenario FLOPs / median event time):", ""]
    ks = [j["candidate"]] + bs
    lines.append("| scenario | " + " | ".join(LABELS.get(k, k) for k in ks) + " |")
    lines.append("|" + "---|" * (1 + len(ks)))
    for r in j["rows"]:
        es = [r["candidate"]] + [r["cells"][b]["entry"] for b in bs]
        lines.append(f"| {r['scenario']} | " + " | ".join(
            (f"{e['tflops']:.1f}" + ("" if e["status"] == "ok" else f" ({e['status']})")) if e and e["tflops"] else
            (e["status"] if e else "-") for e in es) + " |")
    notes = meta.get("notes") or []
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def interval_95(entry):
    """Half-width of a 95% interval of an entry's TFLOPS, relative: 1.96 cv / sqrt(samples) (the
    normal approximation for its central value; None without cv or samples)."""
    cv, n = entry.get("cv"), entry.get("samples")
    if not cv or not n:
        return None
    return 1.96 * float(cv) / math.sqrt(float(n))


def panel_key(shape):
    """The FA3 paper's panels: one per (head dim, causal) and dtype; grouped-query shapes get their own."""
    kind = "MHA" if shape["heads_q"] == shape["heads_kv"] else f"GQA {shape['heads_q']}/{shape['heads_kv']}"
    return (kind != "MHA", shape.get("dtype", "bf16"), shape["head_dim"], shape["causal"], kind)


def tick_label(shape, crowded):
    """The sequence length, with batch and key length where a panel has two shapes of one length."""
    sq = seq_label(shape["seqlen_q"])
    if not crowded:
        return sq
    sk = "" if shape["seqlen_k"] == shape["seqlen_q"] else f"/{seq_label(shape['seqlen_k'])}"
    return f"{sq}{sk}\nb={shape['batch']}"


def plot(j, peak, path, meta, shapes, agreement):
    """The FA3 paper's layout: a panel per (head dim, causal), sequence length on x, grouped TFLOPS
    bars per kernel and library with 95% intervals, the device's dense peak as a line; dtype,
    device, versions and date in the title; then the in-process cuDNN's agreement with PyTorch's
    cuDNN as a time ratio per scenario with the 3% band."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"plot skipped: matplotlib is not installed ({e})"
    rows = [r for r in j["rows"] if r["scenario"] in shapes]
    if not rows:
        return "plot skipped: no scenario shapes (attngate_scenarios not found; pass --attngate-scenarios)"
    kernels = [j["candidate"]] + [b for b in j["baselines"] if any(r["cells"][b]["entry"] for r in rows)]
    panels = {}
    for r in rows:
        panels.setdefault(panel_key(shapes[r["scenario"]]), []).append(r)
    keys = sorted(panels)
    dtypes = sorted({k[1] for k in keys})
    dropped = len(j["rows"]) - len(rows)
    cols = 2
    nrows = (len(keys) + cols - 1) // cols + (1 if agreement else 0)
    fig = plt.figure(figsize=(15, 4.2 * nrows), constrained_layout=True)
    grid = fig.add_gridspec(nrows, cols)
    cmap = plt.get_cmap("tab10")
    colour = {k: ("black" if k == j["candidate"] else cmap(i % 10)) for i, k in enumerate(kernels)}
    width = 0.8 / len(kernels)
    labelled, legend, axes = set(), [[], []], []
    for p_i, key in enumerate(keys):
        ax = fig.add_subplot(grid[p_i // cols, p_i % cols])
        prow = sorted(panels[key], key=lambda r: (shapes[r["scenario"]]["seqlen_q"], shapes[r["scenario"]]["batch"]))
        lengths = [shapes[r["scenario"]]["seqlen_q"] for r in prow]
        crowded = len(set(lengths)) < len(lengths)
        for k_i, k in enumerate(kernels):
            for x, r in enumerate(prow):
                e = r["candidate"] if k == j["candidate"] else r["cells"][k]["entry"]
                if not e or not e.get("tflops") or e.get("status", "ok") != "ok":
                    continue
                half = interval_95(e)
                ax.bar(x - 0.4 + width * (k_i + 0.5), e["tflops"], width=width, color=colour[k],
                       yerr=None if half is None else half * e["tflops"], capsize=2, ecolor="0.3",
                       label=None if k in labelled else LABELS.get(k, k))
                labelled.add(k)
        if peak:
            ax.axhline(peak, color="red", linestyle="--", linewidth=1)
            ax.text(len(prow) - 0.5, peak, f"dense bf16 peak {peak:g}", color="red", ha="right", va="bottom", fontsize=7)
            ax.set_ylim(0, peak * 1.1)
        _, dtype, d, causal, kind = key
        ax.set_title(f"head dim {d}, {'causal' if causal else 'non-causal'}" + ("" if kind == "MHA" else f", {kind}")
                     + (f", {dtype}" if len(dtypes) > 1 else ""), fontsize=10)
        ax.set_xticks(range(len(prow)))
        ax.set_xlim(-0.5, max(len(prow), 3) - 0.5)  # the same bar width in a panel of one or two lengths
        ax.set_xticklabels([tick_label(shapes[r["scenario"]], crowded) for r in prow], fontsize=8 if crowded else None)
        ax.set_xlabel("sequence length")
        ax.set_ylabel("TFLOPS")
        ax.grid(axis="y", alpha=0.3)
        h, l = ax.get_legend_handles_labels()
        legend[0] += h
        legend[1] += l
        axes.append(ax)
    if axes and legend[0]:  # every kernel once, wherever its first bar is
        axes[0].legend(legend[0], legend[1], fontsize=7, ncol=min(4, len(kernels)), loc="upper left")
    if agreement:
        ax = fig.add_subplot(grid[nrows - 1, :])
        xs = range(len(agreement))
        ax.axhspan(0.97, 1.03, color="green", alpha=0.12, label="within 3%")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.plot(xs, [a["ratio"] for a in agreement], marker="o", linestyle="none", color="black")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([a["scenario"] for a in agreement], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("time ratio")
        ax.set_title("agreement: in-process cuDNN time / PyTorch cuDNN time, per scenario "
                     "(meaningful when both load the same cuDNN)", fontsize=10)
        ax.legend(fontsize=7, loc="upper right")
        ax.grid(axis="y", alpha=0.3)
    v = meta.get("versions", {})
    ver = ", ".join(f"{k} {v[k]}" for k in ("torch", "fa3-fwd", "flash-attn-4", "PyTorch's cuDNN") if k in v)
    date = str(meta.get("date", ""))[:10]
    fig.suptitle(f"{meta['title']}: forward TFLOPS, {', '.join(dtypes)}, {meta.get('device', '?')}, {date}\n{ver}\n"
                 "bars: central value; whiskers: 95% interval (1.96 cv / sqrt(samples))"
                 + (f"\n({dropped} rows without a known shape left out)" if dropped else ""), fontsize=10)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"wrote {path} ({len(keys)} panels, {len(kernels)} kernels" + (f", {dropped} rows without a shape left out)" if dropped else ")")


def seq_label(n):
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def build_meta(ctx, base_doc, kernels_doc, candidate, peak):
    meta = {"title": f"attngate: {candidate} against the baselines", "candidate": candidate,
            "peak": f"{peak:g} TFLOPS dense bf16 (pct of peak in the plot)", "notes": []}
    if ctx.get("date"):
        meta["date"] = ctx["date"]
    elif base_doc:
        meta["date"] = base_doc.get("created", "")
    dev = ctx.get("attngate_device") or (base_doc or {}).get("device", {}).get("name", "")
    meta["device"] = dev + (f" ({ctx.get('host_name')})" if ctx.get("host_name") else "")
    versions = {}
    if base_doc:
        v = base_doc.get("versions", {})
        for k in ("torch", "cuda", "cudnn", "triton", "fa3-fwd", "flash-attn-4", "flash_attn_3", "flash-attn-3",
                  "nvidia-cutlass-dsl", "quack-kernels", "cuda-bindings"):
            if v.get(k):
                versions[{"cudnn": "PyTorch's cuDNN", "cuda": "PyTorch CUDA"}.get(k, k)] = v[k]
        smi = base_doc.get("device", {}).get("nvidia_smi_before", {}).get("gpus", [])
        if smi:
            g = smi[0]
            meta["clocks"] = (f"runner: SM {g.get('clocks.sm')} / max {g.get('clocks.max.sm')} MHz, driver "
                              f"{g.get('driver_version')}, power limit {g.get('power.limit')} W")
            versions["driver"] = g.get("driver_version")
        for name, b in base_doc.get("baselines", {}).items():
            if not b.get("available"):
                meta["notes"].append(f"{LABELS.get(name, name)}: {b.get('why')}")
        m = base_doc.get("method", {})
        if m.get("iters"):
            meta["method"] = (f"Python baselines: {m.get('warmup')} warm-ups, median of {m.get('iters')} calls, "
                              f"{int(m.get('flush_bytes', 0)) >> 20} MB flush, {m.get('timer', 'CUDA events')}; "
                              "attngate kernels: attngate_bench (bench/README.md)")
    if kernels_doc:
        for k in kernels_doc.get("kernels", []):
            if k["name"] == "cudnn":
                versions["in-process cuDNN"] = k["description"].split("; ")[1] if "; " in k["description"] else k["description"]
    meta["versions"] = versions
    return meta


def sm_clock_line(j):
    clocks = [e.get("sm_clock_mhz", 0.0) for e in table_entries(j) if e.get("sm_clock_mhz")]
    if not clocks:
        return ""
    return f"attngate_bench median SM clock {statistics.median(clocks):.0f} MHz (range {min(clocks):.0f}-{max(clocks):.0f})"


def run(args):
    j = stats_table(args.attngate_stats, args.bench or [], args.baselines or [], args.candidate,
                    args.metric)
    agree = j.pop("agreement")
    ctx = bench_context(args.bench or [])
    base_doc = None
    if args.baselines:  # its header: the last baselines file's (attngate_stats checked its schema)
        with open(args.baselines[-1]) as f:
            base_doc = json.load(f)
    kernels_doc = None
    if args.kernels:
        with open(args.kernels) as f:
            kernels_doc = json.load(f)
    peak = args.peak_tflops or float(ctx.get("attngate_peak_tflops", 0) or 0) or DEFAULT_PEAK_TFLOPS
    meta = build_meta(ctx, base_doc, kernels_doc, args.candidate, peak)
    clocks = sm_clock_line(j)
    if clocks:
        meta["clocks"] = clocks + ("; " + meta["clocks"] if meta.get("clocks") else "")
    if agree:
        worst = max(agree, key=lambda a: abs(a["ratio"] - 1))
        n_in = sum(a["within"] for a in agree)
        meta["notes"].append(f"in-process cudnn vs PyTorch cuDNN, time ratio per scenario: {n_in}/{len(agree)} within "
                             f"3%, worst {worst['ratio']:.3f} on {worst['scenario']} (same cuDNN version required "
                             "for this check to mean anything; see versions)")
    print(terminal_table(j))
    for n in meta["notes"]:
        print("note: " + n)
    if args.md:
        with open(args.md, "w") as f:
            f.write(markdown(j, meta))
        print(f"attngate_compare: wrote {args.md}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"schema": "attngate.baseline_table/1", "meta": meta, "comparison": j, "agreement": agree}, f,
                      indent=1, default=str)
        print(f"attngate_compare: wrote {args.json}")
    if args.png:
        shapes = getattr(args, "shapes", None) or scenario_shapes(getattr(args, "attngate_scenarios", None))
        print("attngate_compare: " + plot(j, peak, args.png, meta, shapes, agree))
    return 0


# ------------------------------------------------------------------------------------------------
# --self-test
# ------------------------------------------------------------------------------------------------

def self_test(tool):
    """The whole path on synthetic files: attngate_stats table joins them, this script renders."""
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    def error_of(call):
        try:
            call()
        except SystemExit as e:
            return str(e)
        return ""

    def gb(name, **c):
        d = {"name": name + "/iterations:1/manual_time", "run_type": "iteration", "real_time": c.get("event_ms", 0) * 1e3}
        d.update(c)
        return d

    bench = {"context": {"date": "2026-11-29T10:00:00", "host_name": "h200", "attngate_device": "NVIDIA H200",
                         "attngate_peak_tflops": "989.500000"},
             "benchmarks": [
                 gb("candidate/s1", event_ms=1.0, kernel_ms=0.99, tflops=500.0, sm_clock_mhz=1980),
                 gb("initial/s1", event_ms=1.2, kernel_ms=1.19, tflops=416.7, sm_clock_mhz=1980),
                 gb("cudnn/s1", event_ms=0.8, kernel_ms=0.79, tflops=625.0, sm_clock_mhz=1980),
                 gb("candidate/s2", event_ms=2.0, kernel_ms=1.99, tflops=400.0, sm_clock_mhz=1900),
                 gb("initial/s2", event_ms=4.0, kernel_ms=3.99, tflops=200.0, sm_clock_mhz=1900),
                 {"name": "cudnn/s2/iterations:1/manual_time", "run_type": "iteration", "error_occurred": True,
                  "error_message": "unsupported: cudnn: cuDNN 9.14.0 declines it: ..."},
                 gb("candidate_vs_initial/s3", event_ms=1.0, base_event_ms=1.5, tflops=300.0, base_tflops=200.0,
                    speedup=1.5, speedup_lo=1.45, speedup_hi=1.55),
                 {"name": "candidate/s1", "run_type": "aggregate", "event_ms": 99.0},
             ]}
    base = {"schema": "attngate.baseline_results/1", "created": "2026-11-29T11:00:00+00:00",
            "device": {"name": "NVIDIA H200", "nvidia_smi_before": {"gpus": [{"clocks.sm": "1980", "clocks.max.sm": "1980",
                                                                              "driver_version": "580.159.04",
                                                                              "power.limit": "700"}]}},
            "method": {"warmup": 5, "iters": 30, "flush_bytes": 256 << 20},
            "versions": {"torch": "2.11.0", "cudnn": "91900", "cuda": "13.0"},
            "baselines": {"torch_cudnn": {"available": True, "why": ""},
                          "fa4": {"available": False, "why": "not installed: ModuleNotFoundError: flash_attn"}},
            "results": [
                {"scenario": "s1", "suite": "gate", "baseline": "torch_cudnn", "status": "ok", "reason": "",
                 "event_ms": 0.81, "kernel_ms": 0.8, "tflops": 617.0, "kernel_names": ["cudnn_x"]},
                {"scenario": "s2", "suite": "gate", "baseline": "torch_cudnn", "status": "fallback", "reason": "math",
                 "event_ms": 8.0, "kernel_ms": 7.9, "tflops": 100.0, "kernel_names": ["gemm"]},
                {"scenario": "s1", "suite": "gate", "baseline": "fa4", "status": "not installed", "reason": "x",
                 "event_ms": 0.0, "kernel_ms": 0.0, "tflops": 0.0, "kernel_names": []},
                {"scenario": "prod_s9", "suite": "prod", "baseline": "torch_cudnn", "status": "ok", "reason": "",
                 "event_ms": 5.0, "kernel_ms": 4.9, "tflops": 300.0, "kernel_names": ["cudnn_x"]},
            ]}
    kernels = {"schema": "attngate.kernels/1", "kernels": [
        {"name": "cudnn", "description": "cuDNN fused SDPA forward via the cudnn-frontend graph API; libcudnn 9.19.0 "
                                         "(/x/libcudnn.so.9), built with cuDNN 9.19.0 headers; graphs cached"}]}
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, doc in (("bench", bench), ("base", base), ("kernels", kernels)):
            paths[name] = os.path.join(d, name + ".json")
            with open(paths[name], "w") as f:
                json.dump(doc, f)
        try:
            j = stats_table(tool, [paths["bench"]], [paths["base"]], "candidate", "event_ms")
        except SystemExit as e:
            print(f"self-test FAILED: {e}")
            return 1
        agree = j.pop("agreement")
        row = {r["scenario"]: r for r in j["rows"]}
        check(list(row) == ["s1", "s2", "s3"], f"rows {list(row)}: only the scenarios attngate_bench timed")
        check(row["s1"]["candidate"]["event_ms"] == 1.0, "aggregates are ignored, iterations taken")
        check(row["s2"]["cells"]["cudnn"]["entry"]["status"] == "unsupported", "an unsupported benchmark is a skip, not an error")
        check(row["s3"]["cells"]["initial"]["entry"]["event_ms"] == 1.5 and row["s3"]["cells"]["initial"]["speedup"] == 1.5,
              "comparison-mode benchmarks give both kernels and the interleaved speedup")
        check(j["baselines"][:3] == ["initial", "cudnn", "torch_cudnn"], f"baseline order {j['baselines']}")
        check(abs(row["s1"]["cells"]["initial"]["speedup"] - 1.2) < 1e-12, "speedup = time_base / time_candidate")
        check(abs(row["s1"]["cells"]["cudnn"]["speedup"] - 0.8) < 1e-12, "a slower candidate has speedup < 1")
        check(row["s2"]["cells"]["cudnn"]["speedup"] is None, "no speedup where the baseline was unsupported")
        check(row["s3"]["cells"]["initial"]["interleaved"], "the interleaved speedup is used")
        g = j["geomean"]["initial"]
        check(g["n"] == 3 and abs(g["geomean"] - (1.2 * 2.0 * 1.5) ** (1 / 3)) < 1e-12, f"geomean {g}")
        check(j["geomean"]["torch_cudnn"]["n"] == 1 and j["geomean"]["torch_cudnn"]["n_shown"] == 2,
              "a fallback is shown but not averaged")
        check(j["geomean"]["fa4"]["n"] == 0, "not installed: nothing averaged")
        check(len(agree) == 1 and abs(agree[0]["ratio"] - 0.8 / 0.81) < 1e-12 and agree[0]["within"], f"agreement {agree}")
        meta = build_meta(bench["context"], base, kernels, "candidate", 989.5)
        md = markdown(j, meta)
        for want in ("| s1 |", "**geomean**", "NVIDIA H200", "torch 2.11.0", "in-process cuDNN libcudnn 9.19.0",
                     "not installed", "1.500x [1.450,1.550]", "driver 580.159.04"):
            check(want in md, f"markdown lacks {want!r}")
        t = terminal_table(j)
        check("geomean" in t and "unsupported" in t, "terminal table")
        out_md, out_json, out_png = (os.path.join(d, x) for x in ("r.md", "r.json", "r.png"))
        shape = {"batch": 1, "seqlen_q": 4096, "seqlen_k": 4096, "heads_q": 16, "heads_kv": 16, "head_dim": 128,
                 "causal": False}
        shapes = {"s1": shape, "s2": dict(shape, seqlen_q=8192, seqlen_k=8192),
                  "prod_s9": dict(shape, causal=True, heads_kv=4)}
        rc = run(argparse.Namespace(bench=[paths["bench"]], baselines=[paths["base"]], kernels=paths["kernels"],
                                    candidate="candidate", metric="event_ms", peak_tflops=0.0, md=out_md,
                                    json=out_json, png=out_png, attngate_stats=tool, shapes=shapes))
        check(rc == 0 and os.path.exists(out_md) and os.path.exists(out_json), "run() wrote its files")
        with open(out_json) as f:
            written = json.load(f)
        check(written["comparison"] == j and written["agreement"] == agree and "agreement" not in written["comparison"],
              "the JSON holds the table as attngate_stats computed it")
        bad = os.path.join(d, "bad.json")
        with open(bad, "w") as f:
            json.dump(dict(base, schema="attngate.baseline_results/0"), f)
        check(bad in error_of(lambda: stats_table(tool, [paths["bench"]], [bad], "candidate", "event_ms")),
              "a baselines file of another schema is refused, naming the file")
        check("no results of the candidate 'nobody'" in
              error_of(lambda: stats_table(tool, [paths["bench"]], [], "nobody", "event_ms")), "an absent candidate")
        check("build it" in error_of(lambda: stats_table(os.path.join(d, "no_attngate_stats"), [paths["bench"]], [],
                                                         "candidate", "event_ms")),
              "a missing attngate_stats says how to build it")
        try:
            import matplotlib  # noqa: F401
            with open(out_png, "rb") as f:
                check(f.read(8) == b"\x89PNG\r\n\x1a\n", "the plot is a PNG")
        except ImportError:
            print("self-test: SKIPPED the plot: matplotlib is not installed")
    for f in failures:
        print(f"self-test FAILED: {f}")
    print("self-test: " + ("PASSED" if not failures else f"{len(failures)} failure(s)"))
    return 0 if not failures else 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Details: bench/python/README.md")
    p.add_argument("--bench", action="append", help="attngate_bench --benchmark_out JSON (repeatable)")
    p.add_argument("--baselines", action="append", help="attngate_baselines.py JSON (repeatable)")
    p.add_argument("--kernels", help="attngate_kernels --json output (records the in-process cuDNN version)")
    p.add_argument("--candidate", default="candidate", help="the kernel whose speedup is reported (default candidate)")
    p.add_argument("--metric", default="event_ms", choices=("event_ms", "kernel_ms"),
                   help="time compared (default: median CUDA-event time)")
    p.add_argument("--peak-tflops", type=float, default=0.0, help="dense bf16 peak (default: attngate_bench's, else 989.5)")
    p.add_argument("--md", help="markdown output")
    p.add_argument("--json", help="joined data as JSON")
    p.add_argument("--png", help="plot (needs matplotlib)")
    p.add_argument("--attngate-scenarios", metavar="PATH",
                   help="attngate_scenarios, for the plot's panels (default: build/gpu or build/cpu of this checkout, else PATH)")
    p.add_argument("--attngate-stats", metavar="PATH",
                   help="the attngate_stats binary, which computes the table (default: $ATTNGATE_STATS, else "
                        "build/gpu or build/cpu of this checkout, else PATH)")
    p.add_argument("--self-test", action="store_true")
    args = p.parse_args(argv)
    if args.self_test:
        return self_test(args.attngate_stats)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
