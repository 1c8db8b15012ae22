# Source-level stalls (SASS) of v6 and v11 at d64 s16384; files straight into $OUT (no tar), so a
# call cut short still returns what it made.
set -u; T0=$(date +%s); step() { echo "$(( $(date +%s) - T0 ))s $*" | tee -a $OUT/steps5.txt; }
B=build/gpu
[ -f $B/build.ninja ] || cmake --preset gpu -G Ninja -DCMAKE_PREFIX_PATH=$PWD/.carry/root/usr > $OUT/configure.txt 2>&1
src() {
  cmake --build --preset gpu > $OUT/build_$1.txt 2>&1 || { step "build $1 FAILED"; return 1; }; step "built $1"
  ATTNGATE_SANDBOX=off timeout 90 ncu --target-processes all --nvtx --nvtx-include "attngate@profile/" --clock-control none \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight --export /tmp/src_$1 --force-overwrite \
    $B/bench/attngate_profile_call --calls-out=/tmp/calls_$1.json --worker=$B/kernels/worker/attngate_worker_candidate \
    --kernels=candidate --scenarios=scenarios --suite=gate --scenario=gate_mha_d64_s16384 > $OUT/ncu_$1.txt 2>&1; step "ncu $1 rc=$?"
  ncu --import /tmp/src_$1.ncu-rep --page source --csv --print-source sass > $OUT/sass_$1.csv 2>&1; step "sass $1 rc=$? $(wc -c < $OUT/sass_$1.csv)"
  gzip -9 $OUT/sass_$1.csv
}
src v6
cp .carry/v11.cu kernels/candidate/candidate.cu
src v11
git checkout kernels/candidate/candidate.cu
step done
