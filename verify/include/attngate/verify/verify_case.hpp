// One verification case: a kernel on a scenario, on both input distributions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "attngate/inputs.hpp"
#include "attngate/registry.hpp"
#include "attngate/scenario.hpp"
#include "attngate/verify/metrics.hpp"

namespace attngate::verify {

// The GPU fp32 reference is itself checked against the Eigen reference; both are fp32, so the
// bound only has to absorb summation-order differences.
inline constexpr double kReferenceAgreement = 1e-4;

struct DistributionOutcome {
  Distribution distribution = Distribution::standard;
  uint64_t seed = 0;
  ErrorStats o, lse;                // the kernel under test against the ground truth
  bool has_initial = false;         // false for `initial` itself and for `reference`
  ErrorStats initial_o, initial_lse;
  int64_t o_guard_violations = 0, lse_guard_violations = 0;
  uint64_t input_mismatches = 0;    // input elements the kernel changed
  std::string o_worst_at, lse_worst_at;
  Judgement judgement;
};

struct CaseOutcome {
  std::string kernel, scenario, ground_truth;  // ground_truth: "gpu_reference_fp32" or "eigen_cpu"
  uint64_t base_seed = 0;
  std::vector<DistributionOutcome> runs;
  bool pass() const;
};

// Runs `kernel` on `s` for each input distribution with fresh inputs from `base_seed`, poisons the
// outputs before every launch, and judges the result with `tol`. `initial` is the kernel whose
// error sets the bound for every other kernel. Throws on CUDA errors.
CaseOutcome verify_case(const KernelInfo& kernel, const KernelInfo& initial, const Scenario& s,
                        const Tolerance& tol, uint64_t base_seed, cudaStream_t stream);

// A multi-line human-readable report of the outcome.
std::string describe(const CaseOutcome& c, const Scenario& s);

}  // namespace attngate::verify
