"""Joins this session's TFLOPS into gate_table.md and prod_table.md (python3 tables.py, here),
with session 17's tables.py (same sources, same columns).

Sources: v16 and the in-process cuDNN kernel from call 1's `attngate_bench
--compare=candidate,cudnn` (`vs_cudnn.txt`, `prod_vs_cudnn.txt`: interleaved, same call); FA3 from
call 1's `attngate_baselines.py --baselines fa3` (`gate_fa3.json`, `prod_fa3.json`), same machine,
same day; "v16 (gate run)" from call 1's gate report (`report_v16_call1.json`); FA4 and PyTorch's
cuDNN from bench/baselines/nvidia_h200.json (2026-12-01, same machine).
"""
import pathlib, sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-12-04-h200-session17"))
from tables import bench, fa3, gate_report, table  # noqa: E402

if __name__ == "__main__":
    g = table("# Gate suite, H200, bf16, 2026-12-04 (session 18); TFLOPS", bench("vs_cudnn.txt", HERE),
              fa3("gate_fa3.json", HERE), ("v16 (gate run)", gate_report("report_v16_call1.json", HERE)), "v16")
    p = table("# Prod suite, H200, 2026-12-04 (session 18); TFLOPS", bench("prod_vs_cudnn.txt", HERE),
              fa3("prod_fa3.json", HERE), None, "v16")
    (HERE / "gate_table.md").write_text(g)
    (HERE / "prod_table.md").write_text(p)
    print(g.splitlines()[-1]); print(p.splitlines()[-1])
