#!/usr/bin/env bash
# Stands in for attngate_bench in the driver's CPU test. FAKE_MODE=bench_fail: the benchmark errors
# with a side-stream message; bench_flag: timed with foreign_stream_kernels 4; otherwise timed clean.
set -u
out="" compare="" filter="" perf=""
for a in "$@"; do
  case "$a" in
    --benchmark_out=*) out="${a#--benchmark_out=}" ;;
    --compare=*) compare="${a#--compare=}" ;;
    --compare_out=*) perf="${a#--compare_out=}" ;;
    --benchmark_filter=*) filter="${a#--benchmark_filter=^}" ;;
  esac
done
if [ "${FAKE_MODE:-}" = bench_fail ]; then
  printf '{"benchmarks": [{"name": "%s/iterations:1/manual_time", "error_occurred": true, "error_message": "timed-run check [side stream]: x on adv_a: late"}]}\n' "$filter" > "$out"
  exit 1
fi
foreign=0
[ "${FAKE_MODE:-}" = bench_flag ] && foreign=4
printf '{"benchmarks": [{"name": "%s/iterations:1/manual_time", "real_time": 10.0, "kernels_per_call": 1, "foreign_stream_kernels": %s, "speedup": 1.0}]}\n' "$filter" "$foreign" > "$out"
printf '{"schema": "attngate.comparison/1", "scenarios": [{"id": "%s", "kernel_timing": {"foreign_stream_kernels": %s}}], "failed": []}\n' "${filter#*/}" "$foreign" > "$perf"
exit 0
