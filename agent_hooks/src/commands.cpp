#include "attngate/hooks/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include "attngate/hooks/churn.hpp"
#include "attngate/hooks/git.hpp"
#include "attngate/hooks/process.hpp"
#include "attngate/hooks/questions.hpp"
#include "attngate/hooks/sha256.hpp"
#include "attngate/hooks/supervisor.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string fx(const std::optional<double>& v) { return v ? fmt("%.3fx", *v) : std::string("n/a"); }

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string candidate_rel(const Context& ctx) { return fs::relative(ctx.candidate, ctx.repo).generic_string(); }

SupervisorConfig load_supervisor(const Context& ctx) {
  SupervisorConfig cfg;
  fs::path shipped = ctx.hooks_dir / "supervisor.yaml";
  if (fs::exists(shipped)) apply_supervisor_file(cfg, shipped);
  if (ctx.supervisor_file) apply_supervisor_file(cfg, *ctx.supervisor_file);
  return cfg;
}

QuestionBank load_bank(const Context& ctx) {
  QuestionBank bank;
  bank.load(ctx.hooks_dir / "questions.yaml");
  for (const auto& f : ctx.question_files) bank.load(f);
  return bank;
}

void print_issues(const Context& ctx, const std::vector<LineageIssue>& issues) {
  for (const auto& i : issues) *ctx.err << "attngate: warning: " << i.str() << "\n";
}

// Content-addressed, written through a rename so a reader never sees half a file.
void store_version(const fs::path& versions, const std::string& sha, const std::string& source) {
  fs::path target = versions / (sha + ".cu");
  if (fs::exists(target)) return;
  fs::create_directories(versions);
  fs::path tmp = versions / (sha + ".cu.tmp." + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary);
    out << source;
    if (!out) return;
  }
  fs::rename(tmp, target);
}

// The candidate's source at an evaluated version: the versions store first, then git when the
// candidate was clean at the recorded commit.
class SourceLookup {
 public:
  SourceLookup(const Context& ctx) : ctx_(ctx), versions_(state_dir(ctx) / "versions"), rel_(candidate_rel(ctx)) {}
  std::optional<std::string> get(const Record& r) {
    if (r.candidate_sha256.empty()) return std::nullopt;
    if (auto it = cache_.find(r.candidate_sha256); it != cache_.end()) return it->second;
    std::optional<std::string> src = read_file(versions_ / (r.candidate_sha256 + ".cu"));
    if (!src && !r.candidate_dirty && !r.git_commit.empty()) {
      src = git_show(ctx_.repo, r.git_commit, rel_);
      if (src && sha256_hex(*src) != r.candidate_sha256) src.reset();
    }
    cache_[r.candidate_sha256] = src;
    return src;
  }

 private:
  const Context& ctx_;
  fs::path versions_;
  std::string rel_;
  std::map<std::string, std::optional<std::string>> cache_;
};

std::optional<ChurnFigure> churn_for(const Context& ctx, const std::vector<Record>& earlier, const Record& cur,
                                     const std::optional<std::string>& cur_source) {
  if (!cur_source) return std::nullopt;
  SourceLookup lookup(ctx);
  std::vector<std::string> sources;
  std::string last_sha;
  for (const auto& r : earlier) {
    if (r.candidate_sha256.empty() || r.candidate_sha256 == last_sha) continue;
    auto src = lookup.get(r);
    if (!src) continue;
    sources.push_back(*src);
    last_sha = r.candidate_sha256;
  }
  if (sources.empty()) return std::nullopt;
  if (last_sha == cur.candidate_sha256) return ChurnFigure{};
  sources.push_back(*cur_source);
  return compute_churn(sources);
}

std::string short_sha(const std::string& s) { return s.substr(0, 12); }

std::string scenarios_word(std::size_t n) { return std::to_string(n) + (n == 1 ? " scenario" : " scenarios"); }

std::string verdict_word(const std::string& v) { return v == "pass" ? "PASS" : "FAIL"; }

// The measured context for a declared limit, from a report-shaped record.
std::string limit_context_of(const std::vector<ScenarioResult>& scenarios, const Baselines& baselines) {
  std::ostringstream os;
  std::vector<const ScenarioResult*> with_peak;
  for (const auto& s : scenarios)
    if (s.percent_of_peak) with_peak.push_back(&s);
  if (with_peak.empty()) {
    os << "  percent of peak: unknown (the report has no percent_of_peak)\n";
  } else {
    double sum = 0;
    auto [lo, hi] = std::minmax_element(with_peak.begin(), with_peak.end(), [](auto* a, auto* b) {
      return *a->percent_of_peak < *b->percent_of_peak;
    });
    for (auto* s : with_peak) sum += *s->percent_of_peak;
    os << "  percent of peak: mean " << fmt("%.1f%%", sum / static_cast<double>(with_peak.size())) << " over "
       << scenarios_word(with_peak.size()) << " (min " << fmt("%.1f%%", *(*lo)->percent_of_peak) << " on " << (*lo)->id
       << ", max " << fmt("%.1f%%", *(*hi)->percent_of_peak) << " on " << (*hi)->id << ")\n";
  }
  std::map<std::string, double> cand;
  for (const auto& s : scenarios)
    if (s.tflops) cand[s.id] = *s.tflops;
  // Each baseline is compared with the candidate on the scenarios both have figures for.
  std::string best_name;
  double best_mean = 0, best_cand_mean = 0;
  std::size_t best_n = 0;
  for (const auto& [name, per] : baselines) {
    double b = 0, c = 0;
    std::size_t n = 0;
    for (const auto& [id, tf] : per)
      if (auto it = cand.find(id); it != cand.end()) {
        b += tf;
        c += it->second;
        ++n;
      }
    if (n == 0) continue;
    if (best_name.empty() || b / static_cast<double>(n) > best_mean) {
      best_name = name;
      best_mean = b / static_cast<double>(n);
      best_cand_mean = c / static_cast<double>(n);
      best_n = n;
    }
  }
  if (best_name.empty()) {
    os << "  best baseline on the same scenarios: unknown (no baseline figures in the report)\n";
  } else {
    os << "  best baseline on the same scenarios: " << best_name << ", mean " << fmt("%.1f", best_mean)
       << " TFLOPS vs the candidate's " << fmt("%.1f", best_cand_mean) << " over " << scenarios_word(best_n) << "\n";
  }
  return os.str();
}

GateReport report_with_ctest_status(GateReport report, int ctest_exit) {
  if (report.verdict == "pass" && ctest_exit != 0) {
    report.verdict = "fail";
    report.reasons.push_back({"CTEST_FAILED", {}, "ctest -L gate exited " + std::to_string(ctest_exit) +
                                                      " although the report says pass"});
  }
  return report;
}

}  // namespace

fs::path default_hooks_dir(const fs::path& repo) {
  if (const char* env = std::getenv("ATTNGATE_HOOKS_DIR"); env && *env) return env;
  fs::path compiled = ATTNGATE_HOOKS_SOURCE_DIR;
  if (fs::exists(compiled / "questions.yaml")) return compiled;
  return repo / "agent_hooks";
}

Context default_context(std::ostream& out, std::ostream& err) {
  Context ctx;
  fs::path cwd = fs::current_path();
  ctx.repo = git_toplevel(cwd).value_or(cwd);
  ctx.lineage = ctx.repo / ".attngate" / "lineage.jsonl";
  ctx.candidate = ctx.repo / "kernels" / "candidate" / "candidate.cu";
  ctx.hooks_dir = default_hooks_dir(ctx.repo);
  ctx.out = &out;
  ctx.err = &err;
  return ctx;
}

fs::path state_dir(const Context& ctx) { return ctx.lineage.parent_path(); }

Evaluation evaluate(const Context& ctx, const EvaluationInput& in) {
  SupervisorConfig cfg = load_supervisor(ctx);
  QuestionBank bank = load_bank(ctx);

  std::optional<std::string> source = read_file(ctx.candidate);
  std::string file_sha = source ? sha256_hex(*source) : std::string{};
  std::string sha = file_sha;
  std::string measured = in.report.provenance.value("candidate_sha256", std::string{});
  if (!measured.empty() && measured != file_sha) {
    // The measurement belongs to the source the gate hashed, not to what is on disk now.
    *ctx.err << "attngate: warning: the report measured candidate " << short_sha(measured) << ", but "
             << ctx.candidate.string() << " is now " << (file_sha.empty() ? "missing" : short_sha(file_sha)) << "\n";
    sha = measured;
    source.reset();
  }
  if (source && !sha.empty()) store_version(state_dir(ctx) / "versions", sha, *source);
  GitState git = git_state(ctx.repo, candidate_rel(ctx));

  std::vector<LineageIssue> issues;
  Lineage lineage(ctx.lineage);
  Record rec = lineage.append([&](const LineageContents& earlier_all, int version) {
    issues = earlier_all.issues;
    Record r;
    r.version = version;
    r.time = now_iso8601();
    r.source = in.source;
    r.session = in.session;
    r.candidate_sha256 = sha;
    r.git_commit = git.commit;
    r.git_dirty = git.dirty;
    r.candidate_dirty = git.candidate_dirty;
    r.verdict = in.report.verdict;
    r.reasons = in.report.reasons;
    r.target = in.report.target;
    r.geomean = in.report.geomean;
    r.scenarios = in.report.scenarios;
    r.baselines = in.report.baselines;
    r.report = in.report_path;
    r.build_exit = in.build_exit;
    r.ctest_exit = in.ctest_exit;
    auto earlier = earlier_all.evaluations();
    r.churn = churn_for(ctx, earlier, r, source);
    r.signals = compute_signals(earlier, r, cfg);
    r.triggers = triggers_of(r.signals);
    if (r.verdict != "pass")
      for (const auto& t : in.agent_triggers_on_fail)
        if (std::find(r.triggers.begin(), r.triggers.end(), t) == r.triggers.end()) r.triggers.push_back(t);
    auto asked = asked_questions(earlier_all);
    for (const auto& t : r.triggers)
      if (auto q = bank.select(t, asked)) {
        r.questions.push_back({t, q->id});
        asked.push_back(r.questions.back());
      }
    return r;
  });
  print_issues(ctx, issues);

  Evaluation e{rec, {}};
  for (const auto& q : rec.questions)
    for (const auto& b : bank.of(q.trigger))
      if (b.id == q.id) e.questions.emplace_back(q.trigger, b.text);
  return e;
}

std::string format_verdict(const Context& ctx, const Evaluation& e) {
  const Record& r = e.record;
  std::ostringstream os;
  os << "attngate: " << verdict_word(r.verdict) << ", version " << r.version << " (candidate "
     << (r.candidate_sha256.empty() ? "missing" : short_sha(r.candidate_sha256)) << ")\n";
  os << "  geomean " << fx(r.geomean.speedup);
  if (r.geomean.ci_low && r.geomean.ci_high)
    os << ", CI [" << fmt("%.3f", *r.geomean.ci_low) << ", " << fmt("%.3f", *r.geomean.ci_high) << "]";
  if (r.target.geomean) os << "; target " << fx(r.target.geomean);
  if (!r.target.baseline.empty()) os << " vs " << r.target.baseline;
  if (r.target.scenario_floor) os << ", floor " << fx(r.target.scenario_floor);
  os << "\n";
  for (const auto& reason : r.reasons) {
    os << "  reason " << reason.code;
    if (!reason.scenarios.empty()) os << " [" << join(reason.scenarios, ", ") << "]";
    if (!reason.detail.empty()) os << ": " << reason.detail;
    os << "\n";
  }
  for (const auto& s : r.signals) os << "  signal " << s.trigger << "/" << s.kind << ": " << s.detail << "\n";
  for (const auto& [t, text] : e.questions) os << "  question (" << t << "): " << text << "\n";
  if (!r.report.empty()) os << "  report: " << r.report << "\n";
  os << "  lineage: " << ctx.lineage.string() << "\n";
  return os.str();
}

int cmd_record(const Context& ctx, const fs::path& report_path) {
  GateReport report;
  try {
    report = load_report(report_path);
  } catch (const std::exception& e) {
    *ctx.err << "attngate record: " << e.what() << "\n";
    return kExitError;
  }
  EvaluationInput in;
  in.report = report;
  in.report_path = fs::absolute(report_path).string();
  in.source = "record";
  Evaluation e;
  try {
    e = evaluate(ctx, in);
  } catch (const std::exception& ex) {
    *ctx.err << "attngate record: " << ex.what() << "\n";
    return kExitError;
  }
  *ctx.out << format_verdict(ctx, e);
  return e.record.verdict == "pass" ? kExitPass : kExitFail;
}

namespace {

EvaluationInput run_gate(const Context& ctx, const GateOptions& o, const std::string& source) {
  fs::path build = o.build_dir.empty() ? ctx.repo / "build" / "gpu" : o.build_dir;
  fs::path gate_dir = build / "gate";
  fs::path report_path = gate_dir / "report.json";
  fs::path log = gate_dir / "attngate_gate.log";
  EvaluationInput in;
  in.source = source;
  in.report_path = report_path.string();
  if (!fs::exists(build / "CMakeCache.txt")) {
    in.report = synthesized_failure("BUILD_FAILED", "no configured build at " + build.string() +
                                                        " (configure it first: cmake --preset gpu)");
    return in;
  }
  RunOptions ro;
  ro.cwd = ctx.repo;
  ro.output = Output::inherit;
  if (o.quiet) {
    std::error_code ec;
    fs::create_directories(gate_dir, ec);
    ro.output = Output::log;
    ro.log_file = log;
    std::ofstream(log, std::ios::trunc).flush();  // the log holds this run only
  }
  if (o.target) ro.env.emplace_back("ATTNGATE_GEOMEAN_TARGET", fmt("%.17g", *o.target));

  std::string where = o.quiet ? " (output in " + log.string() + ")" : std::string{};

  // The report is trusted only if this run wrote it: a stale one would describe another candidate.
  auto started = fs::file_time_type::clock::now();
  auto build_result = run_process({"cmake", "--build", build.string()}, ro);
  in.build_exit = build_result.exit_code;
  if (build_result.exit_code != 0) {
    in.report = synthesized_failure("BUILD_FAILED", "cmake --build " + build.string() + " exited " +
                                                        std::to_string(build_result.exit_code) + where);
    return in;
  }
  std::vector<std::string> ctest = {"ctest", "--test-dir", build.string(), "-L", "gate", "--output-on-failure",
                                    "--no-tests=error"};
  ctest.insert(ctest.end(), o.ctest_args.begin(), o.ctest_args.end());
  auto ctest_result = run_process(ctest, ro);
  in.ctest_exit = ctest_result.exit_code;

  // Fresh means written by this run's gate: after its gate.setup wrote the start marker, which
  // itself must be newer than this command (the same marker `attngate report --started-after`
  // judges the gate's other outputs by).
  std::error_code ec, marker_ec;
  auto written = fs::last_write_time(report_path, ec);
  auto marker = fs::last_write_time(gate_dir / "started", marker_ec);
  if (ec || written < started) {
    in.report = synthesized_failure("NO_REPORT", "ctest -L gate exited " + std::to_string(ctest_result.exit_code) +
                                                     " without writing " + report_path.string() + where);
    return in;
  }
  if (marker_ec || marker < started || written < marker) {
    in.report = synthesized_failure(
        "NO_REPORT", "the report was not written after this run's gate.setup (marker " + (gate_dir / "started").string() +
                         (marker_ec ? " missing" : marker < started ? " older than this run" : " newer than the report") +
                         "): was gate.setup filtered out? ctest exited " + std::to_string(ctest_result.exit_code) + where);
    return in;
  }
  try {
    in.report = report_with_ctest_status(load_report(report_path), ctest_result.exit_code);
  } catch (const std::exception& e) {
    in.report = synthesized_failure("NO_REPORT", std::string("unreadable report: ") + e.what());
    return in;
  }
  if (o.target && (!in.report.target.geomean || std::abs(*in.report.target.geomean - *o.target) > 1e-9)) {
    in.report.verdict = "fail";
    in.report.reasons.push_back({"TARGET_NOT_APPLIED", {}, "asked for geomean target " + fmt("%.3f", *o.target) +
                                                               " but the gate judged against " +
                                                               fx(in.report.target.geomean)});
  }
  return in;
}

}  // namespace

int cmd_gate(const Context& ctx, const GateOptions& o) {
  EvaluationInput in;
  Evaluation e;
  try {
    in = run_gate(ctx, o, "gate");
    e = evaluate(ctx, in);
  } catch (const std::exception& ex) {
    *ctx.err << "attngate gate: " << ex.what() << "\n";
    return kExitError;
  }
  *ctx.out << format_verdict(ctx, e);
  return e.record.verdict == "pass" ? kExitPass : kExitFail;
}

int cmd_report(const Context& ctx, ReportInputs in, const fs::path& build_dir, bool prepare) {
  in = resolve_inputs(std::move(in), build_dir.empty() ? ctx.repo / "build" / "gpu" : build_dir);
  in.repo = ctx.repo;
  in.candidate = ctx.candidate;
  if (in.scenarios_dir.empty()) in.scenarios_dir = ATTNGATE_HOOKS_SCENARIO_DIR;
  auto& out = *ctx.out;
  auto& err = *ctx.err;
  try {
    if (prepare) {
      prepare_gate(in);
      out << "attngate report --prepare: cleared the previous gate outcomes; marker " << in.started_after.string()
          << "\n";
      return kExitPass;
    }
    GateReportOutput r = build_gate_report(in);
    write_gate_report(r, in.out_dir);
    out << "attngate report: " << (r.pass ? "PASS" : "FAIL");
    const json g = r.report.value("geomean", json::object());
    const json speedup = g.value("speedup", json()), lo = g.value("ci_low", json()), hi = g.value("ci_high", json());
    if (speedup.is_number()) {
      out << ", geomean " << fmt("%.4fx", speedup.get<double>());
      if (lo.is_number() && hi.is_number())
        out << " CI [" << fmt("%.4f", lo.get<double>()) << ", " << fmt("%.4f", hi.get<double>()) << "]";
    }
    out << "; target " << fmt("%.4fx", r.report["target"]["geomean"].get<double>()) << " vs "
        << r.report["target"]["baseline"].get<std::string>() << "\n";
    for (const auto& reason : r.report["reasons"]) {
      out << "  reason " << reason["code"].get<std::string>();
      auto ids = reason["scenarios"].get<std::vector<std::string>>();
      if (ids.size() > 6) {  // all of them are in the report
        const std::size_t more = ids.size() - 5;
        ids.resize(5);
        ids.push_back("... " + std::to_string(more) + " more");
      }
      if (!ids.empty()) out << " [" << join(ids, ", ") << "]";
      out << ": " << reason["detail"].get<std::string>() << "\n";
    }
    out << "  report: " << (in.out_dir / "report.md").string() << "\n"
        << "  json: " << (in.out_dir / "report.json").string() << "\n";
    return r.pass ? kExitPass : kExitFail;
  } catch (const ReportConfigError& e) {
    err << "attngate report: " << e.what() << "\n";
    return kExitError;
  } catch (const std::exception& e) {
    err << "attngate report: " << e.what() << "\n";
    return kExitError;
  }
}

int cmd_history(const Context& ctx) {
  LineageContents c;
  try {
    c = Lineage(ctx.lineage).read();
  } catch (const std::exception& e) {
    *ctx.err << "attngate history: " << e.what() << "\n";
    return kExitError;
  }
  print_issues(ctx, c.issues);
  auto& os = *ctx.out;
  if (c.records.empty()) {
    os << "attngate: no evaluation recorded yet in " << ctx.lineage.string() << "\n";
    return kExitPass;
  }
  // Questions asked through `ask` are shown with the version they were asked about.
  std::map<int, std::vector<std::string>> asked;
  for (const auto& r : c.records)
    if (!r.is_evaluation())
      for (const auto& q : r.questions) asked[r.version].push_back("ask:" + q.trigger);
  char line[256];
  std::snprintf(line, sizeof line, "%-7s  %-20s  %-9s  %-17s  %-7s  %s\n", "version", "time (UTC)", "geomean",
                "CI", "verdict", "triggers");
  os << line;
  for (const auto& r : c.records) {
    if (!r.is_evaluation()) continue;
    std::string ci = r.geomean.ci_low && r.geomean.ci_high
                         ? "[" + fmt("%.3f", *r.geomean.ci_low) + ", " + fmt("%.3f", *r.geomean.ci_high) + "]"
                         : "-";
    auto triggers = r.triggers;
    for (const auto& a : asked[r.version]) triggers.push_back(a);
    std::string reasons;
    for (const auto& reason : r.reasons) reasons += (reasons.empty() ? "" : ",") + reason.code;
    std::snprintf(line, sizeof line, "%-7d  %-20s  %-9s  %-17s  %-7s  %s%s\n", r.version, r.time.c_str(),
                  r.geomean.speedup ? fmt("%.3fx", *r.geomean.speedup).c_str() : "-", ci.c_str(),
                  r.verdict.c_str(), triggers.empty() ? "-" : join(triggers, ",").c_str(),
                  reasons.empty() ? "" : ("  (" + reasons + ")").c_str());
    os << line;
  }
  return kExitPass;
}

int cmd_commit(const Context& ctx) {
  auto& err = *ctx.err;
  auto refuse = [&](const std::string& why) {
    err << "attngate commit: not committing: " << why << "\n";
    return kExitFail;
  };
  LineageContents c;
  try {
    c = Lineage(ctx.lineage).read();
  } catch (const std::exception& e) {
    err << "attngate commit: " << e.what() << "\n";
    return kExitError;
  }
  print_issues(ctx, c.issues);
  auto latest = c.last_evaluation();
  if (!latest) return refuse("no evaluation in " + ctx.lineage.string() + " (run attngate gate first)");
  auto sha = sha256_file(ctx.candidate);
  if (!sha) return refuse("cannot read " + ctx.candidate.string());
  if (latest->candidate_sha256 != *sha)
    return refuse("the candidate changed since version " + std::to_string(latest->version) +
                  " was evaluated (run attngate gate)");
  if (latest->verdict != "pass") {
    std::vector<std::string> codes;
    for (const auto& r : latest->reasons) codes.push_back(r.code);
    return refuse("version " + std::to_string(latest->version) + " failed the gate" +
                  (codes.empty() ? std::string{} : " (" + join(codes, ", ") + ")"));
  }
  if (!latest->geomean.speedup || !latest->geomean.ci_low)
    return refuse("version " + std::to_string(latest->version) + " has no geomean confidence interval");
  if (!git_state(ctx.repo, candidate_rel(ctx)).is_repo) return refuse(ctx.repo.string() + " is not a git repository");

  // The bar: the best version attngate committed against the same baseline, else the baseline itself.
  std::optional<CommittedVersion> best_commit;
  for (const auto& v : git_committed_versions(ctx.repo)) {
    if (!v.baseline.empty() && !latest->target.baseline.empty() && v.baseline != latest->target.baseline) continue;
    if (!best_commit || v.geomean > best_commit->geomean) best_commit = v;
  }
  double best = best_commit ? best_commit->geomean : 1.0;
  std::string best_what = best_commit ? "the best committed version (" + fmt("%.3fx", best) + ", commit " +
                                            best_commit->commit.substr(0, 12) + ")"
                                      : std::string("the baseline itself (1.000x)");
  double lo = *latest->geomean.ci_low;
  if (!(lo > best))
    return refuse("the CI lower bound " + fmt("%.3f", lo) + " of version " + std::to_string(latest->version) +
                  " does not clear " + best_what);

  std::string rel = candidate_rel(ctx);
  auto run_git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", ctx.repo.string()});
    return run_process(args);
  };
  bool tracked = run_git({"ls-files", "--error-unmatch", "--", rel}).exit_code == 0;
  if (tracked && run_git({"diff", "--quiet", "HEAD", "--", rel}).exit_code == 0)
    return refuse("the candidate is unchanged since HEAD");
  std::ostringstream msg;
  msg << "candidate: attngate version " << latest->version << ", geomean " << fmt("%.3fx", *latest->geomean.speedup)
      << " (CI " << fmt("%.3f", lo) << "-" << fmt("%.3f", latest->geomean.ci_high.value_or(lo)) << ")\n\n"
      << "Passed the gate" << (latest->target.baseline.empty() ? "" : " against " + latest->target.baseline)
      << " and its CI lower bound clears " << best_what << ".\n\n"
      << "Attngate-Version: " << latest->version << "\n"
      << "Attngate-Geomean: " << fmt("%.6g", *latest->geomean.speedup) << "\n"
      << "Attngate-CI: " << fmt("%.6g", lo) << " " << fmt("%.6g", latest->geomean.ci_high.value_or(lo)) << "\n"
      << "Attngate-Baseline: " << (latest->target.baseline.empty() ? "unknown" : latest->target.baseline) << "\n"
      << "Attngate-Candidate-Sha256: " << *sha << "\n";
  if (!tracked) {
    auto add = run_git({"add", "--", rel});
    if (add.exit_code != 0) return refuse("git add failed: " + add.err);
  }
  // `git commit -- <path>` commits that path alone and leaves whatever else is staged as it was.
  auto commit = run_git({"commit", "-q", "-m", msg.str(), "--", rel});
  if (commit.exit_code != 0) {
    if (!tracked) run_git({"rm", "-q", "--cached", "--", rel});
    return refuse("git commit failed: " + commit.err + commit.out);
  }
  auto head = run_git({"rev-parse", "--short=12", "HEAD"});
  *ctx.out << "attngate commit: committed version " << latest->version << " ("
           << fmt("%.3fx", *latest->geomean.speedup) << ", CI low " << fmt("%.3f", lo) << ") as "
           << head.out.substr(0, head.out.find('\n')) << "\n";
  return kExitPass;
}

std::string limit_context(const Record& latest) {
  return "measured context (version " + std::to_string(latest.version) + "):\n" +
         limit_context_of(latest.scenarios, latest.baselines);
}

int cmd_ask(const Context& ctx, const std::string& trigger, const std::optional<fs::path>& report) {
  if (!is_trigger(trigger)) {
    *ctx.err << "attngate ask: unknown trigger '" << trigger << "'\n";
    return kExitError;
  }
  QuestionBank bank;
  std::optional<GateReport> rep;
  try {
    bank = load_bank(ctx);
    if (report) rep = load_report(*report);
  } catch (const std::exception& e) {
    *ctx.err << "attngate ask: " << e.what() << "\n";
    return kExitError;
  }
  if (bank.of(trigger).empty()) {
    *ctx.err << "attngate ask: the question bank has no question for '" << trigger << "'\n";
    return kExitError;
  }
  std::optional<Question> chosen;
  std::optional<Record> latest;
  std::vector<LineageIssue> issues;
  Lineage(ctx.lineage).append(
      [&](const LineageContents& earlier, int version) {
        issues = earlier.issues;
        latest = earlier.last_evaluation();
        chosen = bank.select(trigger, asked_questions(earlier));
        Record r;
        r.type = "ask";
        r.version = version;
        r.time = now_iso8601();
        r.source = "ask";
        r.questions.push_back({trigger, chosen->id});
        return r;
      },
      false);
  print_issues(ctx, issues);
  *ctx.out << chosen->text << "\n";
  if (trigger == "limit") {
    if (rep) {
      *ctx.out << "measured context (" << report->string() << "):\n" << limit_context_of(rep->scenarios, rep->baselines);
    } else if (latest) {
      *ctx.out << limit_context(*latest);
    } else {
      *ctx.out << "measured context: none yet (no evaluation in the lineage; run attngate gate)\n";
    }
  }
  return kExitPass;
}

int cmd_stop_hook(const Context& ctx, const std::string& hook_input, const GateOptions& o) {
  json input = json::parse(hook_input, nullptr, /*allow_exceptions=*/false);
  if (!input.is_object()) input = json::object();
  const bool active = input.contains("stop_hook_active") && input["stop_hook_active"].is_boolean() &&
                      input["stop_hook_active"].get<bool>();
  const std::string session = input.contains("session_id") && input["session_id"].is_string()
                                  ? input["session_id"].get<std::string>()
                                  : std::string{};
  auto& err = *ctx.err;

  int max_refusals = 10;
  if (const char* env = std::getenv("ATTNGATE_STOP_MAX_REFUSALS"); env && *env) max_refusals = std::atoi(env);
  try {
    LineageContents c = Lineage(ctx.lineage).read();
    auto evals = c.evaluations();
    int refusals = 0;
    for (auto it = evals.rbegin(); it != evals.rend(); ++it) {
      if (it->source != "stop_hook" || it->session != session || it->verdict == "pass") break;
      ++refusals;
    }
    // Loop guards: the runner says this stop follows one we refused. Re-running the gate on the same
    // source cannot change the verdict, and a cap bounds a session that keeps trying.
    if (active && refusals > 0) {
      auto sha = sha256_file(ctx.candidate).value_or("");
      if (evals.back().candidate_sha256 == sha) {
        err << "attngate stop hook: the candidate is unchanged since version " << evals.back().version
            << " failed the gate; letting the agent stop without re-running it (the gate still fails)\n";
        return kExitPass;
      }
      if (max_refusals > 0 && refusals >= max_refusals) {
        err << "attngate stop hook: refused " << refusals << " stops in a row in this session (limit "
            << max_refusals << ", ATTNGATE_STOP_MAX_REFUSALS); letting the agent stop (the gate still fails)\n";
        return kExitPass;
      }
    }
    GateOptions quiet = o;
    quiet.quiet = true;
    EvaluationInput in = run_gate(ctx, quiet, "stop_hook");
    in.session = session;
    in.agent_triggers_on_fail = {"done"};
    Evaluation e = evaluate(ctx, in);
    if (e.record.verdict == "pass") {
      *ctx.out << format_verdict(ctx, e);
      return kExitPass;
    }
    fs::path build = o.build_dir.empty() ? ctx.repo / "build" / "gpu" : o.build_dir;
    err << "The attngate gate does not pass yet, so the work is not done.\n"
        << format_verdict(ctx, e) << "  gate output: " << (build / "gate" / "attngate_gate.log").string() << "\n";
    return kExitRefuse;
  } catch (const std::exception& ex) {
    // Refuse once so the error is seen; on the runner's retry let the agent stop, since an error
    // the agent cannot fix would otherwise trap it.
    err << "attngate stop hook: " << ex.what() << "\n";
    return active ? kExitPass : kExitRefuse;
  }
}

}  // namespace attngate::hooks
