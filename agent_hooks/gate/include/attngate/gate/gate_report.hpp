#pragma once
// `attngate report`: the gate's last step. It runs nothing: it reads the outcomes the gate's tests
// left in this run (one verify result per scenario, the performance comparison), judges them
// against the suite's targets, adds provenance and tamper evidence, and writes
// <out>/report.json (schema attngate.gate_report/1) and <out>/report.md. agent_hooks/README.md
// states every rule.
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace attngate::hooks {

// A configuration the report cannot be judged under (bad target, unknown suite): exit 2, no report.
class ReportConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thresholds of the WALL_KERNEL_MISMATCH rule (README: "Reason codes").
inline constexpr double kMismatchRatio = 1.5;        // clock / kernel time of the candidate above this
inline constexpr double kMismatchExcessShare = 0.2;  // and its excess over the baseline's above this x kernel time
inline constexpr double kMismatchExcessMinMs = 0.025;  // ... and above 25 µs

// Defaults of the gate suite's policy settings (README: "Setting targets"); each is overridden by
// settings.<name> of the suite file and recorded in report.json's `policy` with its source.
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
// The verifier's reason prefix for a repeated call that differs (verify/verify_case.hpp), and the
// phrase it adds when the second call left poisoned elements unwritten (skipped work, not a race).
inline constexpr const char* kNotDeterministicPrefix = "not deterministic:";
inline constexpr const char* kLeftUnwrittenPhrase = "left unwritten";

struct ReportInputs {
  std::filesystem::path repo;       // the checkout judged: commit, harness, candidate
  std::filesystem::path candidate;  // source whose SHA-256 is recorded
  // The folder whose tree hash (candidate_tree.hpp) is compared with the one built into the worker
  // (CANDIDATE_CHANGED); empty: the candidate source's folder (kernels/candidate).
  std::filesystem::path candidate_tree;
  std::string suite = "gate";
  std::filesystem::path scenarios_dir;
  std::string kernel;    // empty: settings.candidate_kernel, else "candidate"
  std::string baseline;  // empty: settings.baseline_kernel, else "initial"
  std::filesystem::path results_dir;  // verify.<kernel>.<scenario>.json
  std::filesystem::path perf;         // attngate_bench --compare_out
  std::filesystem::path out_dir;      // report.json, report.md
  std::filesystem::path started_after;  // the marker gate.setup writes; older files are stale
  std::filesystem::path ctest_log_dir;  // <build>/Testing/Temporary, to tell timeouts from crashes
  double verify_timeout_s = 0;          // the TIMEOUT of the verify tests and of gate.performance
  double perf_timeout_s = 0;
};

struct GateReportOutput {
  nlohmann::json report;  // report.json
  std::string markdown;   // report.md
  bool pass = false;
};

// Reads the environment (ATTNGATE_GEOMEAN_TARGET, ATTNGATE_SCENARIO_FLOOR), the suite's settings
// (targets and policy) and the files; throws ReportConfigError for a configuration that cannot be
// judged (a bad target or policy setting, an unknown suite).
GateReportOutput build_gate_report(const ReportInputs& in);

// report.json and report.md in out_dir, each through a rename.
void write_gate_report(const GateReportOutput& out, const std::filesystem::path& out_dir);

// gate.setup: removes the kernel's verify results for the suite, the performance JSON and the
// report, then writes the marker (in that order, so nothing left behind is newer than it).
void prepare_gate(const ReportInputs& in);

// The kernel the gate suite in `scenarios_dir` puts under test and how many scenarios the gate
// checks it on (its own suite and settings.correctness_suites), read as `attngate report` reads them.
struct GateCheckPlan {
  std::string kernel;
  int scenarios = 0;
};
GateCheckPlan gate_check_plan(const std::filesystem::path& scenarios_dir);

// Fills in the defaults (suite settings, paths under the build folder) the CLI leaves empty.
ReportInputs resolve_inputs(ReportInputs in, const std::filesystem::path& build_dir);

}  // namespace attngate::hooks
