CALL=2; source .carry/common.sh
setup; step setup
build || exit 1; step "built HEAD"
timeout 330 ctest --test-dir build/gpu -L adversarial -j 8 -V > $R/adversarial.txt 2>&1; step "adversarial rc=$? $(grep -E 'tests passed|tests failed' $R/adversarial.txt | tail -1)"
git show 7417e3d:kernels/candidate/candidate.cu > kernels/candidate/candidate.cu; build; step "built A/A"
ATTNGATE_GEOMEAN_TARGET=0.97 timeout 120 ctest --test-dir build/gpu -L gate > $R/aa_gate.txt 2>&1; step "A/A rc=$? $(grep -E 'tests passed|tests failed' $R/aa_gate.txt | tail -1)"
cp build/gpu/gate/report.md $R/report_aa.md; cp build/gpu/gate/report.json $R/report_aa.json
git checkout kernels/candidate/candidate.cu
