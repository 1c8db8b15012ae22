#!/usr/bin/env python3
"""Plants a wrong causal mask in a copy of the candidate kernel (used to show that the gate fails
with CORRECTNESS_FAILED naming the causal scenarios). Edits the file in place; keep a copy."""
import re
import sys

path = sys.argv[1]
src = open(path).read()
# The kernel's causal flag is a template parameter named Is_causal / kCausal / causal; force the
# masking branch off by turning the runtime dispatch into "non-causal" for every launch.
new, n = re.subn(r"params\.causal\b|p\.causal\b", "false", src)
if n == 0:
    sys.exit(f"break_candidate: no causal flag found in {path}")
open(path, "w").write(new)
print(f"break_candidate: {n} reads of the causal flag replaced by false in {path}")
