#!/bin/sh
# A stand-in for Nsight Compute (unit.hooks.profile_skip_from_document): it runs nothing and
# writes the calls document attngate_profile_call writes without a GPU, printing no console line,
# so `attngate profile` can learn of the skip only from the document.
for a in "$@"; do
  case "$a" in --calls-out=*) calls="${a#--calls-out=}" ;; esac
done
[ -n "${calls:-}" ] || { echo "fake ncu: no --calls-out among the arguments" >&2; exit 9; }
printf '{"skipped": "needs a CUDA GPU: (fake ncu)", "calls": []}\n' > "$calls"
echo "==WARNING== No kernels were profiled."
exit 1  # as ncu may, having profiled no kernel
