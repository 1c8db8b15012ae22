// One verification case: a kernel on a scenario, on both input distributions, with the checks that
// make the result hard to game (verify/README.md, "Anti-gaming checks").
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "attngate/inputs.hpp"
#include "attngate/registry.hpp"
#include "attngate/scenario.hpp"
#include "attngate/verify/device_check.hpp"
#include "attngate/verify/metrics.hpp"
#include "attngate/verify/problem.hpp"
#include "attngate/worker/libraries.hpp"

namespace attngate::verify {

// The GPU fp32 reference is itself checked against the Eigen reference; both are fp32, so the
// bound only has to absorb summation-order differences.
inline constexpr double kReferenceAgreement = 1e-4;

// Planted cheats (kernels/adversarial/) are kernels named `cheat_*`. They fail by design, so the
// generated verify and bench tests skip them on every suite but the adversarial one
// (kernels/adversarial/scenarios/adversarial.yaml), where the `adversarial` tests run them, and a
// suite whose settings name them (a gate run on a cheat: `candidate_kernel: cheat_no_causal_mask`).
inline constexpr const char* kAdversarialSuite = "adversarial";
// Controls built beside them (`control_*`, kernels/adversarial/control_*.cu) follow the same rule.
inline bool is_planted_cheat(const KernelInfo& k) { return worker::is_planted(k.name); }
// Whether the generated tests of `suite` include kernel k (the planted-cheat rule only).
inline bool planted_cheat_allowed(const KernelInfo& k, const Suite& suite) {
  if (!is_planted_cheat(k) || suite.name == kAdversarialSuite) return true;
  for (const auto& [key, value] : suite.settings)
    if (value == k.name) return true;
  return false;
}

// Prefixes of the failure reasons the anti-gaming checks add to a Judgement; stable, since the
// adversarial tests and the gate report match on them. The metric rules of metrics.cpp add
// "O: ... NaN/Inf values", "O: max abs error ...", "LSE: ...", and verify_case adds
// "O: N bytes written outside ..." and "inputs: N elements of Q/K/V were modified".
inline constexpr const char* kReasonLateWrites = "late writes:";
inline constexpr const char* kReasonNotDeterministic = "not deterministic:";
inline constexpr const char* kReasonStreamState = "stream state:";

struct DistributionOutcome {
  Distribution distribution = Distribution::standard;
  uint64_t seed = 0;
  ErrorStats o, lse;                // the kernel under test against the ground truth
  bool has_initial = false;         // false for `initial` itself and for `reference`
  ErrorStats initial_o, initial_lse;
  int64_t o_guard_violations = 0, lse_guard_violations = 0;
  uint64_t input_mismatches = 0;    // input elements the kernel changed
  // Elements that changed after cudaDeviceSynchronize although the kernel's stream had finished.
  int64_t late_o = 0, late_lse = 0;
  // A second call on the same inputs: elements whose bits differ from the first call's, and how
  // many of them still hold the NaN poison (left unwritten by the second call).
  int64_t repeat_o_diff = 0, repeat_lse_diff = 0, repeat_o_unwritten = 0;
  std::string stream_state;         // what a call changed on its stream or device, "" when nothing
  std::string o_worst_at, lse_worst_at;
  Judgement judgement;
};

struct CaseOutcome {
  std::string kernel, scenario, ground_truth;  // ground_truth: "gpu_reference_fp32" or "eigen_cpu"
  uint64_t base_seed = 0;
  std::vector<DistributionOutcome> runs;
  // "passed", "failed", "skipped" (the kernel declined the shape; detail says why) or "error" (a
  // call threw, or the scenario does not fit in device memory; detail says what).
  std::string status, detail;
  int64_t device_bytes = 0;  // what the judge allocated for the scenario (verify_device_bytes)
  bool pass() const;
};

// Every kernel in `kernels` on scenario `s`, on each input distribution with fresh inputs from
// `base_seed`, against one fp32 ground truth per draw that all of them share. Everything is
// judged on the device; only summaries cross to the host. `initial` runs first on every draw and
// its error sets the bound of every other kernel (a kernel in `kernels` that is `initial` is judged
// by the dtype's absolute bounds). Returns one outcome per kernel, in order; a scenario that does
// not fit in device memory is an `error` for each, with nothing allocated.
//
// Each kernel gets its own copy of the inputs (and its own pool, with use_kernel_pools), so no
// kernel can read or change another's buffers; the truth is computed from the initial kernel's copy
// before any kernel runs. A kernel is an `error` where the initial kernel itself fails.
//
// Per kernel and draw: two calls on the same inputs, the outputs poisoned before each; each call's
// outputs are snapshot on the device as soon as `stream` has finished, without a device-wide
// synchronization, and compared again after cudaDeviceSynchronize. Besides the pass rule, it fails
// on writes outside the outputs, modified inputs, outputs that change after the device-wide
// synchronization (work on another stream), a second call that differs from the first (races,
// skipped launches; deterministic kernels are required), and a persisting-L2 window or limit left
// on the stream or device. `stream` must be a non-default stream.
std::vector<CaseOutcome> verify_scenario(const std::vector<const KernelInfo*>& kernels, const KernelInfo& initial,
                                         const Scenario& s, const Tolerance& tol, uint64_t base_seed,
                                         cudaStream_t stream);

// On: verify_scenario takes each kernel's buffers from that kernel's pool (pool_for(name)), kept
// from scenario to scenario (a batch). Off (the default): fresh allocations per scenario.
void use_kernel_pools(bool on);

// One kernel on one scenario: verify_scenario({&kernel}, ...), except the GPU reference kernel
// (`reference`), which is checked against the Eigen reference on the host.
CaseOutcome verify_case(const KernelInfo& kernel, const KernelInfo& initial, const Scenario& s,
                        const Tolerance& tol, uint64_t base_seed, cudaStream_t stream);

// A multi-line human-readable report of the outcome.
std::string describe(const CaseOutcome& c, const Scenario& s);

// ---- Building blocks, shared with the bench harness's check of the timed run -----------------

// What a kernel could leave behind on its stream or device to help the next call: a persisting-L2
// access policy window on the stream, a persisting-L2 set-aside on the device.
struct StreamState {
  void* window_base = nullptr;
  size_t window_bytes = 0;
  float window_hit_ratio = 0;
  size_t persisting_l2_limit = 0;
};
StreamState read_stream_state(cudaStream_t st);
// "" when `after` equals `before`, else what changed, in words.
std::string describe_state_change(const StreamState& before, const StreamState& after);
// Removes any access policy window from `st`, restores the persisting-L2 limit of `baseline`, and
// resets persisting L2 lines to normal.
void reset_stream_state(cudaStream_t st, const StreamState& baseline);

// One guarded call of `kernel` on `p`'s current inputs: poison O and LSE, launch on `st`,
// synchronize `st` only and snapshot the outputs into `mine` (on the device), judge them against
// `truth` and, when given, diff them from the `previous` call's snapshot; note changes of the
// stream state (and undo them), then cudaDeviceSynchronize, diff again, and check the guard zones.
struct DeviceCall {
  DeviceErrors errors;     // the outputs when `st` had finished, against the truth
  DeviceDiff repeat;       // those outputs against the previous call's (when given)
  DeviceDiff late;         // how the outputs changed after cudaDeviceSynchronize
  int64_t o_guard = 0, lse_guard = 0;
  std::string stream_state;  // describe_state_change() of the call, or what a worker undid
};
DeviceCall device_guarded_call(Problem& p, const KernelInfo& kernel, const DeviceTruth& truth, DeviceSnapshot& mine,
                               const DeviceSnapshot* previous, cudaStream_t st);

}  // namespace attngate::verify
