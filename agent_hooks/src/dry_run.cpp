#include "attngate/hooks/dry_run.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fmt/printf.h>

#include "attngate/gate/candidate_tree.hpp"
#include "attngate/hooks/gate_result.hpp"
#include "attngate/gate/git.hpp"
#include "attngate/gate/report.hpp"
#include "attngate/gate/digest.hpp"
#include "attngate/hooks/version_store.hpp"
#include "attngate/scenario.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double positive_number(const std::string& what, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || !end || *end != '\0' || !std::isfinite(v) || v <= 0)
    throw std::runtime_error(what + "='" + text + "' is not a positive number");
  return v;
}

// One directive token of a line that carries the marker; unknown tokens (comment ends) are ignored.
void apply_directive(const std::string& tok, DryRunPlan& plan) {
  if (tok == "incorrect") {
    plan.incorrect = true;
  } else if (tok.rfind("speedup=", 0) == 0) {
    plan.speedup = positive_number(std::string(kDryRunMarker) + " speedup", tok.substr(8));
  } else if (tok.rfind("speedup[", 0) == 0) {
    const auto close = tok.find("]=");
    if (close == std::string::npos || close == 8) throw std::runtime_error("cannot read the directive '" + tok + "'");
    const std::string sub = tok.substr(8, close - 8);
    plan.per_scenario.emplace_back(sub, positive_number(std::string(kDryRunMarker) + " " + tok.substr(0, close + 1),
                                                        tok.substr(close + 2)));
  }
}

ScenarioResult scenario_row(const std::string& id, const std::string& shape, double sp, bool correct) {
  ScenarioResult row;
  row.id = id;
  row.shape = shape;
  row.status = correct ? "passed" : "failed";
  row.correct = correct;
  row.speedup = sp;
  row.ci_low = sp * 0.99;
  row.ci_high = sp * 1.01;
  row.kernel_speedup = sp;
  row.wall_speedup = sp;
  row.candidate.kernel_count = row.baseline.kernel_count = 1;
  row.candidate.streams = row.baseline.streams = 1;
  return row;
}

std::string prefixed(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += kDryRunPrefix + line + "\n";
  return out;
}

std::string setting(const Suite& s, const std::string& key, const std::string& def) {
  auto it = s.settings.find(key);
  return it == s.settings.end() || it->second.empty() ? def : it->second;
}

DryRunSuite load_dry_run_suite(const Context& ctx, const GateOptions& o) {
  const fs::path dir = scenarios_dir(ctx);
  for (const Suite& gate : load_suite_dir(dir)) {
    if (gate.name != "gate") continue;
    DryRunSuite d;
    for (const auto& s : gate.scenarios) d.scenarios.emplace_back(s.id, scenario_summary(s));
    d.target = o.target ? *o.target : positive_number("settings.geomean_target", setting(gate, "geomean_target", "1.0"));
    const std::string floor = setting(gate, "scenario_floor", "");
    d.floor = floor.empty() ? 0 : positive_number("settings.scenario_floor", floor);
    d.baseline = setting(gate, "baseline_kernel", "initial");
    d.kernel = setting(gate, "candidate_kernel", "candidate");
    return d;
  }
  throw std::runtime_error("no gate suite in " + dir.string());
}

void write_text(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
}

// What the gate run's snapshot would hold, then the synthesized report, evaluated into `dry`'s lineage.
Evaluation dry_run_evaluate(const Context& dry, const Context& ctx, const GateOptions& o) {
  EvaluationInput in;
  in.source = "dry_run";
  in.dry_run = true;
  in.note = o.note;
  in.candidate_source = read_file(ctx.candidate);
  in.git = git_state(ctx.repo, fs::relative(ctx.candidate, ctx.repo).generic_string());
  try {
    in.candidate_tree_sha256 = candidate_tree_sha256(candidate_dir(ctx));
  } catch (const std::exception& e) {
    *dry.err << "attngate: warning: cannot hash the candidate folder: " << e.what() << "\n";
  }
  GateReport report = dry_run_report(load_dry_run_suite(ctx, o), parse_dry_run_plan(in.candidate_source.value_or("")));
  report.provenance.gpu = "none (dry run)";
  report.provenance.candidate = ctx.candidate.string();
  report.provenance.candidate_sha256 = in.candidate_source ? sha256_hex(*in.candidate_source) : "";
  report.provenance.candidate_tree_sha256 = in.candidate_tree_sha256;
  if (!in.candidate_source) {
    report.verdict = "fail";
    report.reasons.push_back({"TEST_CRASHED", {}, "cannot read the candidate source " + ctx.candidate.string()});
  }
  const fs::path file = dry_run_report_file(dry.lineage);
  write_text(file, json(report).dump(1) + "\n");
  in.report = report;
  in.report_path = file.string();
  std::string why;
  auto copy = PendingVersion::take(candidate_dir(ctx), dry.lineage, in.candidate_tree_sha256, why);
  if (!copy) *dry.err << "attngate: warning: the candidate folder is not kept for diff: " << why << "\n";
  Evaluation e = evaluate(dry, in);
  if (copy)
    if (auto w = copy->keep(e.record.version); !w.empty()) *dry.err << "attngate: warning: " << w << "\n";
  return e;
}

}  // namespace

fs::path dry_run_lineage(const fs::path& lineage) {
  if (lineage.filename() == "lineage.jsonl") return lineage.parent_path() / "dry-run" / "lineage.jsonl";
  return lineage.string() + ".dry-run";
}

fs::path dry_run_report_file(const fs::path& dry_lineage) {
  if (dry_lineage.filename() == "lineage.jsonl") return dry_lineage.parent_path() / "report.json";
  return dry_lineage.string() + ".report.json";
}

DryRunPlan parse_dry_run_plan(const std::string& source) {
  DryRunPlan plan;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(kDryRunMarker);
    if (at == std::string::npos) continue;
    std::istringstream tokens(line.substr(at + std::string(kDryRunMarker).size()));
    for (std::string tok; tokens >> tok;) apply_directive(tok, plan);
  }
  return plan;
}

double planned_speedup(const DryRunPlan& plan, const std::string& id) {
  double s = plan.speedup;
  for (const auto& [sub, v] : plan.per_scenario)
    if (id.find(sub) != std::string::npos) s = v;
  return s;
}

GateReport dry_run_report(const DryRunSuite& suite, const DryRunPlan& plan) {
  if (suite.scenarios.empty()) throw std::runtime_error("the gate suite has no scenarios");
  GateReport r;
  r.dry_run = true;  // `attngate record` refuses a report that says so
  std::vector<ScenarioResult>& rows = r.scenarios;
  std::vector<Reason>& reasons = r.reasons;
  std::vector<std::string> ids, below;
  double log_sum = 0;
  for (const auto& [id, shape] : suite.scenarios) {
    const double sp = planned_speedup(plan, id);
    rows.push_back(scenario_row(id, shape, sp, !plan.incorrect));
    log_sum += std::log(sp);
    ids.push_back(id);
    if (sp < suite.floor) below.push_back(id);
  }
  const double g = std::exp(log_sum / static_cast<double>(ids.size()));
  const double lo = g * 0.995, hi = g * 1.005;
  if (plan.incorrect)
    reasons.push_back({"CORRECTNESS_FAILED", ids, "simulated: the candidate source says attngate-dry-run: incorrect"});
  if (lo < suite.target)
    reasons.push_back({"GEOMEAN_BELOW_TARGET", {},
                       "simulated geomean " + fmt::format("{:.4f}", g) + ", 95% CI [" + fmt::format("{:.4f}", lo) + ", " + fmt::format("{:.4f}", hi) +
                           "]: the lower bound does not clear the target " + fmt::format("{:.4f}", suite.target)});
  if (!below.empty())
    reasons.push_back({"SCENARIO_BELOW_FLOOR", below,
                       below.front() + ": simulated speedup " + fmt::format("{:.4f}", planned_speedup(plan, below.front())) +
                           " < floor " + fmt::format("{:.4f}", suite.floor)});
  r.verdict = reasons.empty() ? "pass" : "fail";
  r.suite = "gate";
  r.target.geomean = suite.target;
  r.target.scenario_floor = suite.floor;
  r.target.baseline = suite.baseline;
  r.target.kernel = suite.kernel;
  r.geomean.speedup = r.geomean.kernel_speedup = r.geomean.wall_speedup = g;
  r.geomean.ci_low = lo;
  r.geomean.ci_high = hi;
  r.geomean.scenarios = std::int64_t(ids.size());
  r.time = now_iso8601();
  return r;
}

int cmd_gate_dry_run(const Context& ctx, const GateOptions& o) {
  std::ostringstream out, err;
  Context dry = ctx;
  dry.lineage = dry_run_lineage(ctx.lineage);
  // The dry-run lineage must not be the real one under another name (a symlink, a hard link).
  if (std::error_code ec; fs::exists(dry.lineage) && fs::exists(ctx.lineage) && fs::equivalent(dry.lineage, ctx.lineage, ec)) {
    *ctx.err << prefixed("attngate gate --dry-run: " + dry.lineage.string() + " is the real lineage " +
                         ctx.lineage.string() + " (a link): a dry run never writes there\n");
    return kExitError;
  }
  dry.out = &out;
  dry.err = &err;
  std::optional<Evaluation> e;
  try {
    e = dry_run_evaluate(dry, ctx, o);
  } catch (const std::exception& ex) {
    *ctx.err << prefixed(err.str() + "attngate gate --dry-run: " + ex.what() + "\n");
    if (o.json) *ctx.out << json(GateNoResult{kGateResultSchema, "error", kExitError, ex.what(), true}).dump() << "\n";
    return kExitError;
  }
  const int code = e->record.verdict == "pass" ? kExitDryRunPass : kExitDryRunFail;
  const std::string text = "attngate gate --dry-run: simulated from " + ctx.candidate.string() +
                           " (no build, no GPU, nothing measured); recorded in " + dry.lineage.string() + "; exit " +
                           std::to_string(code) + "\n" + format_verdict(dry, *e);
  *ctx.err << prefixed(err.str());
  *(o.json ? ctx.err : ctx.out) << prefixed(text);
  if (o.json) *ctx.out << json(make_gate_result(*e, code)).dump() << "\n";
  return code;
}

}  // namespace attngate::hooks
