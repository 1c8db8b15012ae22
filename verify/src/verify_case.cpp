#include "attngate/verify/verify_case.hpp"

#include <cstdio>
#include <sstream>

#include "attngate/cpu_reference.hpp"
#include "attngate/cuda_check.hpp"
#include "attngate/gpu_reference.hpp"
#include "attngate/verify/problem.hpp"

namespace attngate::verify {

bool CaseOutcome::pass() const {
  for (const auto& r : runs)
    if (!r.judgement.pass) return false;
  return !runs.empty();
}

namespace {

constexpr Distribution kDistributions[] = {Distribution::standard, Distribution::large_scores};

struct GroundTruth {
  std::vector<float> o, lse;
};

GroundTruth gpu_truth(Problem& p, cudaStream_t st) {
  DeviceBuffer o_ref(size_t(p.q_elems()) * sizeof(float));
  DeviceBuffer lse_ref(size_t(p.lse_elems()) * sizeof(float));
  AttnParams params = p.params;
  params.lse = static_cast<float*>(lse_ref.get());
  ATTNGATE_CUDA_CHECK(gpu_reference_fp32(params, static_cast<float*>(o_ref.get()), st));
  GroundTruth t{std::vector<float>(p.q_elems()), std::vector<float>(p.lse_elems())};
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(t.o.data(), o_ref.get(), o_ref.bytes(), cudaMemcpyDeviceToHost, st));
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(t.lse.data(), lse_ref.get(), lse_ref.bytes(), cudaMemcpyDeviceToHost, st));
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
  return t;
}

GroundTruth eigen_truth(const Problem& p, uint64_t seed, Distribution d) {
  const auto q = host_input(p.params, 0, seed, d);
  const auto k = host_input(p.params, 1, seed, d);
  const auto v = host_input(p.params, 2, seed, d);
  GroundTruth t{std::vector<float>(p.q_elems()), std::vector<float>(p.lse_elems())};
  cpu_reference(p.params, q.data(), k.data(), v.data(), t.o.data(), t.lse.data());
  return t;
}

struct KernelRun {
  ErrorStats o, lse;
  int64_t o_guard = 0, lse_guard = 0;
};

KernelRun run_and_compare(Problem& p, const KernelInfo& k, const GroundTruth& truth, cudaStream_t st) {
  p.o.poison(st);
  p.lse.poison(st);
  p.launch(k, st);
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
  KernelRun r;
  r.o_guard = p.o.guard_violations(st);
  r.lse_guard = p.lse.guard_violations(st);
  const auto o = p.o_host(st);
  const auto lse = p.lse_host(st);
  r.o = compare(o.data(), truth.o.data(), int64_t(o.size()));
  r.lse = compare(lse.data(), truth.lse.data(), int64_t(lse.size()));
  return r;
}

// The GPU reference run through gpu_reference_fp32, for comparison with Eigen.
KernelRun run_gpu_reference(Problem& p, const GroundTruth& truth, cudaStream_t st) {
  const GroundTruth g = gpu_truth(p, st);
  KernelRun r;
  r.o = compare(g.o.data(), truth.o.data(), int64_t(g.o.size()));
  r.lse = compare(g.lse.data(), truth.lse.data(), int64_t(g.lse.size()));
  return r;
}

}  // namespace

CaseOutcome verify_case(const KernelInfo& kernel, const KernelInfo& initial, const Scenario& s,
                        const Tolerance& tol, uint64_t base_seed, cudaStream_t st) {
  const bool is_reference = kernel.name == "reference";
  const bool is_initial = kernel.name == initial.name;
  CaseOutcome c;
  c.kernel = kernel.name;
  c.scenario = s.id;
  c.ground_truth = is_reference ? "eigen_cpu" : "gpu_reference_fp32";
  c.base_seed = base_seed;
  Problem p(s);
  int index = 0;
  for (Distribution d : kDistributions) {
    DistributionOutcome r;
    r.distribution = d;
    r.seed = scenario_seed(base_seed, s.id, index++);
    p.fill(r.seed, d, st);
    KernelRun run;
    if (is_reference) {
      const GroundTruth truth = eigen_truth(p, r.seed, d);
      run = run_gpu_reference(p, truth, st);
      const DtypeTolerance fp32_bound{kReferenceAgreement, kReferenceAgreement, kReferenceAgreement,
                                      kReferenceAgreement};
      r.judgement = judge_absolute(run.o, run.lse, fp32_bound);
    } else {
      const GroundTruth truth = gpu_truth(p, st);
      run = run_and_compare(p, kernel, truth, st);
      if (is_initial) {
        r.judgement = judge_absolute(run.o, run.lse, tol.of(s.dtype));
      } else {
        const KernelRun base = run_and_compare(p, initial, truth, st);
        r.has_initial = true;
        r.initial_o = base.o;
        r.initial_lse = base.lse;
        r.judgement = judge_against_initial(run.o, run.lse, base.o, base.lse, tol.ratio_to_initial,
                                            tol.of(s.dtype));
      }
    }
    r.o = run.o;
    r.lse = run.lse;
    r.o_guard_violations = run.o_guard;
    r.lse_guard_violations = run.lse_guard;
    if (run.o_guard > 0)
      r.judgement.fail("O: " + std::to_string(run.o_guard) + " bytes written outside the output tensor");
    if (run.lse_guard > 0)
      r.judgement.fail("LSE: " + std::to_string(run.lse_guard) + " bytes written outside the LSE tensor");
    r.input_mismatches = count_input_mismatches(p.params, r.seed, d, st);
    if (r.input_mismatches > 0)
      r.judgement.fail("inputs: " + std::to_string(r.input_mismatches) + " elements of Q/K/V were modified");
    r.o_worst_at = bshd_location(run.o.worst_index, s.seqlen_q, s.heads_q, s.head_dim);
    r.lse_worst_at = lse_location(run.lse.worst_index, s.seqlen_q, s.heads_q);
    c.runs.push_back(std::move(r));
  }
  return c;
}

std::string describe(const CaseOutcome& c, const Scenario& s) {
  std::ostringstream os;
  char line[512];
  os << c.kernel << " on " << s.id << " (" << scenario_summary(s) << "), ground truth " << c.ground_truth
     << ", base seed " << c.base_seed << " (replay: ATTNGATE_SEED=" << c.base_seed << ")\n";
  for (const auto& r : c.runs) {
    std::snprintf(line, sizeof line,
                  "  %-12s seed=%llu  O max_abs=%.3e rel_l2=%.3e at [%s]  LSE max_abs=%.3e scaled=%.3e at [%s]",
                  distribution_name(r.distribution).c_str(), static_cast<unsigned long long>(r.seed),
                  r.o.max_abs, r.o.rel_l2, r.o_worst_at.c_str(), r.lse.max_abs, r.lse.max_scaled,
                  r.lse_worst_at.c_str());
    os << line;
    if (r.has_initial) {
      std::snprintf(line, sizeof line, "  (initial: O %.3e, LSE scaled %.3e)", r.initial_o.max_abs,
                    r.initial_lse.max_scaled);
      os << line;
    }
    os << (r.judgement.pass ? "  PASS\n" : "  FAIL\n");
    for (const auto& why : r.judgement.reasons) os << "    - " << why << "\n";
  }
  return os.str();
}

}  // namespace attngate::verify
