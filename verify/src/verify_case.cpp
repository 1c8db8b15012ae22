#include "attngate/verify/verify_case.hpp"

#include <cuda_fp16.h>

#include <algorithm>
#include <optional>
#include <memory>
#include <map>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "attngate/cpu_reference.hpp"
#include "attngate/cuda_check.hpp"
#include "attngate/gpu_reference.hpp"
#include "attngate/kernel_status.hpp"
#include "attngate/verify/problem.hpp"
#include "attngate/verify/remote.hpp"

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
  for (const auto& r : judge_bounds(o, lse, tol).reasons)
    j.fail(r + " (the dtype's ceiling, whatever the initial kernel's error)");
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

DeviceCall device_guarded_call(Problem& p, const KernelInfo& kernel, const DeviceTruth& truth, DeviceSnapshot& mine,
                               const DeviceSnapshot* previous, cudaStream_t st) {
  DeviceCall c;
  const StreamState before = read_stream_state(st);
  p.o.poison(st);
  p.lse.poison(st);
  remote::take_stream_state();  // what an earlier call reported is not this one's
  p.launch(kernel, st);
  // The kernel's stream has finished: this is what a caller synchronizing that stream gets.
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
  take_snapshot(p, mine, st);
  // Only the first call's worst element is reported; a repeat is judged by its statistics alone.
  c.errors = snapshot_errors(p, mine, truth, st, /*locate=*/previous == nullptr);
  if (previous) c.repeat = diff_snapshots(p, *previous, mine, st);
  c.stream_state = describe_state_change(before, read_stream_state(st));
  if (!c.stream_state.empty()) reset_stream_state(st, before);
  // A kernel in a worker: the worker undid what the call left on its own stream and device.
  if (std::string remote_state = remote::take_stream_state(); !remote_state.empty())
    c.stream_state += (c.stream_state.empty() ? "" : "; ") + remote_state;
  // Anything still running elsewhere on the device finishes here; the outputs must not change.
  ATTNGATE_CUDA_CHECK(cudaDeviceSynchronize());
  c.late = diff_from_snapshot(p, mine, st);
  c.o_guard = p.o.guard_violations(st);
  c.lse_guard = p.lse.guard_violations(st);
  return c;
}

namespace {

constexpr Distribution kDistributions[] = {Distribution::standard, Distribution::large_scores};

// ---- The reference kernel, checked against Eigen on the host -------------------------------

struct HostTruth {
  std::vector<float> o, lse;
};

HostTruth eigen_truth(const Problem& p, uint64_t seed, Distribution d) {
  const auto q = host_input(p.params, 0, seed, d);
  const auto k = host_input(p.params, 1, seed, d);
  const auto v = host_input(p.params, 2, seed, d);
  HostTruth t{std::vector<float>(p.q_elems()), std::vector<float>(p.lse_elems())};
  cpu_reference(p.params, q.data(), k.data(), v.data(), t.o.data(), t.lse.data());
  return t;
}

struct Stats {
  ErrorStats o, lse;
};

// gpu_reference_fp32 on the problem's inputs, copied to the host and compared with Eigen's.
Stats run_gpu_reference(Problem& p, const HostTruth& truth, cudaStream_t st) {
  const DeviceTruth g = device_ground_truth(p, st);
  std::vector<float> o(size_t(p.q_elems())), lse(size_t(p.lse_elems()));
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(o.data(), g.o.get(), g.o.bytes(), cudaMemcpyDeviceToHost, st));
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(lse.data(), g.lse.get(), g.lse.bytes(), cudaMemcpyDeviceToHost, st));
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
  return {compare(o.data(), truth.o.data(), int64_t(o.size())),
          compare(lse.data(), truth.lse.data(), int64_t(lse.size()))};
}

CaseOutcome verify_reference(const KernelInfo& kernel, const Scenario& s, uint64_t base_seed, cudaStream_t st) {
  CaseOutcome c;
  c.kernel = kernel.name;
  c.scenario = s.id;
  c.ground_truth = "eigen_cpu";
  c.base_seed = base_seed;
  Problem p(s);
  int index = 0;
  for (Distribution d : kDistributions) {
    DistributionOutcome r;
    r.distribution = d;
    r.seed = scenario_seed(base_seed, s.id, index++);
    p.fill(r.seed, d, st);
    const Stats run = run_gpu_reference(p, eigen_truth(p, r.seed, d), st);
    const DtypeTolerance fp32_bound{kReferenceAgreement, kReferenceAgreement, kReferenceAgreement, kReferenceAgreement};
    r.judgement = judge_absolute(run.o, run.lse, fp32_bound);
    r.o = run.o;
    r.lse = run.lse;
    r.o_worst_at = bshd_location(run.o.worst_index, s.seqlen_q, s.heads_q, s.head_dim);
    r.lse_worst_at = lse_location(run.lse.worst_index, s.seqlen_q, s.heads_q);
    c.runs.push_back(std::move(r));
  }
  c.status = c.pass() ? "passed" : "failed";
  return c;
}

// ---- Kernels against the device ground truth -------------------------------------------------

// Adds the anti-gaming verdicts of the kernel's two calls on one distribution's inputs.
void judge_calls(DistributionOutcome& r, const DeviceCall& first, const DeviceCall& second, int64_t o_total) {
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

  const DeviceDiff& rep = second.repeat;
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

bool g_kernel_pools = false;

// The buffers of one scenario: a problem per kernel (in that kernel's pool when pools are on, so no
// kernel's worker maps another's buffers), the truth of the current draw, two snapshots.
struct Workspace {
  Workspace(const Scenario& s, const std::vector<const KernelInfo*>& kernels) {
    for (const KernelInfo* k : kernels) {
      if (problems.count(k->name)) continue;
      std::optional<PoolScope> scope;
      if (g_kernel_pools) {
        KernelPool& pool = pool_for(k->name);
        pool.reserve(Problem::kernel_bytes(s));
        scope.emplace(pool);
      }
      problems[k->name] = std::make_unique<Problem>(s);
    }
    const Problem& any = *problems.begin()->second;
    snap[0] = make_snapshot(any);
    snap[1] = make_snapshot(any);
  }
  Problem& of(const KernelInfo& k) { return *problems.at(k.name); }
  std::map<std::string, std::unique_ptr<Problem>> problems;
  DeviceTruth truth;
  DeviceSnapshot snap[2];
};

// Bytes the scenario's workspace must allocate now: its private buffers, and what the kernels'
// pools cannot reuse.
size_t fresh_bytes(const Scenario& s, const std::vector<const KernelInfo*>& kernels) {
  size_t fresh = verify_device_bytes(s, 0);
  for (const KernelInfo* k : kernels) {
    const size_t need = Problem::kernel_bytes(s), reuse = g_kernel_pools ? pool_for(k->name).reusable() : 0;
    fresh += need > reuse ? need : 0;
  }
  return fresh;
}

Judgement judge_errors(const Scenario& s, const DeviceErrors& e, const Stats* base, const Tolerance& tol) {
  if (!base) return judge_absolute(e.o, e.lse, tol.of(s.dtype));
  Judgement j = judge_against_initial(e.o, e.lse, base->o, base->lse, tol.ratio_to_initial, tol.of(s.dtype));
  judge_ceiling(j, e.o, e.lse, tol.of(s.dtype));
  return j;
}

// Calls `kernel` twice on its problem's current inputs and judges both calls: against the initial
// kernel's errors (`base`), or by the dtype's absolute bounds when it is the initial kernel.
DistributionOutcome judge_kernel(Workspace& w, const KernelInfo& kernel, const Stats* base, const Tolerance& tol,
                                 cudaStream_t st) {
  Problem& p = w.of(kernel);
  const Scenario& s = p.scenario;
  DistributionOutcome r;
  const DeviceCall first = device_guarded_call(p, kernel, w.truth, w.snap[0], nullptr, st);
  const DeviceCall second = device_guarded_call(p, kernel, w.truth, w.snap[1], &w.snap[0], st);
  r.o = first.errors.o;
  r.lse = first.errors.lse;
  r.has_initial = base != nullptr;
  if (base) {
    r.initial_o = base->o;
    r.initial_lse = base->lse;
  }
  r.judgement = judge_errors(s, first.errors, base, tol);
  // The second call is judged too: a wrong second call is wrong, not merely nondeterministic.
  for (const auto& why : judge_errors(s, second.errors, base, tol).reasons)
    if (std::find(r.judgement.reasons.begin(), r.judgement.reasons.end(), why) == r.judgement.reasons.end())
      r.judgement.fail("second call: " + why);
  judge_calls(r, first, second, p.q_elems());
  r.o_worst_at = bshd_location(r.o.worst_index, s.seqlen_q, s.heads_q, s.head_dim);
  r.lse_worst_at = lse_location(r.lse.worst_index, s.seqlen_q, s.heads_q);
  return r;
}

// The error bound of a batch whose kernels do not include the initial kernel: one call, judged by
// the dtype's absolute bounds (a bound that is itself wrong cannot judge the others). Its own
// determinism and input checks are its own tests' (verify.initial.*), not the batch's.
DistributionOutcome bound_call(Workspace& w, const KernelInfo& initial, const Tolerance& tol, cudaStream_t st) {
  Problem& p = w.of(initial);
  const DeviceCall call = device_guarded_call(p, initial, w.truth, w.snap[0], nullptr, st);
  DistributionOutcome r;
  r.o = call.errors.o;
  r.lse = call.errors.lse;
  r.judgement = judge_errors(p.scenario, call.errors, nullptr, tol);
  return r;
}

// Fails a kernel that modified its inputs (regenerated from the seed and compared on the device).
void check_inputs(Problem& p, DistributionOutcome& r, uint64_t seed, Distribution d, cudaStream_t st) {
  r.input_mismatches = count_input_mismatches(p.params, seed, d, st);
  if (r.input_mismatches > 0)
    r.judgement.fail("inputs: " + std::to_string(r.input_mismatches) + " elements of Q/K/V were modified");
}

// After an exception: whether the judge's context still works (an allocation that failed) or not
// (a sticky error: nothing more can be checked in this process).
bool device_usable() {
  cudaGetLastError();
  return cudaDeviceSynchronize() == cudaSuccess;
}

// Both input draws of a scenario: fresh inputs in every kernel's problem, the truth from the
// initial kernel's (no kernel under test can reach it), then the initial kernel, then the others.
void run_draws(const std::vector<const KernelInfo*>& kernels, const KernelInfo& initial,
               const std::vector<const KernelInfo*>& all, const Scenario& s, const Tolerance& tol, uint64_t base_seed,
               cudaStream_t st, std::vector<CaseOutcome>& out) {
  // ATTNGATE_VERIFY_PHASES=1: where a scenario's time goes, on stderr.
  static const bool show_phases = std::getenv("ATTNGATE_VERIFY_PHASES") != nullptr;
  auto t_phase = std::chrono::steady_clock::now();
  std::string phases;
  auto phase = [&](const std::string& name) {
    if (!show_phases) return;
    const auto now = std::chrono::steady_clock::now();
    phases += " " + name + "=" + std::to_string(std::chrono::duration<double, std::milli>(now - t_phase).count()).substr(0, 6);
    t_phase = now;
  };
  Workspace w(s, all);
  const bool initial_under_test =
      std::any_of(kernels.begin(), kernels.end(), [&](const KernelInfo* k) { return k->name == initial.name; });
  phase("alloc");
  int index = 0;
  for (Distribution d : kDistributions) {
    const uint64_t seed = scenario_seed(base_seed, s.id, index++);
    // New contents at the same pointers: a kernel that replays an earlier output fails here.
    for (auto& [name, p] : w.problems) p->fill(seed, d, st);
    w.truth = device_ground_truth(w.of(initial), st);
    ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
    phase("truth");
    // The initial kernel first; its error bounds every other kernel's. If it cannot run the shape,
    // or is wrong on it, it cannot judge the others.
    Stats base;
    DistributionOutcome initial_run;
    try {
      initial_run = initial_under_test ? judge_kernel(w, initial, nullptr, tol, st) : bound_call(w, initial, tol, st);
      base = {initial_run.o, initial_run.lse};
      if (initial_under_test) check_inputs(w.of(initial), initial_run, seed, d, st);
      phase(initial.name);
    } catch (const std::exception& e) {
      if (auto why = unsupported_reason(e)) {
        for (auto& c : out)
          if (c.status.empty()) c.status = "skipped", c.detail = "the initial kernel declines it: " + *why;
        return;
      }
      throw std::runtime_error("the initial kernel, which sets the error bound, threw: " + std::string(e.what()));
    }
    for (size_t i = 0; i < kernels.size(); ++i) {
      CaseOutcome& c = out[i];
      if (!c.status.empty()) continue;  // skipped or failed to run on an earlier distribution
      const bool is_initial = kernels[i]->name == initial.name;
      DistributionOutcome r;
      if (!is_initial && !initial_run.judgement.pass) {
        c.status = "error";
        c.detail = "the initial kernel fails this scenario (" +
                   (initial_run.judgement.reasons.empty() ? std::string("?") : initial_run.judgement.reasons[0]) +
                   "), so its error cannot bound " + c.kernel + "'s";
        continue;
      }
      try {
        r = is_initial ? initial_run : judge_kernel(w, *kernels[i], &base, tol, st);
      } catch (const std::exception& e) {
        if (!device_usable()) throw;
        const auto why = unsupported_reason(e);
        c.status = why ? "skipped" : "error";
        c.detail = why ? *why : e.what();
        continue;
      }
      if (!is_initial) check_inputs(w.of(*kernels[i]), r, seed, d, st);
      phase(kernels[i]->name);
      r.distribution = d;
      r.seed = seed;
      c.runs.push_back(std::move(r));
    }
  }
  if (show_phases) std::fprintf(stderr, "attngate_verify: phases %s:%s\n", s.id.c_str(), phases.c_str());
}

}  // namespace

void use_kernel_pools(bool on) { g_kernel_pools = on; }

std::vector<CaseOutcome> verify_scenario(const std::vector<const KernelInfo*>& kernels, const KernelInfo& initial,
                                         const Scenario& s, const Tolerance& tol, uint64_t base_seed,
                                         cudaStream_t st) {
  std::vector<CaseOutcome> out(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    out[i].kernel = kernels[i]->name;
    out[i].scenario = s.id;
    out[i].ground_truth = "gpu_reference_fp32";
    out[i].base_seed = base_seed;
  }
  auto fail_all = [&](const std::string& status, const std::string& detail) {
    for (auto& c : out)
      if (c.status.empty()) c.status = status, c.detail = detail;
    return out;
  };
  std::vector<const KernelInfo*> all = {&initial};
  for (const KernelInfo* k : kernels)
    if (k->name != initial.name) all.push_back(k);
  const size_t bytes = verify_device_bytes(s, int(all.size()));
  try {
    require_device_memory(s, bytes, fresh_bytes(s, all));
  } catch (const std::exception& e) {
    return fail_all("error", e.what());
  }
  for (auto& c : out) c.device_bytes = int64_t(bytes);
  try {
    run_draws(kernels, initial, all, s, tol, base_seed, st, out);
  } catch (const std::exception& e) {
    if (!device_usable()) throw;  // the batch cannot go on
    return fail_all("error", e.what());
  }
  for (auto& c : out)
    if (c.status.empty()) c.status = c.pass() ? "passed" : "failed";
  return out;
}

CaseOutcome verify_case(const KernelInfo& kernel, const KernelInfo& initial, const Scenario& s,
                        const Tolerance& tol, uint64_t base_seed, cudaStream_t st) {
  if (kernel.name == "reference") return verify_reference(kernel, s, base_seed, st);
  return verify_scenario({&kernel}, initial, s, tol, base_seed, st).front();
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
