"""The instruction mix of a kernel's key loop, from SASS (cuobjdump -sass), on the CPU machine.

    nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O3 --use_fast_math \
      -Ikernels/api/include -c kernels/candidate/candidate.cu -o /tmp/c.o
    cuobjdump -sass /tmp/c.o > /tmp/c.sass     # cuobjdump, nvdisasm: pip wheels nvidia-cuda-cuobjdump, -nvdisasm
    python3 sass_loop.py /tmp/c.sass Li64ELb0  # instance: head dim 64, non-causal (bf16)

The key loop is taken as the smallest backward branch whose body holds a wgmma (HGMMA). The
figures of kernels/candidate/README.md "Session 17" (R2UR, vector LOP3 per iteration) come from it.
"""
import re, sys
from collections import Counter

OPS = ("R2UR", "LOP3", "ULOP3", "SHF", "USHF", "IMAD", "VIADD", "UIADD3", "LEA", "HGMMA", "MUFU", "FFMA",
       "FMNMX", "FADD", "FMUL", "F2FP", "SYNCS", "BAR", "SHFL", "BRA")

def opcode(s):
    return (s.split()[1] if s.startswith("@") else s.split()[0]).split(".")[0]

def key_loop(sass, instance):
    for fn in re.split(r"\n\s+Function : ", open(sass).read())[1:]:
        name = fn.split("\n")[0]
        if "hopper" not in name or "bfloat" not in name or instance not in name:
            continue
        ins = [(int(a, 16), s) for a, s in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(\S.*?);", fn)]
        best = None
        for at, s in ins:
            m = re.search(r"BRA (0x[0-9a-f]+)", s)
            if m and int(m.group(1), 16) < at:
                body = [x for x in ins if int(m.group(1), 16) <= x[0] <= at]
                if any("HGMMA" in x[1] for x in body) and (best is None or len(body) < len(best)):
                    best = body
        return name, best
    sys.exit(f"no candidate_hopper bf16 instance matching {instance} in {sass}")

if __name__ == "__main__":
    name, body = key_loop(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "Li64ELb0")
    ops = Counter(opcode(s) for _, s in body)
    print(f"{len(body)} instructions per iteration:", " ".join(f"{k}={ops[k]}" for k in OPS))
