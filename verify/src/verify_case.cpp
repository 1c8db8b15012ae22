#include "attngate/verify/verify_case.hpp"

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
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

// ---- Building blocks --------------------------------------------------------------------------

// Beside the ratio to the initial kernel, the dtype's absolute bounds: a bound that scales with the
// baseline's error must not grow without limit when the baseline's error does.
void judge_ceiling(Judgement& j, const ErrorStats& o, const ErrorStats& lse, const DtypeTolerance& tol) {
  const Judgement ceiling = judge_absolute(o, lse, tol);
  for (const auto& r : ceiling.reasons)
    if (r.find("bound") != std::string::npos) j.fail(r + " (the dtype's ceiling, whatever the initial kernel's error)");
}

GroundTruth gpu_ground_truth(Problem& p, cudaStream_t st) {
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

OutputSnapshot read_outputs(const Problem& p, cudaStream_t st) {
  // Copies ordered on `st` only; a copy into pageable memory returns when it is done, and the
  // stream synchronize covers the rest. Nothing here waits for other streams.
  OutputSnapshot s{std::vector<uint16_t>(size_t(p.q_elems())), std::vector<float>(size_t(p.lse_elems()))};
  static_assert(sizeof(uint16_t) == 2, "O elements are 16-bit");
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(s.o.data(), p.o.data(), s.o.size() * 2, cudaMemcpyDeviceToHost, st));
  ATTNGATE_CUDA_CHECK(
      cudaMemcpyAsync(s.lse.data(), p.lse.data(), s.lse.size() * sizeof(float), cudaMemcpyDeviceToHost, st));
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
  return s;
}

std::vector<float> o_as_float(const std::vector<uint16_t>& o, DType dtype) {
  std::vector<float> out(o.size());
  if (dtype == DType::bf16) {
    for (size_t i = 0; i < o.size(); ++i) {
      const uint32_t bits = uint32_t(o[i]) << 16;  // bf16 is the top half of an fp32
      std::memcpy(&out[i], &bits, 4);
    }
  } else {
    for (size_t i = 0; i < o.size(); ++i) {
      __half h;
      std::memcpy(&h, &o[i], 2);
      out[i] = __half2float(h);
    }
  }
  return out;
}

SnapshotDiff diff_outputs(const OutputSnapshot& a, const OutputSnapshot& b) {
  SnapshotDiff d;
  const size_t no = std::min(a.o.size(), b.o.size());
  for (size_t i = 0; i < no; ++i) {
    if (a.o[i] != b.o[i]) {
      ++d.o;
      d.o_poison += b.o[i] == 0xFFFFu;
    }
  }
  d.o += int64_t(std::max(a.o.size(), b.o.size()) - no);
  const size_t nl = std::min(a.lse.size(), b.lse.size());
  for (size_t i = 0; i < nl; ++i) d.lse += std::memcmp(&a.lse[i], &b.lse[i], sizeof(float)) != 0;
  d.lse += int64_t(std::max(a.lse.size(), b.lse.size()) - nl);
  return d;
}

StreamState read_stream_state(cudaStream_t st) {
  StreamState s;
  cudaStreamAttrValue v{};
  ATTNGATE_CUDA_CHECK(cudaStreamGetAttribute(st, cudaStreamAttributeAccessPolicyWindow, &v));
  s.window_base = v.accessPolicyWindow.base_ptr;
  s.window_bytes = v.accessPolicyWindow.num_bytes;
  s.window_hit_ratio = v.accessPolicyWindow.hitRatio;
  size_t limit = 0;
  // Devices without persisting L2 answer with an error; they have nothing to leave behind.
  if (cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize) == cudaSuccess) s.persisting_l2_limit = limit;
  else cudaGetLastError();
  return s;
}

std::string describe_state_change(const StreamState& before, const StreamState& after) {
  std::string out;
  char buf[256];
  // A window of size 0 is no window, whatever its base pointer says.
  if (after.window_bytes != before.window_bytes ||
      (after.window_bytes > 0 && after.window_base != before.window_base)) {
    std::snprintf(buf, sizeof buf,
                  "an access policy window of %zu bytes at %p (hit ratio %.2f) on the stream it was given "
                  "(persisting L2 lines survive the harness's L2 flush)",
                  after.window_bytes, after.window_base, double(after.window_hit_ratio));
    out += buf;
  }
  if (after.persisting_l2_limit != before.persisting_l2_limit) {
    std::snprintf(buf, sizeof buf, "cudaLimitPersistingL2CacheSize changed from %zu to %zu bytes",
                  before.persisting_l2_limit, after.persisting_l2_limit);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out;
}

void reset_stream_state(cudaStream_t st, const StreamState& baseline) {
  // As the CUDA Programming Guide resets L2 access to normal: the window's size to 0 (the other
  // fields as they were, so they stay valid), the set-aside back, persisting lines to normal.
  cudaStreamAttrValue window{};
  ATTNGATE_CUDA_CHECK(cudaStreamGetAttribute(st, cudaStreamAttributeAccessPolicyWindow, &window));
  window.accessPolicyWindow.num_bytes = 0;
  window.accessPolicyWindow.hitProp = cudaAccessPropertyNormal;
  window.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
  ATTNGATE_CUDA_CHECK(cudaStreamSetAttribute(st, cudaStreamAttributeAccessPolicyWindow, &window));
  size_t limit = 0;
  if (cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize) == cudaSuccess) {
    if (limit != baseline.persisting_l2_limit)
      ATTNGATE_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, baseline.persisting_l2_limit));
    ATTNGATE_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
  } else {
    cudaGetLastError();
  }
}

GuardedCall guarded_call(Problem& p, const KernelInfo& kernel, cudaStream_t st) {
  GuardedCall c;
  const StreamState before = read_stream_state(st);
  p.o.poison(st);
  p.lse.poison(st);
  p.launch(kernel, st);
  // The kernel's stream has finished: this is what a caller synchronizing that stream gets.
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
  c.seen = read_outputs(p, st);
  c.stream_state = describe_state_change(before, read_stream_state(st));
  if (!c.stream_state.empty()) reset_stream_state(st, before);
  // Anything still running elsewhere on the device finishes here; the outputs must not change.
  ATTNGATE_CUDA_CHECK(cudaDeviceSynchronize());
  c.late = diff_outputs(c.seen, read_outputs(p, st));
  c.o_guard = p.o.guard_violations(st);
  c.lse_guard = p.lse.guard_violations(st);
  return c;
}

namespace {

constexpr Distribution kDistributions[] = {Distribution::standard, Distribution::large_scores};

GroundTruth eigen_truth(const Problem& p, uint64_t seed, Distribution d) {
  const auto q = host_input(p.params, 0, seed, d);
  const auto k = host_input(p.params, 1, seed, d);
  const auto v = host_input(p.params, 2, seed, d);
  GroundTruth t{std::vector<float>(p.q_elems()), std::vector<float>(p.lse_elems())};
  cpu_reference(p.params, q.data(), k.data(), v.data(), t.o.data(), t.lse.data());
  return t;
}

struct Stats {
  ErrorStats o, lse;
};

Stats compare_to_truth(const OutputSnapshot& got, const GroundTruth& truth, DType dtype) {
  const std::vector<float> o = o_as_float(got.o, dtype);
  return {compare(o.data(), truth.o.data(), int64_t(o.size())),
          compare(got.lse.data(), truth.lse.data(), int64_t(got.lse.size()))};
}

// The GPU reference run through gpu_reference_fp32, for comparison with Eigen.
Stats run_gpu_reference(Problem& p, const GroundTruth& truth, cudaStream_t st) {
  const GroundTruth g = gpu_ground_truth(p, st);
  return {compare(g.o.data(), truth.o.data(), int64_t(g.o.size())),
          compare(g.lse.data(), truth.lse.data(), int64_t(g.lse.size()))};
}

// Adds the anti-gaming verdicts of the kernel's two calls on one distribution's inputs.
void judge_calls(DistributionOutcome& r, const GuardedCall& first, const GuardedCall& second, int64_t o_total) {
  r.o_guard_violations = std::max(first.o_guard, second.o_guard);
  r.lse_guard_violations = std::max(first.lse_guard, second.lse_guard);
  if (r.o_guard_violations > 0)
    r.judgement.fail("O: " + std::to_string(r.o_guard_violations) + " bytes written outside the output tensor");
  if (r.lse_guard_violations > 0)
    r.judgement.fail("LSE: " + std::to_string(r.lse_guard_violations) + " bytes written outside the LSE tensor");

  r.late_o = std::max(first.late.o, second.late.o);
  r.late_lse = std::max(first.late.lse, second.late.lse);
  if (r.late_o > 0 || r.late_lse > 0)
    r.judgement.fail(std::string(kReasonLateWrites) + " " + std::to_string(r.late_o) + " elements of O and " +
                     std::to_string(r.late_lse) +
                     " of LSE changed after cudaDeviceSynchronize although the stream the kernel was given had "
                     "finished: the kernel left work running outside that stream (a side stream), which "
                     "that stream's timer and its callers do not wait for");

  r.stream_state = first.stream_state.empty() ? second.stream_state : first.stream_state;
  if (!r.stream_state.empty())
    r.judgement.fail(std::string(kReasonStreamState) + " the call left " + r.stream_state +
                     "; a launch may only enqueue work on its stream (the harness undid it)");

  const SnapshotDiff rep = diff_outputs(first.seen, second.seen);
  r.repeat_o_diff = rep.o;
  r.repeat_lse_diff = rep.lse;
  r.repeat_o_unwritten = rep.o_poison;
  if (rep.o > 0 || rep.lse > 0) {
    std::string what = std::string(kReasonNotDeterministic) + " a second call on the same inputs (output "
                       "re-poisoned) differs from the first in " + std::to_string(rep.o) + " of " +
                       std::to_string(o_total) + " elements of O and " + std::to_string(rep.lse) + " of LSE";
    if (rep.o_poison > 0)
      what += " (" + std::to_string(rep.o_poison) + " of them left unwritten: the second call did not write them)";
    r.judgement.fail(what + "; a kernel must reproduce its output bit for bit (a race, or a call that skips "
                            "work it did before)");
  }
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
    // New contents at the same pointers: a kernel that replays an earlier output fails here.
    p.fill(r.seed, d, st);
    Stats run;
    if (is_reference) {
      const GroundTruth truth = eigen_truth(p, r.seed, d);
      run = run_gpu_reference(p, truth, st);
      const DtypeTolerance fp32_bound{kReferenceAgreement, kReferenceAgreement, kReferenceAgreement,
                                      kReferenceAgreement};
      r.judgement = judge_absolute(run.o, run.lse, fp32_bound);
    } else {
      const GroundTruth truth = gpu_ground_truth(p, st);
      // The baseline first, on inputs no kernel under test has touched yet.
      Stats base;
      if (!is_initial) {
        const GuardedCall b = guarded_call(p, initial, st);
        base = compare_to_truth(b.seen, truth, s.dtype);
      }
      const GuardedCall first = guarded_call(p, kernel, st);
      const GuardedCall second = guarded_call(p, kernel, st);
      run = compare_to_truth(first.seen, truth, s.dtype);
      if (is_initial) {
        r.judgement = judge_absolute(run.o, run.lse, tol.of(s.dtype));
      } else {
        r.has_initial = true;
        r.initial_o = base.o;
        r.initial_lse = base.lse;
        r.judgement = judge_against_initial(run.o, run.lse, base.o, base.lse, tol.ratio_to_initial,
                                            tol.of(s.dtype));
        judge_ceiling(r.judgement, run.o, run.lse, tol.of(s.dtype));
      }
      judge_calls(r, first, second, p.q_elems());
    }
    r.o = run.o;
    r.lse = run.lse;
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
