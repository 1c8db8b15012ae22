#!/usr/bin/env python3
"""Plants a correctness bug in a copy of the candidate kernel, to show that the gate fails with
CORRECTNESS_FAILED naming the scenarios the bug touches. Edits the file in place; keep a copy.

  ci/break_candidate.py [causal|tail|fp16] kernels/candidate/candidate.cu   (default: causal)

  causal  every launch runs without the causal mask          -> the causal scenarios
  tail    the last key tile is not masked at the sequence end -> lengths that are no multiple of 64
  fp16    fp16 probabilities are scaled by 0.9 before P V     -> the fp16 scenarios
"""
import re
import sys

BREAKS = {
    # The causal flag is read as p.causal / params.causal in the runtime dispatch.
    "causal": (r"params\.causal\b|p\.causal\b", "false"),
    # The tile mask's trigger: tiles that cross the sequence end or the causal diagonal.
    "tail": (r"if \(n0 \+ kBN > Sk \|\| \(kCausal && ", "if ((kCausal && "),
    # pack2's fp16 branch: the two floats packed into one register of two halves.
    "fp16": (r"__floats2half2_rn\(lo, hi\)", "__floats2half2_rn(0.9f * lo, 0.9f * hi)"),
}

args = sys.argv[1:]
mode = args.pop(0) if len(args) == 2 else "causal"
if len(args) != 1 or mode not in BREAKS:
    sys.exit(__doc__)
path = args[0]
pattern, replacement = BREAKS[mode]
src = open(path).read()
new, n = re.subn(pattern, replacement, src)
if n == 0:
    sys.exit(f"break_candidate: {mode}: pattern {pattern!r} not found in {path}")
open(path, "w").write(new)
print(f"break_candidate: {mode}: {n} place(s) changed in {path}")
