CALL=2; source .carry/common.sh
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
setup; step setup
build || exit 1; step "built HEAD (v6)"
timeout 300 ctest --test-dir build/gpu -L adversarial -j 8 --output-on-failure > $R/adversarial.txt 2>&1; step "adversarial rc=$? $(grep -E 'tests passed|tests failed' $R/adversarial.txt)"
left 420 && { timeout 100 ctest --test-dir build/gpu -L unit -j 8 > $R/unit.txt 2>&1; step "unit rc=$? $(grep -E 'tests passed' $R/unit.txt)"; }
left 470 && { git show 7417e3d:kernels/candidate/candidate.cu > kernels/candidate/candidate.cu; build; ATTNGATE_GEOMEAN_TARGET=0.97 timeout 90 ctest --test-dir build/gpu -L gate --output-on-failure > $R/aa_gate.txt 2>&1; step "aa rc=$? $(grep -iE 'geomean|tests passed' $R/aa_gate.txt | tail -3 | tr '\n' ' ')"; cp build/gpu/gate/report.md $R/report_aa.md 2>/dev/null; git checkout kernels/candidate/candidate.cu; }
step done
