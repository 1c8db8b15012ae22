"""Joins this session's TFLOPS into gate_table.md and prod_table.md (python3 tables.py, here).

Sources: v6 and the in-process cuDNN kernel from `attngate_bench --compare=candidate,cudnn`
(interleaved, same call: the `tflops=` and `base_tflops=` counters of each benchmark line);
FA3 from `attngate_baselines.py --baselines fa3` (`results[].tflops`), same machine, same day;
v11 from its gate report (`scenarios[].candidate.tflops`); FA4 and PyTorch's cuDNN from
bench/baselines/nvidia_h200.json (2026-12-01, same machine). Ratios are throughput ratios;
the geomean row is over every scenario of the suite.
"""
import json, math, re, pathlib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]

def bench(path, here=HERE):
    out = {}
    for line in open(here / path):
        if not line.startswith("candidate_vs_cudnn/"):
            continue
        kv = dict(re.findall(r" (\w+)=([0-9.eE+-]+)", line))
        out[line.split("/")[1]] = (float(kv["tflops"]), float(kv["base_tflops"]))
    return out

def fa3(path, here=HERE):
    return {r["scenario"]: r["tflops"] for r in json.load(open(here / path))["results"] if r["status"] == "ok"}

def gate_report(path, here=HERE):
    return {s["id"]: s["candidate"]["tflops"] for s in json.load(open(here / path))["scenarios"]}

def stored():
    s = json.load(open(ROOT / "bench/baselines/nvidia_h200.json"))["scenarios"]
    return {k: v.get("measured", {}) for k, v in s.items()}

def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))

def table(title, rows_bench, rows_fa3, extra=None, name="v6"):
    st = stored()
    cols = [name] + ([extra[0]] if extra else []) + ["cuDNN (in-process)", "FA3", "FA4 (12-01)", "torch cuDNN (12-01)",
                                                      f"{name} / cuDNN", f"{name} / FA3"]
    lines = [f"{title}\n", "| scenario | " + " | ".join(cols) + " |", "| --- |" + " ---: |" * len(cols)]
    r_cudnn, r_fa3 = [], []
    for sid, (v6, cud) in rows_bench.items():
        f3 = rows_fa3.get(sid)
        f4 = st.get(sid, {}).get("fa4", {}).get("tflops")
        tc = st.get(sid, {}).get("torch_cudnn", {}).get("tflops")
        cells = [f"{v6:.0f}"] + ([f"{extra[1][sid]:.0f}"] if extra else []) + [
            f"{cud:.0f}", f"{f3:.0f}" if f3 else "-", f"{f4:.0f}" if f4 else "-", f"{tc:.0f}" if tc else "-",
            f"{v6 / cud:.3f}", f"{v6 / f3:.3f}" if f3 else "-"]
        r_cudnn.append(v6 / cud)
        if f3: r_fa3.append(v6 / f3)
        lines.append(f"| {sid} | " + " | ".join(cells) + " |")
    lines.append(f"\ngeomean {name} / cuDNN {geomean(r_cudnn):.4f} over {len(r_cudnn)} scenarios; "
                 f"{name} / FA3 {geomean(r_fa3):.4f} over {len(r_fa3)}.\n")
    return "\n".join(lines)

if __name__ == "__main__":
    g = table("# Gate suite, H200, bf16, 2026-12-04 (session 17); TFLOPS", bench("v6_vs_cudnn.txt"),
              fa3("gate_fa3.json"), ("v11 (gate run)", gate_report("report_v11.json")))
    p = table("# Prod suite, H200, 2026-12-04 (session 17); TFLOPS", bench("prod_v6_vs_cudnn.txt"), fa3("prod_fa3.json"))
    (HERE / "gate_table.md").write_text(g)
    (HERE / "prod_table.md").write_text(p)
    print(g.splitlines()[-1]); print(p.splitlines()[-1])
