#!/usr/bin/env bash
# Stands in for attngate_verify in the driver's CPU test. FAKE_MODE picks the behaviour:
#   fail: adv_a/adv_b fail with an O error, adv_c passes; pass: all pass; error: status error with
#   an illegal-address detail, exit 1; segv: dies by SIGSEGV without results; hang: sleeps.
set -u
filter="" results=""
for a in "$@"; do
  case "$a" in
    --gtest_filter=*) filter="${a#--gtest_filter=}" ;;
    --results-dir=*) results="${a#--results-dir=}" ;;
  esac
done
case "${FAKE_MODE:-}" in
  hang) sleep 600; exit 0 ;;
  segv) kill -SEGV $$ ;;
esac
rc=0
IFS=':' read -ra tests <<< "$filter"
for t in "${tests[@]}"; do
  kernel="${t%%.*}" scenario="${t#*.}"
  status=passed reasons='[]' detail=""
  case "${FAKE_MODE:-}" in
    fail) if [ "$scenario" != adv_c ]; then status=failed; reasons='["O: max abs error 0.5 exceeds 0.002"]'; rc=1; fi ;;
    error) status=error; detail="verify_case.cpp:1: cudaStreamSynchronize(st) failed: an illegal memory access was encountered (cudaErrorIllegalAddress)"; rc=1 ;;
  esac
  printf '{"status": "%s", "detail": "%s", "runs": [{"distribution": "standard", "reasons": %s}]}\n' \
    "$status" "$detail" "$reasons" > "$results/verify.$kernel.$scenario.json"
done
exit $rc
