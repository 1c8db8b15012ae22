"""Does PyTorch's cuDNN SDPA run longer or shorter when it also writes the softmax stats (LSE)?

attngate's kernels always return O and LSE; PyTorch's F.scaled_dot_product_attention under no_grad
asks cuDNN for O only (return_softmaxstats=False). The in-process cudnn kernel and PyTorch's call
ran the same-named cuDNN kernel but differed by 3% on two causal gate shapes. This probe times
PyTorch's cuDNN backend both ways, interleaved call by call, on every gate scenario, with the
runner's method (256 MB flush, stream synchronized, GPU held by a spin kernel while the call is
enqueued, CUDA events around the call), and lists the kernels each way ran.

  attngate_scenarios --suite gate --json >gate.json && python3 probe_cudnn_stats.py gate.json OUT_JSON
"""
import json
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

ITERS, WARMUP, SETS = 60, 5, 3
scen = [s for suite in json.load(open(sys.argv[1]))["suites"] if suite["name"] == "gate" for s in suite["scenarios"]]
dev = torch.device("cuda")
flush = torch.empty((256 << 20) // 8, dtype=torch.int64, device=dev)
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
torch.cuda._sleep(1000)
torch.cuda.synchronize()
start.record(); torch.cuda._sleep(20_000_000); stop.record(); stop.synchronize()
cycles_per_ms = 20_000_000 / start.elapsed_time(stop)


def make(s, stats):
    kw = {"scale": s["softmax_scale"], "is_causal": s["causal"]}
    if s["heads_q"] != s["heads_kv"]:
        kw["enable_gqa"] = True

    def call(q, k, v):
        if stats:  # q requires grad: autograd keeps the LSE for backward, so cuDNN writes the stats
            with torch.enable_grad():
                return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), **kw)
        with torch.no_grad():
            return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), **kw)
    return call


out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "iters": ITERS, "results": []}
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    for s in scen:
        if s["causal"] and s["seqlen_q"] != s["seqlen_k"]:
            continue
        b, sq, sk, hq, hkv, d = (s[x] for x in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim"))
        sets = [tuple((torch.rand(b, n, h, d, device=dev) * 2 - 1).to(torch.bfloat16)
                      for n, h in ((sq, hq), (sk, hkv), (sk, hkv))) for _ in range(SETS)]
        grad_sets = [(q.detach().requires_grad_(), k, v) for q, k, v in sets]
        calls = {"no_stats": make(s, False), "stats": make(s, True)}
        data = {"no_stats": sets, "stats": grad_sets}
        for name, c in calls.items():
            for i in range(WARMUP):
                c(*data[name][i % SETS])
        torch.cuda.synchronize()
        times = {k: [] for k in calls}
        for i in range(ITERS):
            for name, c in calls.items():
                flush.zero_()
                torch.cuda.synchronize()
                torch.cuda._sleep(int(cycles_per_ms))
                start.record()
                c(*data[name][i % SETS])
                stop.record()
                stop.synchronize()
                times[name].append(start.elapsed_time(stop))
        kern = {}
        for name, c in calls.items():
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for i in range(5):
                    flush.zero_()
                    torch.cuda.synchronize()
                    c(*data[name][i % SETS])
                    torch.cuda.synchronize()
            kern[name] = sorted(((e.key[:110], e.count, round(e.device_time / 1e3, 4))
                                 for e in prof.key_averages() if e.device_time > 0 and "fill" not in e.key
                                 and e.count >= 5 and "elementwise" not in e.key), key=lambda x: -x[2])[:3]
        med = {k: statistics.median(v) for k, v in times.items()}
        r = {"id": s["id"], "ms": med, "stats_over_no_stats": med["stats"] / med["no_stats"], "kernels": kern}
        out["results"].append(r)
        print(f"{s['id']:42s} no_stats {med['no_stats']:.4f}  stats {med['stats']:.4f}  ratio {r['stats_over_no_stats']:.3f}"
              f"  {kern['stats'][0][0][:60] if kern['stats'] else ''}", flush=True)
        del sets, grad_sets, data
        torch.cuda.empty_cache()
json.dump(out, open(sys.argv[2], "w"), indent=1)
