#pragma once
// The gate report (<build>/gate/report.json, schema attngate.gate_report/1), typed once: what
// `attngate report` writes and the dry run synthesizes, and what the hooks read. agent_hooks/README.md
// ("The gate") says what the fields mean. Fields the gate may write as null (a scenario that never
// ran has no timings) are optional; absent fields take their defaults.
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/bench/comparison_document.hpp"  // SmClockSummary; std::optional <-> null

namespace attngate::hooks {

inline constexpr const char* kReportSchema = "attngate.gate_report/1";

// One kernel's figures on a scenario as the gate judged them: the comparison's KernelTiming
// (bench/comparison_document.hpp), the figures the rules read (judged_timing). null: not measured.
struct Timing {
  std::optional<double> event_ms, kernel_ms, span_ms, wall_ms, cycles, kernel_cycles, tflops, pct_peak,
      memcpy_per_call, memset_per_call, sm_clock_mhz;
  std::optional<std::int64_t> kernel_count, kernel_count_min, kernel_count_max;
  bool kernel_count_changed = false;
  std::optional<std::int64_t> streams, foreign_stream_kernels, traced_calls, held_timeouts;
  std::vector<std::string> kernel_names;
  // The other clocks the rules compare, and isolation (kernels/worker): where the kernel ran, the
  // calls on fresh inputs, the calls the judge checked, the worker's inventory and what it lacked.
  std::optional<double> traced_event_ms, traced_wall_ms, cupti_minus_traced_event_us, isolated, fresh_calls,
      fresh_event_ms, fresh_wall_ms, checked_calls, inventory_kernels, foreign_kernels;
  // The judge's clock (bench/README.md): its events around the worker's call, round trip included;
  // the worker's own events; the judge's work before its clock; its hold kernel's longest gap; the
  // round trip subtracted and its spread per call (the clock's resolution, also as % of event_ms).
  std::optional<double> judge_ms, worker_event_ms, pre_ms, hold_gap_max_us, handoff_us, reference_handoff_us,
      solo_handoff_us, judge_resolution_us, judge_resolution_pct, alone_event_ms, lowest_handoff_us,
      round_trip_correction_us;
  std::string process;
  std::vector<std::string> foreign_kernel_names;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Timing, event_ms, kernel_ms, span_ms, wall_ms, cycles, kernel_cycles,
                                                tflops, pct_peak, memcpy_per_call, memset_per_call, sm_clock_mhz,
                                                kernel_count, kernel_count_min, kernel_count_max, kernel_count_changed,
                                                streams, foreign_stream_kernels, traced_calls, held_timeouts,
                                                kernel_names, traced_event_ms, traced_wall_ms,
                                                cupti_minus_traced_event_us, isolated, fresh_calls, fresh_event_ms,
                                                fresh_wall_ms, checked_calls, inventory_kernels, foreign_kernels,
                                                judge_ms, worker_event_ms, pre_ms, hold_gap_max_us, handoff_us,
                                                reference_handoff_us, solo_handoff_us, judge_resolution_us,
                                                judge_resolution_pct, alone_event_ms, process,
                                                foreign_kernel_names, lowest_handoff_us, round_trip_correction_us)

// The fastest library measured on this GPU for a scenario (bench/baselines/<gpu>.json).
struct BestBaselineRef {
  std::string library;
  std::optional<double> tflops;
  std::string date;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BestBaselineRef, library, tflops, date)

struct ScenarioResult {
  std::string id;
  std::string shape;   // "b=4 sq=4096 sk=4096 hq=.. hkv=.. d=128 causal bf16"; empty when not reported
  std::string status;  // the verify result's (passed, failed, skipped, error) or missing, stale, unreadable
  std::optional<bool> correct;  // null: no result from this run
  bool nondeterministic = false;  // within the bounds, but repeated calls differed
  // The input distributions whose run failed, in the verifier's order ("standard" first, then
  // "large_scores", ...): what the questions read, rather than a reason's text.
  std::vector<std::string> failed_distributions;
  std::optional<double> o_max_abs, lse_max_abs;
  std::string base_seed;  // ATTNGATE_SEED replays the verification
  // The gate suite's rows: the timed comparison.
  std::optional<double> speedup, ci_low, ci_high, kernel_speedup, wall_speedup, tflops, percent_of_peak;
  std::optional<std::int64_t> calls;
  std::optional<double> floor_ms;  // no call can beat it (IMPLAUSIBLE)
  Timing candidate, baseline;
  std::vector<std::string> flags;
  std::optional<BestBaselineRef> best_baseline;
  std::optional<double> fraction_of_best;  // tflops / the best baseline's
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ScenarioResult, id, shape, status, correct, nondeterministic,
                                                failed_distributions, o_max_abs, lse_max_abs, base_seed, speedup, ci_low, ci_high,
                                                kernel_speedup, wall_speedup, tflops, percent_of_peak, calls, floor_ms,
                                                candidate, baseline, flags, best_baseline, fraction_of_best)

struct Reason {
  std::string code;
  std::vector<std::string> scenarios;
  std::string detail;
};

struct Target {
  std::string kernel, baseline;
  std::optional<double> geomean, scenario_floor;
  std::string geomean_source, scenario_floor_source, rule;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Target, kernel, baseline, geomean, scenario_floor, geomean_source,
                                                scenario_floor_source, rule)

struct Geomean {
  std::optional<double> speedup, ci_low, ci_high, kernel_speedup, wall_speedup;
  std::int64_t scenarios = 0;
  int bootstrap_resamples = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Geomean, speedup, ci_low, ci_high, kernel_speedup, wall_speedup,
                                                scenarios, bootstrap_resamples)

// Correctness over every suite the gate checks (settings.correctness_suites and the gate suite).
struct Correctness {
  std::vector<std::string> suites;
  std::int64_t scenarios = 0, passed = 0;
  std::vector<std::string> failed;  // scenario ids not correct
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Correctness, suites, scenarios, passed, failed)

// The gate's policy (README: "Setting targets") as applied, each value with its source.
struct PolicyRecord {
  double clock_tolerance = 0;  // CLOCK_DISAGREE tolerance: this share of the slower event time ...
  double clock_slack_ms = 0;   // ... plus this, for comparisons of event times (the worker's clocks)
  double wall_slack_ms = 0;    // ... or plus this, for the judge's wall clock (it carries the process round trip)
  double baseline_disturbed_us = 0;     // BASELINE_DISTURBED: the baseline's round trip may move this much
  double baseline_alone_tolerance = 0;  // ... and its time from its time alone, as a share (0: not judged)
  double baseline_alone_slack_us = 0;   // ... plus this many µs (a context switch more on tiny calls)
  double worker_clock_trust_us = 0;     // CLOCK_DISAGREE (h): the most the candidate worker's word moved its clock
  std::string clock_tolerance_source, clock_slack_ms_source, wall_slack_ms_source, baseline_disturbed_us_source,
      baseline_alone_tolerance_source, baseline_alone_slack_us_source, worker_clock_trust_us_source;
  std::string candidate_foreign_kernels, baseline_foreign_kernels, nondeterminism, sandbox;  // fail | allow
  std::string candidate_foreign_kernels_source, baseline_foreign_kernels_source, nondeterminism_source,
      sandbox_source;
  // Library-backed controls (the in-process cuDNN kernel): kernels under test that may launch
  // kernels outside their inventory. The shipped gate names none, so a candidate never may.
  std::vector<std::string> library_controls;
  std::string library_controls_source;
  std::string clock_rule, plausibility_rule, isolation;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PolicyRecord, clock_tolerance, clock_slack_ms, wall_slack_ms,
                                                baseline_disturbed_us, baseline_alone_tolerance, clock_tolerance_source,
                                                clock_slack_ms_source, wall_slack_ms_source,
                                                baseline_disturbed_us_source, baseline_alone_tolerance_source,
                                                baseline_alone_slack_us, baseline_alone_slack_us_source,
                                                worker_clock_trust_us, worker_clock_trust_us_source,
                                                candidate_foreign_kernels, baseline_foreign_kernels, nondeterminism,
                                                candidate_foreign_kernels_source, baseline_foreign_kernels_source,
                                                nondeterminism_source, sandbox, sandbox_source, library_controls,
                                                library_controls_source,
                                                clock_rule, plausibility_rule, isolation)

// Where the figures came from, and the tamper evidence the commit path checks.
struct Provenance {
  std::string gpu;
  int device_sm = 0;
  std::string driver, cuda_driver, cuda;
  std::optional<double> peak_tflops;
  std::optional<bench::SmClockSummary> sm_clock;
  std::optional<double> sm_clock_mhz;
  std::string attngate_commit;
  bool attngate_dirty = false;
  std::string candidate, candidate_sha256, base_seed;
  std::string candidate_tree;                        // the folder hashed, relative to the repository
  std::optional<std::string> candidate_tree_sha256;  // at report time; null when it cannot be hashed
  std::string candidate_tree_error;
  std::optional<std::string> candidate_tree_sha256_built;  // what the timed worker was built from
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Provenance, gpu, device_sm, driver, cuda_driver, cuda, peak_tflops,
                                                sm_clock, sm_clock_mhz, attngate_commit, attngate_dirty, candidate,
                                                candidate_sha256, base_seed, candidate_tree, candidate_tree_sha256,
                                                candidate_tree_error, candidate_tree_sha256_built)

// The harness files (everything but the kernel under test) against the commit.
struct HarnessRecord {
  bool verified = false;
  std::string why;
  std::vector<std::string> modified, excluded, roots;
  std::map<std::string, std::string> sha256;  // relative path -> hex
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HarnessRecord, verified, why, modified, excluded, roots, sha256)

struct BestBaselinesInfo {
  std::optional<std::string> file;
  std::string gpu, updated, note;
  std::int64_t scenarios = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BestBaselinesInfo, file, gpu, updated, note, scenarios)

struct PerformanceInfo {
  std::string file;
  std::optional<double> wall_s, noise_target;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PerformanceInfo, file, wall_s, noise_target)

struct ReportInputPaths {
  std::string results_dir, perf, started_after, scenarios_dir;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ReportInputPaths, results_dir, perf, started_after, scenarios_dir)

// What the gate's re-run of a suspicious gain found: `attngate gate` adds it, and
// suspicious_confirmed, to the first run's report before the lineage records it.
struct Confirmation {
  std::optional<double> geomean, ci_low, ci_high;  // the re-run's
  std::optional<std::string> report_sha256;        // of the re-run's report.json (report.confirm.json)
  std::string verdict;
  std::optional<std::string> report;  // its path
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Confirmation, geomean, ci_low, ci_high, report_sha256, verdict, report)

// baseline name -> scenario id -> TFLOPS.
using Baselines = std::map<std::string, std::map<std::string, double>>;

// The whole report: what `attngate report` writes (gate_report.cpp) and the dry run synthesizes,
// and what every reader parses.
struct GateReport {
  std::string schema = kReportSchema;
  std::string verdict;  // "pass" or "fail"
  std::vector<Reason> reasons;
  std::string suite;
  Target target;
  PolicyRecord policy;
  Geomean geomean;
  std::vector<ScenarioResult> scenarios;
  Correctness correctness;
  Baselines baselines;
  BestBaselinesInfo best_baselines;
  Provenance provenance;
  HarnessRecord harness;
  PerformanceInfo performance;
  ReportInputPaths inputs;
  std::string time;
  std::optional<double> wall_s;
  bool dry_run = false;  // synthesized by `attngate gate --dry-run`, never measured
  // Set by `attngate gate` after the re-run of a suspicious gain; null otherwise.
  std::optional<bool> suspicious_confirmed;
  std::optional<Confirmation> confirmation;
};

// UTC time stamps as the report and the lineage write them: "YYYY-MM-DDTHH:MM:SSZ".
std::string now_iso8601();
std::string iso8601_utc(std::time_t t);
// Seconds since the epoch; nullopt when the text is not "YYYY-MM-DDTHH:MM:SSZ".
std::optional<long long> parse_iso8601(const std::string& text);

// Throws std::runtime_error naming the offending field.
GateReport parse_report(const nlohmann::json& j);
GateReport load_report(const std::filesystem::path& file);
// A file as JSON, else nothing with the reason in *error ("cannot read FILE", "FILE: not JSON: ...").
std::optional<nlohmann::json> read_json(const std::filesystem::path& file, std::string* error);
// A fail report made by attngate itself when the gate produced none (build failed, no report).
GateReport synthesized_failure(const std::string& code, const std::string& detail);

bool has_reason(const std::vector<Reason>& reasons, const std::string& code);

void to_json(nlohmann::json& j, const Reason& r);
void from_json(const nlohmann::json& j, Reason& r);  // `code` is required
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GateReport, schema, verdict, reasons, suite, target, policy, geomean,
                                                scenarios, correctness, baselines, best_baselines, provenance, harness,
                                                performance, inputs, time, wall_s, dry_run, suspicious_confirmed,
                                                confirmation)

}  // namespace attngate::hooks
