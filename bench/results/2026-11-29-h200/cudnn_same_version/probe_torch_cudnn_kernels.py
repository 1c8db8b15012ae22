"""Per-kernel CUPTI durations of PyTorch's cuDNN SDPA on two causal gate shapes (diagnostic).

Splits each call's time into cuDNN's memset and its fprop kernel, to see whether the 3% by which
PyTorch's cuDNN call was slower than attngate's in-process call (same cuDNN 9.19, same kernel
name) is in the kernel or around it.
"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

for b, s in ((16, 1024), (8, 2048)):
    q, k, v = (torch.rand(b, s, 16, 128, device="cuda", dtype=torch.bfloat16) * 2 - 1 for _ in range(3))
    call = lambda: F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                  is_causal=True)
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        for _ in range(10):
            call()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(30):
                call()
                torch.cuda.synchronize()
    print(f"b={b} s={s} causal d=128 bf16, torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}")
    for e in prof.key_averages():
        if e.device_type.name == "CUDA" or "Memset" in e.key:
            print(f"  {e.count:4d} x {e.device_time / 1e3 if hasattr(e, 'device_time') else e.cuda_time / 1e3:.4f} ms  {e.key[:100]}")
