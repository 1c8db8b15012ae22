CALL=4; source .carry/common.sh
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
setup; step setup
build || exit 1; step "built HEAD (v6)"
prof() { timeout 60 $AG profile --scenario $2 --compare $3 > $R/profile_$1_$2.txt 2>&1; step "profile $1 $2 rc=$?"; }
prof v6 gate_mha_d128_s4096 initial
prof v6 gate_mha_d256_s4096 initial
prof v6 gate_mha_d64_s16384 initial
prof v6 gate_mha_d128_s16384_causal initial
cp .carry/v11.cu kernels/candidate/candidate.cu; build && step "built v11"
left 420 && prof v11 gate_mha_d64_s16384 initial
left 440 && prof v11 gate_mha_d128_s4096 initial
left 460 && prof v11 gate_mha_d128_s16384_causal initial
git checkout kernels/candidate/candidate.cu
step done
