#pragma once
// The gate's settings as numbers (agent_hooks/README.md, "Setting targets"): the suites it judges,
// the targets (the gate suite's settings, overridden by the environment) and the policy of every
// rule (the suite's settings or the defaults below), each recorded in report.json with its source.
#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "attngate/gate/report.hpp"
#include "attngate/scenario.hpp"

namespace attngate::hooks {

// A configuration the report cannot be judged under (bad target, unknown suite): exit 2, no report.
class ReportConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thresholds of the WALL_KERNEL_MISMATCH rule (README: "Reason codes").
inline constexpr double kMismatchRatio = 1.5;          // clock / kernel time of the candidate above this
inline constexpr double kMismatchExcessShare = 0.2;    // and its excess over the baseline's above this x kernel time
inline constexpr double kMismatchExcessMinMs = 0.025;  // ... and above 25 µs

// Defaults of the gate suite's policy settings; each is overridden by settings.<name>.
inline constexpr const char* kDefaultClockTolerance = "0.05";  // CLOCK_DISAGREE: share of the slower event time
inline constexpr const char* kDefaultClockSlackMs = "0.03";    // ... plus this many ms (event-time pairs)
inline constexpr const char* kDefaultWallSlackMs = "0.3";      // ... or this many (the judge's wall clock)
// BASELINE_DISTURBED: the baseline's round trip to the judge may differ from the one measured alone
// by this many µs (its spread per call was about 0.5 µs on the H200, 2026-12-01; a GPU hog in
// another process added 180).
inline constexpr const char* kDefaultBaselineDisturbedUs = "20";
// ... and its median time in the comparison may differ from its time alone, before the candidate's
// worker existed, by this share (0: not judged) plus this many µs: on the H200 (2026-12-02) a
// 26 µs call of an honest pair ran 0.6 µs slower beside the second, idle, worker than alone, twice
// (the GPU switches among three contexts instead of two), 2.3 % of that call.
inline constexpr const char* kDefaultBaselineAloneTolerance = "0.02";
inline constexpr const char* kDefaultBaselineAloneSlackUs = "1.5";
inline constexpr const char* kDefaultWorkerClockTrustUs = "0";
// SANDBOX_UNAVAILABLE: a worker ran without a mechanism of its seal (fail) or the report says so
// and goes on (allow).
inline constexpr const char* kDefaultSandbox = "fail";
inline constexpr const char* kDefaultCandidateForeignKernels = "fail";  // FOREIGN_KERNEL for the candidate
inline constexpr const char* kDefaultBaselineForeignKernels = "allow";  // ... for the baseline (cuDNN is honest)
inline constexpr const char* kDefaultNondeterminism = "fail";           // NONDETERMINISTIC

// The policy every rule reads: the numbers and choices report.json records (PolicyRecord, each
// with its source), and each fail-or-allow choice as the rules test it.
struct Policy : PolicyRecord {
  bool candidate_foreign_fail = true, baseline_foreign_fail = false, nondeterminism_fail = true, sandbox_fail = true;
  bool library_control(const std::string& kernel) const {
    return std::find(library_controls.begin(), library_controls.end(), kernel) != library_controls.end();
  }
};

// Throws ReportConfigError naming the setting that is not a number, or not fail/allow.
Policy read_policy(const Suite& suite, const std::string& suite_file);
// ATTNGATE_GEOMEAN_TARGET / ATTNGATE_SCENARIO_FLOOR, else the suite's settings; no geomean target at
// all is a ReportConfigError.
Target read_target(const Suite& suite, const std::string& suite_file, const std::string& kernel,
                   const std::string& baseline);

// The suites of a folder, and one of them by name; ReportConfigError when they cannot be had.
std::vector<Suite> load_suites(const std::filesystem::path& dir);
const Suite& find_suite(const std::vector<Suite>& suites, const std::string& name, const std::filesystem::path& dir);
// The suites the gate judges correctness on: its own, then settings.correctness_suites in order.
std::vector<const Suite*> correctness_suites(const std::vector<Suite>& suites, const Suite& gate,
                                             const std::filesystem::path& dir);
// settings.<key> of the suite, "" when absent.
std::string setting(const Suite& s, const std::string& key);

}  // namespace attngate::hooks
