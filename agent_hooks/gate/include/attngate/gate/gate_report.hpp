#pragma once
// `attngate report`: the gate's last step. It runs nothing: it reads the outcomes the gate's tests
// left in this run (one verify result per scenario, the performance comparison), judges them
// against the suite's targets, adds provenance and tamper evidence, and writes
// <out>/report.json (schema attngate.gate_report/1) and <out>/report.md. agent_hooks/README.md
// states every rule; gate/README.md gives the order to read the files in.
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "attngate/gate/policy.hpp"  // ReportConfigError
#include "attngate/gate/report.hpp"

namespace attngate::hooks {

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
  // The gate tests' start records (verify/start_record.hpp), to tell a test that did not run from one
  // that crashed or ran into its timeout.
  std::filesystem::path start_records_dir;
  double verify_timeout_s = 0;          // the TIMEOUT of the verify tests and of gate.performance
  double perf_timeout_s = 0;
};

struct GateReportOutput {
  GateReport typed;       // the report, read by its fields
  nlohmann::json report;  // report.json: `typed` as written
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
