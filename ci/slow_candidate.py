#!/usr/bin/env python3
"""Plants an extra synchronization (a short sleep and a barrier per key tile) in the candidate
kernel, so a regression run can show it is judged SLOWER. Edits the file in place; keep a copy."""
import sys

path = sys.argv[1]
src = open(path).read()
anchor = "cp_async_wait<0>();\n    __syncthreads();\n"
if src.count(anchor) != 1:
    sys.exit(f"slow_candidate: the main loop's barrier was not found exactly once in {path}")
src = src.replace(anchor, anchor + "    __nanosleep(100);\n    __syncthreads();\n")
open(path, "w").write(src)
print(f"slow_candidate: extra sleep and barrier per key tile in {path}")
