#pragma once
// The timing rules (agent_hooks/README.md, "Reason codes"): pure functions of one scenario's typed
// figures, the candidate's and the baseline's (Timing, read once from the comparison document),
// and the policy. Each returns what it found ("" or nothing: the rule holds); judge_timed_row
// turns the hits into flags and reasons, judge_timing does it for every row and the geomean.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "attngate/bench/comparison_document.hpp"
#include "attngate/gate/digest.hpp"
#include "attngate/gate/policy.hpp"
#include "attngate/gate/reasons.hpp"
#include "attngate/gate/report.hpp"

namespace attngate::hooks {

// One kernel's figures as the rules read them, from the comparison's KernelTiming.
Timing judged_timing(const bench::KernelTiming& t);

// WALL_KERNEL_MISMATCH: the candidate's event (or wall) time over its CUPTI kernel time, beyond
// what the baseline's clock carries over its own.
struct Mismatch {
  bool hit = false;
  std::string detail;
};
Mismatch clock_mismatch(const Timing& cand, const Timing& base, bool wall_clock);

// CLOCK_DISAGREE: each pair of the candidate's clocks must differ as the baseline's do, (a)-(h);
// the comparisons that failed, each naming itself and its figures.
std::vector<std::string> clock_disagreements(const Timing& c, const Timing& b, const Policy& p);

// BASELINE_DISTURBED: "" when the baseline's figures show nothing else ran on the GPU while it was timed.
std::string baseline_disturbance(const Timing& b, const Policy& p);

// IMPLAUSIBLE: no clock of the candidate below the device's floor for the scenario's work.
struct Plausibility {
  bool hit = false;
  std::string detail;
  std::optional<double> floor_ms;
};
struct DeviceFloor {
  std::optional<double> peak_tflops, hbm_tbps;  // the device's
  std::optional<double> flops, min_bytes;       // the scenario's
};
Plausibility plausibility(const DeviceFloor& d, const Timing& c, const Timing& b, double wall_slack_ms);

// FOREIGN_KERNEL's detail for one kernel's timing, "" when it launched only its inventory's kernels.
std::string foreign_kernels(const Timing& t, const std::string& role, const std::string& name, const char* key);
// FORBIDDEN_SYMBOL: what the timed workers' kernel libraries define that they must not, "" when nothing.
std::string forbidden_symbols(const bench::ComparisonDocument& P);
// SANDBOX_UNAVAILABLE: what of the workers' seal was missing in the timed run, "" when nothing.
std::string sandbox_gaps(const bench::SandboxRecord& s);
// The reason code of a scenario the bench could not time.
std::string untimed_code(const bench::FailedScenario& f);

// Every rule above on one timed row: flags on the row, reasons for the failures.
void judge_timed_row(ScenarioResult& row, const bench::ComparisonDocument& P, const bench::ComparisonScenario& ps,
                     const Policy& policy, double floor, const std::string& kernel, const std::string& baseline,
                     Reasons& reasons);

// What the timed rows say beyond each row: the geomean and the builds the workers named.
struct TimingTally {
  Geomean geomean;
  std::set<std::string> built_trees;        // kernel_tree_sha256 of the candidate's worker, per row
  std::vector<std::string> timed_unhashed;  // rows timed in a worker that named no build
  bool timed_in_worker = false;
  std::string built_tree_dir;  // the folder that worker hashed, relative to the repository
};
// Every scenario of the suite timed and judged; the geomean's CI lower bound against the target
// (only when every scenario was timed); the comparison-wide rules (FORBIDDEN_SYMBOL, SANDBOX_UNAVAILABLE).
// perf_file names the comparison in the reasons.
TimingTally judge_timing(const std::string& perf_file, const bench::ComparisonDocument& P,
                         std::vector<ScenarioResult>& scenarios, const Policy& policy, const Target& target,
                         Reasons& reasons);

}  // namespace attngate::hooks
