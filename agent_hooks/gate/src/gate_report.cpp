// The gate's verdict, top down (gate/README.md): the settings, the inputs of this run, the rules of
// correctness, timing and provenance, the report and its markdown. Every rule is in rules_*.cpp.
#include "attngate/gate/gate_report.hpp"

#include <fstream>

#include "attngate/gate/best_baselines.hpp"
#include "attngate/gate/inputs.hpp"
#include "attngate/gate/markdown.hpp"
#include "attngate/gate/policy.hpp"
#include "attngate/gate/reasons.hpp"
#include "attngate/gate/rules_correctness.hpp"
#include "attngate/gate/rules_provenance.hpp"
#include "attngate/gate/rules_timing.hpp"
#include "attngate/verify/json_document.hpp"
#include "attngate/verify/start_record.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;

namespace {

std::string kernel_of(const ReportInputs& in, const Suite& s) {
  if (!in.kernel.empty()) return in.kernel;
  std::string k = setting(s, "candidate_kernel");
  return k.empty() ? "candidate" : k;
}

std::string baseline_of(const ReportInputs& in, const Suite& s) {
  if (!in.baseline.empty()) return in.baseline;
  std::string b = setting(s, "baseline_kernel");
  return b.empty() ? "initial" : b;
}

// Adds each scenario's best measured baseline (bench/baselines/<gpu>.json) and the candidate's
// fraction of its TFLOPS; returns the report's `baselines`: library -> scenario id -> TFLOPS.
Baselines apply_best_baselines(std::vector<ScenarioResult>& scenarios, const BestBaselines& best) {
  Baselines by_library;
  for (auto& row : scenarios) {
    auto it = best.scenarios.find(row.id);
    if (it == best.scenarios.end()) continue;
    const BestBaselineRef& b = it->second;
    row.best_baseline = b;
    if (row.tflops) row.fraction_of_best = *row.tflops / *b.tflops;
    by_library[b.library][row.id] = *b.tflops;
  }
  return by_library;
}

// Correctness: one verify result per scenario of every suite the gate checks; the gate suite's rows
// are returned (they also carry its timing), the others are counted in `correctness`.
std::vector<ScenarioResult> judge_correctness(const ReportInputs& in, const std::vector<Suite>& suites,
                                              const Suite& suite, const std::string& kernel, const Policy& policy,
                                              const Freshness& freshness, const StartRecords& started,
                                              Reasons& reasons, VerifyTally& tally, Correctness& correctness) {
  std::vector<ScenarioResult> rows;
  const std::vector<const Suite*> checked = correctness_suites(suites, suite, in.scenarios_dir);
  for (const Suite* cs : checked) correctness.suites.push_back(cs->name);
  for (const Suite* cs : checked)
    for (const auto& s : cs->scenarios) {
      ScenarioResult row = judge_verify_result(in, kernel, s, policy, freshness, started, reasons, tally);
      ++correctness.scenarios;
      if (row.correct.value_or(false)) ++correctness.passed;
      else correctness.failed.push_back(s.id);
      if (cs == &suite) rows.push_back(std::move(row));
    }
  if (!tally.no_device_detail.empty())
    reasons.add("NO_DEVICE", "", tally.no_device_detail + " (gate.device fails for the same reason)");
  return rows;
}

}  // namespace

GateReportOutput build_gate_report(const ReportInputs& in) {
  // The settings: the suite judged, the kernel and its baseline, the targets and the policy.
  const auto suites = load_suites(in.scenarios_dir);
  const Suite& suite = find_suite(suites, in.suite, in.scenarios_dir);
  const std::string kernel = kernel_of(in, suite), baseline = baseline_of(in, suite);
  const std::string suite_file = fs::path(suite.file).filename().string();
  GateReport report;
  report.target = read_target(suite, suite_file, kernel, baseline);
  const Policy policy = read_policy(suite, suite_file);
  report.policy = policy;  // its record: PolicyRecord

  // The inputs of this run only, and the rules.
  const Freshness freshness(in);
  const StartRecords started(in, freshness);
  Reasons reasons;
  VerifyTally tally;
  report.scenarios = judge_correctness(in, suites, suite, kernel, policy, freshness, started, reasons, tally,
                                       report.correctness);
  const std::optional<bench::ComparisonDocument> perf = load_comparison(in, kernel, baseline, freshness, started, reasons);
  TimingTally timing;
  if (perf) {
    timing = judge_timing(in.perf.filename().string(), *perf, report.scenarios, policy, report.target, reasons);
    report.performance = {in.perf.string(), perf->wall_s, perf->noise_target};
  }
  report.geomean = timing.geomean;
  report.provenance = judge_provenance(in, kernel, perf, timing, tally, reasons, report.harness);

  // The fastest library measured on this GPU, per scenario (a missing file is fine: the report says so).
  const BestBaselines best = load_best_baselines(in.repo, perf ? perf->device : std::string{});
  report.baselines = apply_best_baselines(report.scenarios, best);
  report.best_baselines = best.info;

  report.verdict = reasons.empty() ? "pass" : "fail";
  report.reasons = reasons.done();
  report.suite = suite.name;
  report.inputs = {in.results_dir.string(), in.perf.string(), in.started_after.string(), in.scenarios_dir.string()};
  report.time = now_iso8601();
  if (auto since = freshness.seconds_since_start()) report.wall_s = *since;
  return {report, report, render_markdown(report), reasons.empty()};
}

ReportInputs resolve_inputs(ReportInputs in, const fs::path& build_dir) {
  if (in.results_dir.empty()) in.results_dir = build_dir / "verify" / "results";
  if (in.out_dir.empty()) in.out_dir = build_dir / "gate";
  if (in.perf.empty()) in.perf = in.out_dir / "performance.json";
  if (in.started_after.empty()) in.started_after = in.out_dir / "started";
  if (in.start_records_dir.empty()) in.start_records_dir = verify::start_records_dir(in.results_dir);
  return in;
}

GateCheckPlan gate_check_plan(const fs::path& scenarios_dir) {
  const auto suites = load_suites(scenarios_dir);
  const Suite& gate = find_suite(suites, "gate", scenarios_dir);
  GateCheckPlan plan{kernel_of(ReportInputs{}, gate), 0};
  for (const Suite* s : correctness_suites(suites, gate, scenarios_dir)) plan.scenarios += int(s->scenarios.size());
  return plan;
}

// Removes the kernel's verify results for the suite, the performance JSON, the report and the gate
// tests' start records, then writes the marker (in that order, so nothing left behind is newer than
// it; removing the records too keeps a previous run's out on a file system with coarse times).
void prepare_gate(const ReportInputs& in) {
  const auto suites = load_suites(in.scenarios_dir);
  const Suite& suite = find_suite(suites, in.suite, in.scenarios_dir);
  const std::string kernel = kernel_of(in, suite);
  std::error_code ec;
  for (const Suite* checked : correctness_suites(suites, suite, in.scenarios_dir))
    for (const auto& s : checked->scenarios) fs::remove(result_file(in, kernel, s.id), ec);
  for (const fs::path& f : {in.perf, in.out_dir / "report.json", in.out_dir / "report.md"}) fs::remove(f, ec);
  if (!in.start_records_dir.empty()) fs::remove_all(in.start_records_dir, ec);
  fs::create_directories(in.out_dir, ec);
  fs::create_directories(in.started_after.parent_path(), ec);
  std::ofstream marker(in.started_after, std::ios::trunc);
  marker << "attngate gate started " << now_iso8601() << "\n";
  if (!marker.flush()) throw std::runtime_error("cannot write " + in.started_after.string());
}

void write_gate_report(const GateReportOutput& out, const fs::path& out_dir) {
  fs::create_directories(out_dir);
  write_file_atomically(out_dir / "report.json", out.report.dump(1) + "\n");
  write_file_atomically(out_dir / "report.md", out.markdown);
}

}  // namespace attngate::hooks
