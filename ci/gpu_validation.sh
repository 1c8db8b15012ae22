#!/usr/bin/env bash
# Validates a GPU machine end to end in one call and writes every log and result under $1:
# build, unit tests, every verify test, the gate (pass at a loose target, fail at a tight one,
# fail on a broken candidate), the planted cheats, the sanitizers, and the benchmark figures.
# Stages can be chosen: ci/gpu_validation.sh OUT [build unit verify gate adversarial sanitize bench
# profile phases cudnn fa4 baselines cudnn_torch multigpu]. The last seven are not in the default set:
# phases runs the gate with ATTNGATE_VERIFY_PHASES=1 and sums where verification's time goes
# (allocation, fp32 truth, each kernel's checks) over every scenario, and each test's time; profile
# runs `attngate profile` of candidate and initial on two gate scenarios, an Nsight Systems capture
# of a timed run (its NVTX ranges) and Google Benchmark's compare.py on two --rounds-out runs; cudnn and
# cudnn_torch need the cudnn-frontend headers and ATTNGATE_CMAKE_ARGS=-DATTNGATE_CUDNN=ON, fa4 the
# wheels of ci/fetch_fa4_wheels.sh (ATTNGATE_FA4_WHEELS, default .whl/), multigpu several GPUs
# (ATTNGATE_SLOTS_PER_GPU tests at a time on each, default 8; ATTNGATE_GPU_COUNTS the GPU counts to
# run the full suite on, default "1 all"; ATTNGATE_MULTIGPU_BENCH=0 skips its benchmarks).
set -uo pipefail
out=${1:?usage: ci/gpu_validation.sh OUT_DIR [stages...]}
shift
stages=${*:-build unit verify gate adversarial sanitize bench}
mkdir -p "$out"
cd "$(dirname "$0")/.."
root=$PWD
b=$root/build/gpu
jobs=${ATTNGATE_CTEST_JOBS:-8}
has() { [[ " $stages " == *" $1 "* ]]; }
step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }
summary() { grep -E "tests passed|tests failed|Total Test time" "$1" | tr '\n' ' '; echo; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv >"$out/gpu.txt" 2>&1
cat "$out/gpu.txt"

if has build; then
  step build
  SECONDS=0
  { cmake --preset gpu -G Ninja ${ATTNGATE_CMAKE_ARGS:-} && cmake --build --preset gpu; } >"$out/build.log" 2>&1 ||
    { tail -40 "$out/build.log"; exit 1; }
  echo "build ${SECONDS}s"
fi
mkdir -p "$b" && cd "$b"
if has unit; then
  step unit
  ctest -L unit -j "$jobs" >"$out/unit.log" 2>&1; summary "$out/unit.log"
fi
if has verify; then
  step verify
  SECONDS=0
  ctest -L verify -j "$jobs" -V --timeout 900 >"$out/verify.log" 2>&1
  echo "verify rc=$? ${SECONDS}s"; summary "$out/verify.log"
  grep -A40 "tests FAILED" "$out/verify.log" | head -40
fi
if has gate; then
  step "gate at target 0.97"
  SECONDS=0
  ATTNGATE_GEOMEAN_TARGET=0.97 ctest -L gate -j "$jobs" --output-on-failure >"$out/gate_097.log" 2>&1
  echo "gate(0.97) rc=$? ${SECONDS}s"; summary "$out/gate_097.log"
  cp gate/report.md "$out/gate_097_report.md"; cp gate/report.json "$out/gate_097_report.json"
  step "gate at target 1.5"
  ATTNGATE_GEOMEAN_TARGET=1.5 ctest -L gate -j "$jobs" >"$out/gate_150.log" 2>&1
  echo "gate(1.5) rc=$?"; cp gate/report.md "$out/gate_150_report.md"
  step "gate on a broken candidate (causal mask off)"
  cp "$root/kernels/candidate/candidate.cu" "$out/candidate.orig"
  python3 "$root/ci/break_candidate.py" "$root/kernels/candidate/candidate.cu"
  cmake --build . >"$out/build_broken.log" 2>&1
  ATTNGATE_GEOMEAN_TARGET=0.97 ctest -L gate -j "$jobs" >"$out/gate_broken.log" 2>&1
  echo "gate(broken) rc=$?"; cp gate/report.md "$out/gate_broken_report.md"
  cp "$out/candidate.orig" "$root/kernels/candidate/candidate.cu"
  cmake --build . >>"$out/build_broken.log" 2>&1
fi
if has adversarial; then
  step adversarial
  SECONDS=0
  ctest -L adversarial -j "$jobs" --output-on-failure >"$out/adversarial.log" 2>&1
  echo "adversarial rc=$? ${SECONDS}s"; summary "$out/adversarial.log"
fi
if has sanitize; then
  step sanitize
  SECONDS=0
  ctest -L sanitize -j 3 --output-on-failure >"$out/sanitize.log" 2>&1
  echo "sanitize rc=$? ${SECONDS}s"; summary "$out/sanitize.log"
fi
if has bench; then
  step "bench: A/A and initial vs candidate on the gate suite"
  SECONDS=0
  bench/attngate_bench --suite=gate --compare=initial,initial --compare_out="$out/aa_gate.json" >"$out/aa_gate.log" 2>&1
  echo "A/A rc=$? ${SECONDS}s"; tail -3 "$out/aa_gate.log"
  SECONDS=0
  bench/attngate_bench --suite=gate --compare=candidate,initial --compare_out="$out/cand_gate.json" >"$out/cand_gate.log" 2>&1
  echo "candidate vs initial rc=$? ${SECONDS}s"; tail -2 "$out/cand_gate.log"
  bench/attngate_bench --suite=gate --benchmark_filter='^(initial|cudnn)/' --benchmark_out="$out/gate_bench.json" \
    --benchmark_out_format=json >"$out/gate_bench.log" 2>&1
  echo "gate bench rc=$?"
  bench/attngate_bench --suite=prod --benchmark_filter='^(initial|cudnn)/' --benchmark_out="$out/prod_bench.json" \
    --benchmark_out_format=json >"$out/prod_bench.log" 2>&1
  echo "prod bench rc=$?"
fi
if has profile; then
  step "attngate profile, candidate against initial, two gate scenarios"
  for s in gate_mha_d128_s4096_causal gate_mha_d64_s16384; do
    agent_hooks/attngate --repo "$root" profile --build-dir "$b" --scenario "$s" --compare initial \
      >"$out/profile_$s.txt" 2>&1; echo "profile $s rc=$?"; cat "$out/profile_$s.txt"
    cp "profile/$s/profile.json" "$out/profile_$s.json" 2>/dev/null
  done
  ctest -L profile --output-on-failure >"$out/profile_ctest.log" 2>&1; summary "$out/profile_ctest.log"
  step "Nsight Systems: the NVTX ranges of one timed scenario"
  if command -v nsys >/dev/null; then
    nsys profile --trace=cuda,nvtx --force-overwrite=true -o "$out/nsys_gate" bench/attngate_bench_judge \
      --worker=kernels/worker/attngate_worker_initial --worker=kernels/worker/attngate_worker_candidate \
      --suite=gate --compare=candidate,initial --time-cap-s=0.1 --benchmark_filter='gate_mha_d128_s4096_causal$' \
      >"$out/nsys.log" 2>&1; echo "nsys rc=$?"
    nsys stats --report nvtx_sum "$out/nsys_gate.nsys-rep" >"$out/nsys_nvtx.txt" 2>&1; head -30 "$out/nsys_nvtx.txt"
  else
    echo "nsys not found: no capture"
  fi
  step "Google Benchmark's compare.py on two runs of the gate suite (--rounds-out)"
  for r in 1 2; do
    bench/attngate_bench_judge --worker=kernels/worker/attngate_worker_initial \
      --worker=kernels/worker/attngate_worker_candidate --suite=gate --compare=candidate,initial \
      --rounds-out="$out/rounds$r.json" >"$out/rounds$r.log" 2>&1; echo "rounds run $r rc=$?"
  done
  for c in /usr/share/benchmark/compare.py "$root/.carry/benchmark_tools/compare.py"; do
    [[ -f $c ]] || continue
    python3 "$c" -a --display_aggregates_only benchmarks "$out/rounds1.json" "$out/rounds2.json" \
      >"$out/compare_py.txt" 2>&1; echo "compare.py rc=$?"; tail -12 "$out/compare_py.txt"; break
  done
fi
if has phases; then
  step "gate: where verification's time goes (ATTNGATE_VERIFY_PHASES=1)"
  SECONDS=0
  ATTNGATE_VERIFY_PHASES=1 ATTNGATE_GEOMEAN_TARGET=0.97 ctest -L gate -j "$jobs" -V >"$out/gate_phases.log" 2>&1
  echo "gate rc=$? ${SECONDS}s"
  grep -o 'attngate_verify: phases [^:]*:.*' "$out/gate_phases.log" | sed 's/^attngate_verify: phases [^:]*://' | tr ' ' '\n' |
    awk -F= 'NF == 2 { ms[$1] += $2 } END { for (k in ms) printf "%-12s %9.0f ms\n", k, ms[k] }' | sort -k2 -n -r
  grep -E "Test +#[0-9]+: (verify\.batch|gate\.)" "$out/gate_phases.log" | awk '{print $(NF-1), $4}' | sort -rn | head -12
fi
if has cudnn; then
  step "cudnn: every verify test and its own GPU checks"
  SECONDS=0
  ctest -R '^(verify|gpu)\.cudnn' -j "$jobs" --output-on-failure >"$out/cudnn.log" 2>&1
  echo "cudnn rc=$? ${SECONDS}s"; summary "$out/cudnn.log"
  grep -c "Skipped" "$out/cudnn.log" | sed 's/^/skipped: /'
fi
if has fa4; then
  step "fa4: install the carried FlashAttention-4 wheels offline"
  fa4=$root/.carry/fa4
  WHEELS=${ATTNGATE_FA4_WHEELS:-$root/.whl} "$root/ci/install_fa4_offline.sh" "$fa4" >"$out/fa4_install.log" 2>&1
  echo "fa4 install rc=$?"; tail -3 "$out/fa4_install.log"
  eval "$("$root/ci/install_fa4_offline.sh" --print-env "$fa4")"
fi
if has baselines; then
  kernels/tools/attngate_kernels --json >"$out/kernels.json"
  for suite in gate prod; do
    step "baselines on $suite: attngate's kernels and the Python ones, one report"
    bench/attngate_bench --suite=$suite --benchmark_filter='^(initial|candidate|cudnn)/' \
      --benchmark_out="$out/${suite}_attngate.json" --benchmark_out_format=json >"$out/${suite}_attngate.log" 2>&1
    echo "attngate bench rc=$?"
    PYTHONUNBUFFERED=1 python3 "$root/bench/python/attngate_baselines.py" --suite $suite \
      --attngate-scenarios scenarios/tools/attngate_scenarios --out "$out/${suite}_baselines.json" \
      >"$out/${suite}_baselines.log" 2>&1
    echo "baselines rc=$?"; tail -3 "$out/${suite}_baselines.log"
    python3 "$root/bench/python/attngate_compare.py" --bench "$out/${suite}_attngate.json" \
      --baselines "$out/${suite}_baselines.json" --kernels "$out/kernels.json" --md "$out/${suite}_report.md" \
      --json "$out/${suite}_report.json" --png "$out/${suite}_report.png" >"$out/${suite}_compare.log" 2>&1
    echo "compare rc=$?"; tail -4 "$out/${suite}_compare.log"
  done
fi
if has cudnn_torch; then
  # The 3% check needs both sides on one cuDNN: the in-process kernel is rebuilt against the
  # libcudnn PyTorch loads, then timed on the gate suite beside PyTorch's cuDNN backend.
  step "cudnn built against PyTorch's cuDNN, against PyTorch's cuDNN backend"
  lib=$(python3 -c 'import os, nvidia.cudnn as c; print(os.path.join(list(c.__path__)[0], "lib", "libcudnn.so.9"))')
  tc=$root/build/gpu-torch-cudnn
  { (cd "$root" && cmake --preset gpu -B "$tc" -G Ninja -DATTNGATE_CUDNN=ON -DATTNGATE_CUDNN_LIBRARY="$lib") &&
    cmake --build "$tc" --target attngate_bench attngate_scenarios_tool; } >"$out/build_torch_cudnn.log" 2>&1 ||
    { tail -30 "$out/build_torch_cudnn.log"; }
  "$tc/kernels/tools/attngate_kernels" --json >"$out/kernels_torch_cudnn.json"
  "$tc/bench/attngate_bench" --suite=gate --benchmark_filter='^cudnn/' --benchmark_out="$out/gate_cudnn_torchlib.json" \
    --benchmark_out_format=json >"$out/gate_cudnn_torchlib.log" 2>&1
  echo "cudnn (PyTorch's libcudnn) bench rc=$?"
  [[ -f "$out/gate_baselines.json" ]] ||
    python3 "$root/bench/python/attngate_baselines.py" --suite gate --baselines torch_cudnn \
      --attngate-scenarios "$tc/scenarios/tools/attngate_scenarios" --out "$out/gate_baselines.json" >"$out/gate_baselines.log" 2>&1
  python3 "$root/bench/python/attngate_compare.py" --candidate cudnn --bench "$out/gate_cudnn_torchlib.json" \
    --baselines "$out/gate_baselines.json" --kernels "$out/kernels_torch_cudnn.json" --md "$out/agreement.md" \
    --json "$out/agreement.json" >"$out/agreement.log" 2>&1
  echo "agreement rc=$?"; grep -i "agree\|within" "$out/agreement.log" | head -3
fi
if has multigpu; then
  n=$(nvidia-smi -L | wc -l)
  slots=${ATTNGATE_SLOTS_PER_GPU:-8}
  for g in ${ATTNGATE_GPU_COUNTS:-1 $n}; do
    step "full suite verification on $g GPU(s)"
    python3 "$root/ci/ctest_resources.py" "gpus$g.json" --gpus "$g" --slots "$slots"
    rm -rf verify/results
    nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader -lms 1000 \
      >"$out/smi_${g}gpu.csv" 2>&1 &
    smi=$!
    SECONDS=0
    ctest --resource-spec-file "gpus$g.json" -L full -R '^verify\.' -j $((slots * g)) >"$out/full_${g}gpu.log" 2>&1
    echo "full on $g GPU(s): rc=$? ${SECONDS}s"; summary "$out/full_${g}gpu.log"
    kill "$smi"
    # Each test's result names the GPU CTest gave it and the PCI bus id the process ran on.
    python3 -c 'import collections, glob, json
c = collections.Counter()
for f in glob.glob("verify/results/*.json"):
    r = json.load(open(f)); c[(r.get("ctest_gpu"), r.get("pci_bus_id"))] += 1
print("tests per (CTest GPU id, PCI bus id):", dict(c))' | tee "$out/full_${g}gpu_placement.txt"
  done
  if [[ ${ATTNGATE_MULTIGPU_BENCH:-1} == 1 ]]; then
    step "benchmarks: one process on one GPU, then one per GPU merged"
    CUDA_VISIBLE_DEVICES=0 bench/attngate_bench --suite=gate --compare=candidate,initial \
      --compare_out="$out/bench_1gpu.json" >"$out/bench_1gpu.log" 2>&1; echo "1 GPU rc=$?"
    python3 "$root/ci/bench_all_gpus.py" --build-dir "$b" --suite gate --compare candidate,initial \
      --out "$out/bench_all" >"$out/bench_all.log" 2>&1; echo "all GPUs rc=$?"; tail -2 "$out/bench_all.log"
    python3 "$root/ci/compare_runs.py" "$out/bench_1gpu.json" "$out/bench_all/merged.json" \
      --md "$out/bench_1gpu_vs_all.md" >/dev/null 2>&1
    echo "merged vs one GPU rc=$?"; sed -n 3,7p "$out/bench_1gpu_vs_all.md"
  fi
fi
