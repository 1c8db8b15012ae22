CALL=2; source .carry/common.sh; source .carry/commit_best.sh
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
START=$(git rev-parse HEAD); echo $START > $R/start.txt
setup; step setup
try v17 "v17: v16 with each consumer handing the GEMM turn to the next right after issuing its S and PV GEMMs (FlashAttention-3's order), not after S completes; ptxas keeps the wgmmas unserialized. Predicted +0-2 % on d128 and d256 over v16 (1.808x): 1.81-1.84x."
tried="v17"
left 300 && { try v18 "v18: v17 with 176-key tiles and two stages for d128 without a mask (FlashAttention-3's tile): 627 key-loop instructions per 176 keys against 516 per 128. Predicted +3-6 % on the six non-causal d128 gate scenarios, +0.7-1.3 % geomean over v17."; tried="$tried v18"; }
left 390 && { try v19 "v19: v18 with 80-key tiles for d256 (FlashAttention-3's): 515 instructions per 80 keys against 474 per 64. Predicted +3-6 % on the two d256 scenarios, +0.3 % geomean over v18."; tried="$tried v19"; }
commit_best 1.8075 $tried
git checkout kernels/candidate/candidate.cu 2>/dev/null
left 480 && { timeout 60 ctest --test-dir build/gpu -L unit -j 8 > $R/unit.txt 2>&1; step "unit rc=$? $(grep -E 'tests passed' $R/unit.txt)"; }
left 500 && { git show 7417e3d:kernels/candidate/candidate.cu > kernels/candidate/candidate.cu; build; ATTNGATE_GEOMEAN_TARGET=0.97 timeout 70 ctest --test-dir build/gpu -L gate --output-on-failure > $R/aa_gate.txt 2>&1; step "aa rc=$? $(grep -iE 'tests passed' $R/aa_gate.txt | tail -1)"; cp build/gpu/gate/report.md $R/report_aa.md 2>/dev/null; git checkout kernels/candidate/candidate.cu; }
step done
