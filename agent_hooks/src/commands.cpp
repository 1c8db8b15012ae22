#include "attngate/gate/reason_codes.hpp"
#include <fmt/format.h>
#include <fmt/printf.h>

#include "attngate/hooks/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <ostream>
#include <sstream>

#include "attngate/hooks/build_lock.hpp"
#include "attngate/gate/candidate_tree.hpp"
#include "attngate/hooks/churn.hpp"
#include "attngate/hooks/dry_run.hpp"
#include "attngate/hooks/gate_result.hpp"
#include "attngate/gate/git.hpp"
#include "attngate/gate/process.hpp"
#include "attngate/hooks/progress.hpp"
#include "attngate/hooks/questions.hpp"
#include "attngate/hooks/receipt.hpp"
#include "attngate/hooks/redirect.hpp"
#include "attngate/gate/digest.hpp"
#include "attngate/hooks/supervisor.hpp"
#include "attngate/hooks/version_store.hpp"
#include "attngate/verify/json_document.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string fx(const std::optional<double>& v) { return v ? fmt::format("{:.3f}x", *v) : std::string("n/a"); }

std::string candidate_rel(const Context& ctx) { return fs::relative(ctx.candidate, ctx.repo).generic_string(); }

std::string candidate_dir_rel(const Context& ctx) {
  return fs::relative(candidate_dir(ctx), ctx.repo).generic_string();
}

// The candidate folder's listing and tree hash; the hash is empty when the folder cannot be read.
std::string read_tree(const Context& ctx, TreeListing& listing) {
  try {
    listing = list_tree(candidate_dir(ctx));
    return tree_sha256(listing);
  } catch (const std::exception&) {
    listing.clear();
    return {};
  }
}

std::string current_tree_sha256(const Context& ctx) {
  TreeListing ignored;
  return read_tree(ctx, ignored);
}

std::string short_or(const std::string& sha, const char* none) {
  return sha.empty() ? std::string(none) : sha.substr(0, 12);
}

std::string tree_name(const std::string& sha) { return short_or(sha, "unreadable"); }

SupervisorConfig supervisor_config(const Context& ctx) {
  SupervisorConfig cfg;
  fs::path shipped = ctx.hooks_dir / "supervisor.yaml";
  if (fs::exists(shipped)) apply_supervisor_file(cfg, shipped);
  if (!ctx.supervisor_file) return cfg;
  // The agent's own file may make the supervisor stricter, never laxer where the commit path and
  // the escalation depend on it: a gain needs no confirmation only below the shipped factor, and
  // a restart or a human is suggested no later than the shipped counts say.
  const SupervisorConfig base = cfg;
  apply_supervisor_file(cfg, *ctx.supervisor_file);
  cfg.suspicious.step_speedup = std::min(cfg.suspicious.step_speedup, base.suspicious.step_speedup);
  cfg.suspicious.peak_percent = std::min(cfg.suspicious.peak_percent, base.suspicious.peak_percent);
  cfg.redirect.restart_after = std::min(cfg.redirect.restart_after, base.redirect.restart_after);
  cfg.redirect.human_after = std::min(cfg.redirect.human_after, base.redirect.human_after);
  return cfg;
}

QuestionBank question_bank(const Context& ctx) {
  QuestionBank bank;
  bank.load(ctx.hooks_dir / "questions.yaml");
  for (const auto& f : ctx.question_files) bank.load(f);
  return bank;
}

// "    read: <index>#topic" and the topic's lines, indented; empty when the question names none.
std::string knowledge_pointer(const Context& ctx, const Question& q, const char* indent = "    ") {
  if (q.read.empty()) return {};
  const fs::path index = ctx.hooks_dir / "knowledge" / "README.md";
  std::string out = std::string(indent) + "read: " + index.string() + " (topic " + q.read + ")";
  auto topics = load_knowledge(index);
  auto it = topics.find(q.read);
  if (it == topics.end()) return out + " -- not in the index";
  std::istringstream lines(it->second);
  for (std::string line; std::getline(lines, line);) out += "\n" + std::string(indent) + "  " + line;
  return out;
}

void print_issues(const Context& ctx, const std::vector<LineageIssue>& issues) {
  for (const auto& i : issues) *ctx.err << "attngate: warning: " << i.str() << "\n";
}

// Content-addressed, written through a rename so a reader never sees half a file.
void store_version(const fs::path& versions, const std::string& sha, const std::string& source) {
  fs::path target = versions / (sha + ".cu");
  if (fs::exists(target)) return;
  fs::create_directories(versions);
  try {
    write_file_atomically(target, source);
  } catch (const std::exception&) {  // a version not stored only costs its churn figure later
  }
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
  try {
    return compute_churn(sources);
  } catch (const std::exception& e) {  // git could not diff: the record goes without its churn figure
    std::cerr << "attngate: churn not computed: " << e.what() << "\n";
    return std::nullopt;
  }
}

std::string short_sha(const std::string& s) { return s.substr(0, 12); }

std::string scenarios_word(std::size_t n) { return std::to_string(n) + (n == 1 ? " scenario" : " scenarios"); }

std::string verdict_word(const Record& r) {
  const std::string word = r.verdict == "pass" ? "PASS" : "FAIL";
  return r.dry_run ? "SIMULATED " + word + " (dry run)" : word;
}

// Per scenario, the fastest baseline the report names and the candidate's TFLOPS against it.
std::string best_per_scenario(const std::vector<ScenarioResult>& scenarios, const Baselines& baselines) {
  std::ostringstream os;
  for (const auto& s : scenarios) {
    std::string library;
    double best = 0;
    for (const auto& [name, per] : baselines)
      if (auto it = per.find(s.id); it != per.end() && it->second > best) {
        library = name;
        best = it->second;
      }
    if (library.empty()) continue;
    os << "    " << s.id << ": " << library << " " << fmt::format("{:.1f}", best) << " TFLOPS";
    if (s.tflops) os << ", the candidate " << fmt::format("{:.1f}", *s.tflops) << " (" << fmt::format("{:.0f}%", 100 * *s.tflops / best) << ")";
    os << "\n";
  }
  const std::string lines = os.str();
  return lines.empty() ? lines : "  best baseline per scenario:\n" + lines;
}

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
    os << "  percent of peak: mean " << fmt::format("{:.1f}%", sum / static_cast<double>(with_peak.size())) << " over "
       << scenarios_word(with_peak.size()) << " (min " << fmt::format("{:.1f}%", *(*lo)->percent_of_peak) << " on " << (*lo)->id
       << ", max " << fmt::format("{:.1f}%", *(*hi)->percent_of_peak) << " on " << (*hi)->id << ")\n";
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
    os << "  best baseline on the same scenarios: " << best_name << ", mean " << fmt::format("{:.1f}", best_mean)
       << " TFLOPS vs the candidate's " << fmt::format("{:.1f}", best_cand_mean) << " over " << scenarios_word(best_n) << "\n";
  }
  return os.str() + best_per_scenario(scenarios, baselines);
}

// The judgement a record copies from its report.
void copy_report(Record& r, const GateReport& report) {
  r.verdict = report.verdict;
  r.reasons = report.reasons;
  r.target = report.target;
  r.geomean = report.geomean;
  r.scenarios = report.scenarios;
  r.baselines = report.baselines;
}

// The bar: the best version attngate committed against the same baseline, else the baseline itself.
std::pair<double, std::string> commit_bar(const Context& ctx, const Record& r) {
  std::optional<CommittedVersion> best;
  for (const auto& v : git_committed_versions(ctx.repo)) {
    if (!v.baseline.empty() && !r.target.baseline.empty() && v.baseline != r.target.baseline) continue;
    if (!best || v.geomean > best->geomean) best = v;
  }
  if (!best) return {1.0, "the baseline itself (1.000x)"};
  return {best->geomean, "the best committed version (" + fmt::format("{:.3f}x", best->geomean) + ", commit " +
                             best->commit.substr(0, 12) + ")"};
}

// A copy of the candidate folder for the versions store (version_store.hpp); a folder that cannot
// be kept costs only `diff` and restore suggestions, so it is a warning.
std::unique_ptr<PendingVersion> take_version_copy(const Context& ctx, const std::string& tree) {
  std::string why;
  auto copy = PendingVersion::take(candidate_dir(ctx), ctx.lineage, tree, why);
  if (!copy) *ctx.err << "attngate: warning: the candidate folder is not kept for diff: " << why << "\n";
  return copy;
}

void keep_version_copy(const Context& ctx, PendingVersion* copy, int version) {
  if (!copy) return;
  if (auto why = copy->keep(version); !why.empty()) *ctx.err << "attngate: warning: " << why << "\n";
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

SupervisorConfig load_supervisor(const Context& ctx) { return supervisor_config(ctx); }

QuestionBank load_bank(const Context& ctx) { return question_bank(ctx); }

// The repository's own agent_hooks/ first (so a build run with --repo at another checkout reads
// that checkout's bank, knowledge and thresholds), then the source folder compiled in.
fs::path default_hooks_dir(const fs::path& repo) {
  if (const char* env = std::getenv("ATTNGATE_HOOKS_DIR"); env && *env) return env;
  if (fs::exists(repo / "agent_hooks" / "questions.yaml")) return repo / "agent_hooks";
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

fs::path candidate_dir(const Context& ctx) { return ctx.candidate.parent_path(); }

Evaluation evaluate(const Context& ctx, const EvaluationInput& in) {
  SupervisorConfig cfg = load_supervisor(ctx);
  QuestionBank bank = load_bank(ctx);

  std::optional<std::string> source = in.candidate_source ? in.candidate_source : read_file(ctx.candidate);
  std::string file_sha = source ? sha256_hex(*source) : std::string{};
  std::string sha = file_sha;
  std::string measured = in.report.provenance.candidate_sha256;
  if (!measured.empty() && measured != file_sha) {
    // The measurement belongs to the source the gate hashed, not to what is on disk now.
    *ctx.err << "attngate: warning: the report measured candidate " << short_sha(measured) << ", but "
             << ctx.candidate.string() << " is now " << (file_sha.empty() ? "missing" : short_sha(file_sha)) << "\n";
    sha = measured;
    source.reset();
  }
  if (source && !sha.empty()) store_version(state_dir(ctx) / "versions", sha, *source);
  GitState git = in.git ? *in.git : git_state(ctx.repo, candidate_rel(ctx));
  std::string tree = in.candidate_tree_sha256.empty() ? current_tree_sha256(ctx) : in.candidate_tree_sha256;

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
    r.candidate_tree_sha256 = tree;
    r.git_commit = git.commit;
    r.git_dirty = git.dirty;
    r.candidate_dirty = git.candidate_dirty;
    copy_report(r, in.report);
    r.report = in.report_path;
    r.build_exit = in.build_exit;
    r.ctest_exit = in.ctest_exit;
    r.suspicious_confirmed = in.suspicious_confirmed;
    r.note = in.note;
    r.dry_run = in.dry_run;
    auto earlier = earlier_all.evaluations();
    r.churn = churn_for(ctx, earlier, r, source);
    r.signals = compute_signals(earlier, r, cfg);
    for (auto& s : redirect_signals(earlier, r, r.signals, cfg, [&](const Record& x) { return restore_command(ctx, x); }))
      r.signals.push_back(std::move(s));
    r.triggers = triggers_of(r.signals);
    if (r.verdict != "pass")
      for (const auto& t : in.agent_triggers_on_fail)
        if (std::find(r.triggers.begin(), r.triggers.end(), t) == r.triggers.end()) r.triggers.push_back(t);
    if (has_reason(r.reasons, "CORRECTNESS_FAILED") &&
        std::find(r.triggers.begin(), r.triggers.end(), "correctness") == r.triggers.end())
      r.triggers.insert(r.triggers.begin(), "correctness");
    // One question per evaluation (and so per refusal): the verdict's trigger, chosen by what failed.
    if (auto t = verdict_trigger(r.reasons, r.triggers); !t.empty())
      if (auto q = bank.select_for(t, asked_questions(earlier_all), question_tags(t, r.reasons, r.scenarios)))
        r.questions.push_back({t, q->id});
    // Signed last: the receipt covers the version, the signals and the verdict as recorded.
    if (in.receipt_key) {
      r.receipt = Receipt{machine_id(), in.report_sha256, {}};
      r.receipt->hmac_sha256 = receipt_hmac(r, *in.receipt_key);
    }
    return r;
  });
  print_issues(ctx, issues);

  Evaluation e{rec, {}, {}};
  for (const auto& q : rec.questions)
    if (auto b = bank.find(q.id)) {
      e.asked.push_back(*b);
      e.asked.back().trigger = q.trigger;
      e.questions.emplace_back(q.trigger, b->text);
      if (auto pointer = knowledge_pointer(ctx, *b); !pointer.empty()) e.questions.back().second += "\n" + pointer;
    }
  return e;
}

std::string format_verdict(const Context& ctx, const Evaluation& e) {
  const Record& r = e.record;
  std::ostringstream os;
  os << "attngate: " << verdict_word(r) << ", version " << r.version << " (candidate "
     << (r.candidate_sha256.empty() ? "missing" : short_sha(r.candidate_sha256)) << ")\n";
  os << "  geomean " << fx(r.geomean.speedup);
  if (r.geomean.ci_low && r.geomean.ci_high)
    os << ", CI [" << fmt::format("{:.3f}", *r.geomean.ci_low) << ", " << fmt::format("{:.3f}", *r.geomean.ci_high) << "]";
  if (r.target.geomean) os << "; target " << fx(r.target.geomean);
  if (!r.target.baseline.empty()) os << " vs " << r.target.baseline;
  if (r.target.scenario_floor) os << ", floor " << fx(r.target.scenario_floor);
  os << "\n";
  for (const auto& reason : r.reasons) {
    os << "  reason " << reason.code;
    if (!reason.scenarios.empty()) os << " [" << fmt::format("{}", fmt::join(reason.scenarios, ", ")) << "]";
    if (!reason.detail.empty()) os << ": " << reason.detail;
    os << "\n";
  }
  if (!r.note.empty()) os << "  note: " << r.note << "\n";
  for (const auto& s : r.signals) os << "  signal " << s.trigger << "/" << s.kind << ": " << s.detail << "\n";
  for (const auto& [t, text] : e.questions) os << "  question (" << t << "): " << text << "\n";
  if (!r.report.empty()) os << "  report: " << r.report << "\n";
  os << "  lineage: " << ctx.lineage.string() << "\n";
  return os.str();
}

int cmd_record(const Context& ctx, const fs::path& report_path, const std::string& note) {
  GateReport report;
  try {
    report = load_report(report_path);
    // A dry run's report simulates a measurement: recording it here would make it look like one.
    std::ifstream f(report_path);
    const json raw = json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (raw.is_object() && raw.value("dry_run", false))
      throw std::runtime_error(report_path.string() + " is a dry run's report (nothing was measured); "
                               "a dry run records itself: attngate gate --dry-run");
  } catch (const std::exception& e) {
    *ctx.err << "attngate record: " << e.what() << "\n";
    return kExitError;
  }
  EvaluationInput in;
  in.report = report;
  in.report_path = fs::absolute(report_path).string();
  in.source = "record";
  in.note = note;
  Evaluation e;
  try {
    std::unique_ptr<PendingVersion> copy = take_version_copy(ctx, current_tree_sha256(ctx));
    e = evaluate(ctx, in);
    keep_version_copy(ctx, copy.get(), e.record.version);
  } catch (const std::exception& ex) {
    *ctx.err << "attngate record: " << ex.what() << "\n";
    return kExitError;
  }
  *ctx.out << format_verdict(ctx, e)
           << "  recorded for inspection (source record): attngate commit accepts only a gate run's record\n";
  return e.record.verdict == "pass" ? kExitPass : kExitFail;
}

namespace {

fs::path build_dir_of(const Context& ctx, const GateOptions& o) {
  return o.build_dir.empty() ? ctx.repo / "build" / "gpu" : o.build_dir;
}

void fail_with(GateReport& report, const std::string& code, const std::string& detail) {
  report.verdict = "fail";
  report.reasons.push_back({checked_reason_code(code), {}, detail});
}

// The source folder a build folder was configured from (CMakeCache.txt's CMAKE_HOME_DIRECTORY).
std::optional<fs::path> configured_source(const fs::path& build) {
  std::ifstream cache(build / "CMakeCache.txt");
  const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
  for (std::string line; std::getline(cache, line);)
    if (line.rfind(key, 0) == 0) return fs::path(line.substr(key.size()));
  return std::nullopt;
}

// Why this machine or build folder cannot run the gate at all; empty when it can.
std::string environment_problem(const Context& ctx, const fs::path& build) {
  if (!fs::exists(build / "CMakeCache.txt"))
    return "no configured build at " + build.string() + " (configure it first: cmake --preset gpu)";
  // Only a build of this repository runs this repository's gate: another project's `gate` tests
  // could write any report (a red-team review did so with a ten-line stand-in project).
  std::error_code ec;
  const auto source = configured_source(build);
  if (!source || !fs::equivalent(*source, ctx.repo, ec))
    return build.string() + " is not a build of " + ctx.repo.string() + " (its CMAKE_HOME_DIRECTORY is " +
           (source ? source->string() : std::string("missing")) + ")";
  for (const char* tool : {"cmake", "ctest"})
    if (!on_path(tool)) return std::string(tool) + " not found on PATH";
  return {};
}

// Reads the report once: its hash, its judgement and the fields attngate reads beside GateReport;
// returns its JSON. A report's own "suspicious_confirmed" is not read: only the gate's re-run sets it.
json read_report(const fs::path& report_path, int ctest_exit, EvaluationInput& in) {
  auto bytes = read_file(report_path);
  if (!bytes) throw std::runtime_error("cannot read " + report_path.string());
  json j;
  try {
    j = json::parse(*bytes);
  } catch (const json::exception& e) {
    throw std::runtime_error(report_path.string() + ": not JSON: " + e.what());
  }
  in.report = report_with_ctest_status(parse_report(j), ctest_exit);
  in.report_sha256 = sha256_hex(*bytes);
  return j;
}

// When this gate run started, for the progress lines' seconds (--quiet).
std::chrono::steady_clock::time_point progress_clock_start() {
  static const auto t0 = std::chrono::steady_clock::now();
  return t0;
}
double progress_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - progress_clock_start()).count();
}

// How build and ctest run: from the repository, their output inherited or appended to the log.
RunOptions gate_run_options(const Context& ctx, const GateOptions& o, const fs::path& log) {
  RunOptions ro;
  ro.cwd = ctx.repo;
  ro.output = o.json ? Output::stderr_only : Output::inherit;  // --json: stdout holds the result only
  if (o.quiet) {
    ro.output = Output::log;
    ro.log_file = log;
  }
  if (o.target) ro.env.emplace_back("ATTNGATE_GEOMEAN_TARGET", fmt::format("{:.17g}", *o.target));
  return ro;
}

// One `ctest -L gate` run: reads the report it wrote into `in` and returns its JSON, or synthesizes
// a failure (and returns nothing) when there is no report to trust. `started`: before this run.
std::optional<json> run_gate_tests(std::ostream& err, const fs::path& scenarios, const GateOptions& o,
                                   const fs::path& build, const RunOptions& ro,
                                   fs::file_time_type started, EvaluationInput& in) {
  const fs::path gate_dir = build / "gate";
  const fs::path report_path = gate_dir / "report.json";
  const std::string where = o.quiet ? " (output in " + ro.log_file.string() + ")" : std::string{};
  in.report_path = report_path.string();
  std::vector<std::string> ctest = {"ctest", "--test-dir", build.string(), "-L", "gate", "--output-on-failure",
                                    "--no-tests=error"};
  ctest.insert(ctest.end(), o.ctest_args.begin(), o.ctest_args.end());
  RunResult ctest_result;
  {
    // --quiet: the build and ctest output goes to the log, so say on stderr how far the gate is.
    std::optional<ProgressReporter> progress;
    if (o.quiet && o.progress) {
      try {
        progress.emplace(gate_progress_paths(scenarios, build), started, progress_clock_start(), err);
      } catch (const std::exception& e) {  // display only: the gate runs on without it
        err << "attngate: no progress lines (" << e.what() << ")" << std::endl;
      }
    }
    ctest_result = run_process(ctest, ro);
  }
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
    return std::nullopt;
  }
  if (marker_ec || marker < started || written < marker) {
    in.report = synthesized_failure(
        "NO_REPORT", "the report was not written after this run's gate.setup (marker " + (gate_dir / "started").string() +
                         (marker_ec ? " missing" : marker < started ? " older than this run" : " newer than the report") +
                         "): was gate.setup filtered out? ctest exited " + std::to_string(ctest_result.exit_code) + where);
    return std::nullopt;
  }
  json j;
  try {
    j = read_report(report_path, ctest_result.exit_code, in);
  } catch (const std::exception& e) {
    in.report = synthesized_failure("NO_REPORT", std::string("unreadable report: ") + e.what());
    return std::nullopt;
  }
  if (o.target && (!in.report.target.geomean || std::abs(*in.report.target.geomean - *o.target) > 1e-9))
    fail_with(in.report, "TARGET_NOT_APPLIED",
              "asked for geomean target " + fmt::format("{:.3f}", *o.target) + " but the gate judged against " +
                  fx(in.report.target.geomean));
  return j;
}

// Builds, runs `ctest -L gate` and reads this run's report into `in` (a synthesized failure when
// there is none to trust); returns the report's JSON when it was read.
std::optional<json> build_and_test(const Context& ctx, const GateOptions& o, const fs::path& build,
                                   EvaluationInput& in) {
  const fs::path log = build / "gate" / "attngate_gate.log";
  in.report_path = (build / "gate" / "report.json").string();
  if (o.quiet) std::ofstream(log, std::ios::trunc).flush();  // the log holds this run only
  const RunOptions ro = gate_run_options(ctx, o, log);

  // The report is trusted only if this run wrote it: a stale one would describe another candidate.
  auto started = fs::file_time_type::clock::now();
  (void)progress_clock_start();  // the progress lines count from here
  const bool lines = o.quiet && o.progress;
  if (lines) *ctx.err << "attngate: build " << build.string() << " (output in " << log.string() << ")" << std::endl;
  auto build_result = run_process({"cmake", "--build", build.string()}, ro);
  if (lines)
    *ctx.err << "attngate: build " << (build_result.exit_code == 0 ? "done" : "failed") << " ("
              << fmt::format("{:.0f}", progress_seconds()) << " s)" << std::endl;
  in.build_exit = build_result.exit_code;
  if (build_result.exit_code != 0) {
    in.report = synthesized_failure("BUILD_FAILED", "cmake --build " + build.string() + " exited " +
                                                        std::to_string(build_result.exit_code) +
                                                        (o.quiet ? " (output in " + log.string() + ")" : ""));
    return std::nullopt;
  }
  return run_gate_tests(*ctx.err, scenarios_dir(ctx), o, build, ro, started, in);
}

// CANDIDATE_CHANGED: the measurement belongs to the tree hashed before the build only if the folder
// is still that tree after ctest (`when`: which run) and the built code says it was built from it.
void check_candidate_unchanged(const Context& ctx, const TreeListing& before, EvaluationInput& in,
                               const std::string& when = "after ctest") {
  const std::string& pre = in.candidate_tree_sha256;
  const std::string dir = candidate_dir_rel(ctx);
  TreeListing after;
  const std::string post = read_tree(ctx, after);
  if (post != pre) {
    std::string first = first_tree_difference(before, after);
    fail_with(in.report, "CANDIDATE_CHANGED",
              dir + " changed during the gate run" + (first.empty() ? "" : " (" + first + ")") + ": tree " +
                  tree_name(pre) + " before the build, " + tree_name(post) + " " + when);
  }
  const std::string built = in.report.provenance.candidate_tree_sha256_built.value_or("");
  if (!built.empty() && built != pre)
    fail_with(in.report, "CANDIDATE_CHANGED",
              "the measured binaries were built from " + dir + " tree " + tree_name(built) +
                  ", but the gate hashed " + tree_name(pre) +
                  " before building (provenance.candidate_tree_sha256_built)");
}

// HEAD_CHANGED: the harness was judged at the report's commit; commit accepts the gate-start one.
void check_head_unchanged(const Context& ctx, EvaluationInput& in, const std::string& after = "after ctest") {
  if (!in.git || in.git->commit.empty()) return;
  const std::string& start = in.git->commit;
  const std::string now = git_state(ctx.repo, candidate_rel(ctx)).commit;
  const std::string measured = in.report.provenance.attngate_commit;
  if (now != start)
    fail_with(in.report, "HEAD_CHANGED",
              "git HEAD moved during the gate run: " + short_sha(start) + " at the start, " + short_or(now, "none") +
                  " " + after);
  else if (!measured.empty() && measured != start)
    fail_with(in.report, "HEAD_CHANGED",
              "the report judged commit " + short_sha(measured) + ", but the gate started at " + short_sha(start));
}

// What this run measures, taken before anything is built.
TreeListing snapshot_candidate(const Context& ctx, EvaluationInput& in) {
  in.candidate_source = read_file(ctx.candidate);
  in.git = git_state(ctx.repo, candidate_rel(ctx));
  TreeListing before;
  in.candidate_tree_sha256 = read_tree(ctx, before);
  return before;
}

// Issue 12: a gain beyond the supervisor's suspicious factor passes only after a re-run with fresh
// seeds inside the same gate run.

// The supervisor's `suspicious` signals on this report as evaluate() will compute them, plus
// commit's own step check against the committed bar (a second gate run of the same tree hides the
// supervisor's step signal, never that one): what calls for the re-run.
std::vector<Signal> suspicious_signals(const Context& ctx, const EvaluationInput& in) {
  const SupervisorConfig cfg = load_supervisor(ctx);
  Record cur;
  cur.time = now_iso8601();
  copy_report(cur, in.report);
  std::vector<Signal> found;
  for (auto& s : compute_signals(Lineage(ctx.lineage).read().evaluations(), cur, cfg))
    if (s.trigger == "suspicious") found.push_back(std::move(s));
  const bool step = std::any_of(found.begin(), found.end(), [](const Signal& s) { return s.kind == "step"; });
  if (!step && cur.geomean.speedup) {
    auto [bar, bar_what] = commit_bar(ctx, cur);
    const double g = *cur.geomean.speedup;
    if (bar > 0 && g / bar > cfg.suspicious.step_speedup)
      found.push_back(
          {"suspicious", "step", "geomean " + fmt::format("{:.3f}x", g) + " is " + fmt::format("{:.3f}x", g / bar) + " " + bar_what});
  }
  return found;
}

std::string geomean_text(const Geomean& g) {
  return fx(g.speedup) + " CI " +
         (g.ci_low && g.ci_high ? "[" + fmt::format("{:.3f}", *g.ci_low) + ", " + fmt::format("{:.3f}", *g.ci_high) + "]" : "none");
}

bool intervals_overlap(const Geomean& a, const Geomean& b) {
  return a.ci_low && a.ci_high && b.ci_low && b.ci_high &&
         std::max(*a.ci_low, *b.ci_low) <= std::min(*a.ci_high, *b.ci_high);
}

// Why the re-run does not confirm the first run's gain; empty when it does (it passes and the two
// geomeans' 95% intervals overlap).
std::string unconfirmed_why(const GateReport& first, const GateReport& second) {
  if (second.verdict != "pass") {
    std::vector<std::string> codes;
    for (const auto& r : second.reasons) codes.push_back(r.code);
    std::string why = "the re-run with fresh seeds failed (" + fmt::format("{}", fmt::join(codes, ", ")) + ")";
    if (!second.reasons.empty() && !second.reasons.front().detail.empty())
      why += ": " + second.reasons.front().detail;
    return why;
  }
  if (!intervals_overlap(first.geomean, second.geomean))
    return "the re-run with fresh seeds measured geomean " + geomean_text(second.geomean) + ", the first run " +
           geomean_text(first.geomean) + ": the 95% intervals do not overlap";
  return {};
}

// The confirming run: `ctest -L gate` again, same command line, under the same lock (fresh seeds and
// worker processes); its report is kept as report.confirm.json (report.confirm.md). The folder is
// hashed again afterwards, and HEAD checked, as after the first run.
EvaluationInput rerun_gate_tests(const Context& ctx, const GateOptions& o, const fs::path& build,
                                 const TreeListing& before, const EvaluationInput& first) {
  EvaluationInput second;
  second.candidate_tree_sha256 = first.candidate_tree_sha256;
  second.git = first.git;
  const fs::path gate = build / "gate";
  const RunOptions ro = gate_run_options(ctx, o, gate / "attngate_gate.log");
  if (run_gate_tests(*ctx.err, scenarios_dir(ctx), o, build, ro, fs::file_time_type::clock::now(), second)) {
    fs::rename(gate / "report.json", gate / "report.confirm.json");
    std::error_code ec;
    if (fs::exists(gate / "report.md", ec)) fs::rename(gate / "report.md", gate / "report.confirm.md");
    second.report_path = (gate / "report.confirm.json").string();
  } else {
    second.report_path.clear();
  }
  const std::string after = "after the confirming ctest run";
  check_candidate_unchanged(ctx, before, second, after);
  check_head_unchanged(ctx, second, after);
  return second;
}

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// The report the record names and whose hash the receipt signs: the first run's, with the outcome of
// the re-run added, written back as report.json (and its report.md put back beside it).
void write_recorded_report(const fs::path& gate, json first, const std::optional<std::string>& first_md,
                           const EvaluationInput& second, EvaluationInput& in) {
  first["suspicious_confirmed"] = in.suspicious_confirmed;
  first["confirmation"] = {{"geomean", optional_number(second.report.geomean.speedup)},
                           {"ci_low", optional_number(second.report.geomean.ci_low)},
                           {"ci_high", optional_number(second.report.geomean.ci_high)},
                           {"report_sha256", second.report_sha256.empty() ? json(nullptr) : json(second.report_sha256)},
                           {"verdict", second.report.verdict},
                           {"report", second.report_path.empty() ? json(nullptr) : json(second.report_path)}};
  const std::string bytes = first.dump(1) + "\n";
  write_file_atomically(gate / "report.json", bytes);
  if (first_md) write_file_atomically(gate / "report.md", *first_md);
  in.report_path = (gate / "report.json").string();
  in.report_sha256 = sha256_hex(bytes);
}

// A passing run with a suspicious signal is run again; the gain stands only if the re-run passes
// and its geomean interval overlaps the first's, else the verdict is SUSPICIOUS_UNCONFIRMED.
// Returns the line that says so, empty when no re-run was called for.
std::string confirm_suspicious_gain(const Context& ctx, const GateOptions& o, const fs::path& build,
                                    const TreeListing& before, const std::optional<json>& first_raw,
                                    EvaluationInput& in) {
  in.suspicious_confirmed = false;
  if (in.report.verdict != "pass" || !first_raw) return {};
  const std::vector<Signal> signals = suspicious_signals(ctx, in);
  if (signals.empty()) return {};
  std::vector<std::string> kinds;
  for (const auto& s : signals) kinds.push_back(s.kind);
  if (!o.quiet)
    *ctx.err << "attngate gate: suspicious gain (" << signals.front().kind << ": " << signals.front().detail
             << "); running ctest -L gate again with fresh seeds to confirm it\n";
  const fs::path gate = build / "gate";
  const std::optional<std::string> first_md = read_file(gate / "report.md");
  const EvaluationInput second = rerun_gate_tests(ctx, o, build, before, in);
  const std::string why = unconfirmed_why(in.report, second.report);
  for (const auto& r : second.report.reasons)
    if (r.code == "CANDIDATE_CHANGED" || r.code == "HEAD_CHANGED") fail_with(in.report, r.code, r.detail);
  in.suspicious_confirmed = why.empty();
  if (!why.empty()) fail_with(in.report, "SUSPICIOUS_UNCONFIRMED", why);
  write_recorded_report(gate, *first_raw, first_md, second, in);
  std::string line = "attngate: re-measured the suspicious gain (" + fmt::format("{}", fmt::join(kinds, ", ")) + ") with fresh seeds: ";
  if (!why.empty()) return line + "NOT confirmed: " + why + "\n";
  return line + "confirmed, geomean " + geomean_text(second.report.geomean) + " overlaps the first run's " +
         geomean_text(in.report.geomean) + " (" + second.report_path + ")\n";
}

std::optional<std::string> receipt_key_or_warn(const Context& ctx) {
  try {
    return load_receipt_key(receipt_key_file(), ctx.repo, /*create=*/true);
  } catch (const std::exception& e) {
    *ctx.err << "attngate: warning: this run gets no receipt, so attngate commit will refuse it: " << e.what() << "\n";
    return std::nullopt;
  }
}

struct GateOutcome {
  std::optional<Evaluation> evaluation;  // empty on an environment failure
  std::string environment_failure;
  std::string remeasured;  // the line on the re-run of a suspicious gain, when there was one
};

// One gate run, holding the build folder's lock from before the hash to the lineage append.
GateOutcome gate_and_record(const Context& ctx, const GateOptions& o, EvaluationInput in) {
  const fs::path build = build_dir_of(ctx, o);
  if (auto why = environment_problem(ctx, build); !why.empty()) return {std::nullopt, why};
  fs::create_directories(build / "gate");
  const fs::path lock_file = build / "gate" / ".lock";
  std::string holder;
  auto lock = BuildLock::try_acquire(lock_file, holder);
  if (!lock)
    return {std::nullopt, "another attngate gate holds the lock " + lock_file.string() + " (pid " + holder +
                              "); wait for it to finish, or use another --build-dir"};
  for (const char* stale : {"report.confirm.json", "report.confirm.md"}) fs::remove(build / "gate" / stale);
  TreeListing before = snapshot_candidate(ctx, in);
  std::unique_ptr<PendingVersion> copy = take_version_copy(ctx, in.candidate_tree_sha256);
  const std::optional<json> raw = build_and_test(ctx, o, build, in);
  check_candidate_unchanged(ctx, before, in);
  check_head_unchanged(ctx, in);
  if (has_reason(in.report.reasons, "NO_DEVICE"))
    return {std::nullopt, "no usable CUDA device here (the report says NO_DEVICE); run the gate on the GPU machine"};
  if (has_reason(in.report.reasons, "GPU_SHARED"))
    return {std::nullopt, "another process held the GPU while the gate timed the candidate (the report says "
                          "GPU_SHARED); run the gate again on an idle GPU"};
  std::string remeasured = confirm_suspicious_gain(ctx, o, build, before, raw, in);
  in.receipt_key = receipt_key_or_warn(ctx);
  in.note = o.note;
  Evaluation e = evaluate(ctx, in);
  keep_version_copy(ctx, copy.get(), e.record.version);
  return {e, {}, remeasured};
}

// `gate --json`: the one object on stdout (gate_result.hpp).
int print_gate_json(const Context& ctx, const nlohmann::json& j, int code) {
  *ctx.out << j.dump() << "\n";
  return code;
}

int gate_no_result(const Context& ctx, const GateOptions& o, const std::string& verdict, int code,
                   const std::string& detail) {
  if (o.json) print_gate_json(ctx, GateNoResult{kGateResultSchema, verdict, code, detail, o.dry_run}, code);
  return code;
}

}  // namespace

int cmd_gate(const Context& ctx, const GateOptions& o) {
  if (o.dry_run) return cmd_gate_dry_run(ctx, o);
  GateOutcome g;
  try {
    EvaluationInput in;
    in.source = "gate";
    g = gate_and_record(ctx, o, in);
  } catch (const std::exception& ex) {
    *ctx.err << "attngate gate: " << ex.what() << "\n";
    return gate_no_result(ctx, o, "error", kExitError, ex.what());
  }
  if (!g.evaluation) {
    *ctx.err << "attngate gate: environment failure: " << g.environment_failure
             << "\n  nothing recorded in the lineage: the candidate was not evaluated\n";
    return gate_no_result(ctx, o, "environment_failure", kExitEnvironment, g.environment_failure);
  }
  const int code = g.evaluation->record.verdict == "pass" ? kExitPass : kExitFail;
  *(o.json ? ctx.err : ctx.out) << g.remeasured << format_verdict(ctx, *g.evaluation);
  return o.json ? print_gate_json(ctx, make_gate_result(*g.evaluation, code), code) : code;
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
      out << ", geomean " << fmt::format("{:.4f}x", speedup.get<double>());
      if (lo.is_number() && hi.is_number())
        out << " CI [" << fmt::format("{:.4f}", lo.get<double>()) << ", " << fmt::format("{:.4f}", hi.get<double>()) << "]";
    }
    out << "; target " << fmt::format("{:.4f}x", r.report["target"]["geomean"].get<double>()) << " vs "
        << r.report["target"]["baseline"].get<std::string>() << "\n";
    for (const auto& reason : r.report["reasons"]) {
      out << "  reason " << reason["code"].get<std::string>();
      auto ids = reason["scenarios"].get<std::vector<std::string>>();
      if (ids.size() > 6) {  // all of them are in the report
        const std::size_t more = ids.size() - 5;
        ids.resize(5);
        ids.push_back("... " + std::to_string(more) + " more");
      }
      if (!ids.empty()) out << " [" << fmt::format("{}", fmt::join(ids, ", ")) << "]";
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

namespace {

// `history --elites`: the best version per scenario group, and how to restore it.
void print_elites(const Context& ctx, const std::vector<Record>& evaluations) {
  auto& os = *ctx.out;
  const std::vector<Elite> best = elites(evaluations);
  if (best.empty()) {
    os << "attngate: no elites yet: no scored version with per-scenario speedups in " << ctx.lineage.string() << "\n";
    return;
  }
  char line[256];
  std::snprintf(line, sizeof line, "%-22s  %-7s  %-13s  %-9s  %s\n", "group", "version", "group geomean", "geomean",
                "restore");
  os << line;
  for (const auto& e : best) {
    auto it = std::find_if(evaluations.begin(), evaluations.end(), [&](const Record& r) { return r.version == e.version; });
    const std::string restore = restore_command(ctx, *it);
    std::snprintf(line, sizeof line, "%-22s  %-7d  %-13s  %-9s  %s\n", e.group.name().c_str(), e.version,
                  fmt::format("{:.3f}x", e.group_geomean).c_str(), fx(e.geomean).c_str(),
                  restore.empty() ? "(source not kept)" : restore.c_str());
    os << line;
  }
}

}  // namespace

int cmd_history(const Context& ctx, bool show_elites) {
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
  if (show_elites) {
    print_elites(ctx, c.evaluations());
    return kExitPass;
  }
  // Questions asked through `ask` are shown with the version they were asked about; a version that
  // `attngate commit` committed is followed by the questions asked since the previous commit.
  std::map<int, std::vector<std::string>> asked;
  std::map<int, std::vector<std::string>> before_gain;
  for (const auto& r : c.records) {
    if (r.type == "ask")
      for (const auto& q : r.questions) asked[r.version].push_back("ask:" + q.trigger);
    if (r.type == "commit") {
      auto& ids = before_gain[r.version];
      ids.clear();
      for (const auto& q : r.questions_before) ids.push_back(q.id);
    }
  }
  char line[256];
  std::snprintf(line, sizeof line, "%-7s  %-20s  %-9s  %-17s  %-7s  %s\n", "version", "time (UTC)", "geomean",
                "CI", "verdict", "triggers");
  os << line;
  for (const auto& r : c.records) {
    if (!r.is_evaluation()) continue;
    std::string ci = r.geomean.ci_low && r.geomean.ci_high
                         ? "[" + fmt::format("{:.3f}", *r.geomean.ci_low) + ", " + fmt::format("{:.3f}", *r.geomean.ci_high) + "]"
                         : "-";
    auto triggers = r.triggers;
    for (const auto& a : asked[r.version]) triggers.push_back(a);
    std::string reasons;
    for (const auto& reason : r.reasons) reasons += (reasons.empty() ? "" : ",") + reason.code;
    std::snprintf(line, sizeof line, "%-7d  %-20s  %-9s  %-17s  %-7s  %s%s", r.version, r.time.c_str(),
                  r.geomean.speedup ? fmt::format("{:.3f}x", *r.geomean.speedup).c_str() : "-", ci.c_str(),
                  r.verdict.c_str(), triggers.empty() ? "-" : fmt::format("{}", fmt::join(triggers, ",")).c_str(),
                  reasons.empty() ? "" : ("  (" + reasons + ")").c_str());
    os << line << (r.note.empty() ? "" : "  \"" + r.note + "\"") << "\n";
    if (auto it = before_gain.find(r.version); it != before_gain.end())
      os << "         committed; questions asked before this gain: "
         << (it->second.empty() ? std::string("none") : fmt::format("{}", fmt::join(it->second, ", "))) << "\n";
  }
  return kExitPass;
}

namespace {

std::string version_name(const Record& r) { return "version " + std::to_string(r.version); }

// Proof that the record is what a gate run wrote on this machine, at this HEAD, for this tree.
std::string provenance_refusal(const Context& ctx, const Record& r) {
  const std::string v = version_name(r);
  if (r.dry_run || r.source == "dry_run")
    return v + " is a dry-run record: attngate gate --dry-run simulated it without a build or a GPU, so nothing "
               "was measured (run attngate gate)";
  if (r.source != "gate" && r.source != "stop_hook")
    return v + " was recorded by `attngate " + (r.source.empty() ? std::string("?") : r.source) +
           "`, not measured by a gate run (run attngate gate)";
  if (!r.receipt) return v + " carries no gate receipt (a hand-written lineage record?); run attngate gate";
  std::string key;
  try {
    key = load_receipt_key(receipt_key_file(), ctx.repo, /*create=*/false);
  } catch (const std::exception& e) {
    return "cannot check the receipt of " + v + ": " + e.what();
  }
  if (!receipt_valid(r, key))
    return "the receipt of " + v + " does not match its record (edited by hand, signed on another machine, or "
           "by an attngate before attngate.receipt/2); run attngate gate";
  if (r.receipt->machine_id != machine_id())
    return v + " was measured on another machine (" + r.receipt->machine_id + "); run attngate gate here";
  const std::string head = git_state(ctx.repo, candidate_rel(ctx)).commit;
  if (r.git_commit.empty() || r.git_commit != head)
    return "git HEAD moved since " + v + " was measured (" + short_or(r.git_commit, "none") + " then, " +
           short_or(head, "none") + " now); run attngate gate";
  const std::string tree = current_tree_sha256(ctx);
  if (tree != r.candidate_tree_sha256)
    return candidate_dir_rel(ctx) + " changed since " + v + " was evaluated (tree " +
           tree_name(r.candidate_tree_sha256) + " then, " + tree_name(tree) + " now); run attngate gate";
  return {};
}

// What the measurement says: a pass with nothing that makes its speed doubtful.
std::string judgement_refusal(const Record& r) {
  const std::string v = version_name(r);
  for (const auto& reason : r.reasons)
    if (reason.code == "IMPLAUSIBLE")
      return v + " is IMPLAUSIBLE: " + (reason.detail.empty() ? "faster than the device allows" : reason.detail);
  if (r.verdict != "pass") {
    std::vector<std::string> codes;
    for (const auto& reason : r.reasons) codes.push_back(reason.code);
    return v + " failed the gate" + (codes.empty() ? std::string{} : " (" + fmt::format("{}", fmt::join(codes, ", ")) + ")");
  }
  for (const auto& s : r.signals)
    if (s.kind == "above_peak") return v + " ran above the device's peak, so it was not measured honestly: " + s.detail;
  for (const auto& s : r.signals)
    if (s.trigger == "suspicious" && !r.suspicious_confirmed)
      return v + " has an unconfirmed suspicious gain (" + s.kind + ": " + s.detail +
             "); run attngate gate again so the re-measurement confirms it";
  if (!r.geomean.speedup || !r.geomean.ci_low) return v + " has no geomean confidence interval";
  return {};
}

// The supervisor's step signal compares with the best earlier version, which after a second run
// of the same tree is that tree itself; against the committed bar a rerun cannot hide the step.
std::string step_refusal(const Record& r, double bar, const std::string& bar_what, double step) {
  const double g = *r.geomean.speedup;
  if (r.suspicious_confirmed || !(bar > 0) || g / bar <= step) return {};
  return version_name(r) + " has an unconfirmed suspicious gain (geomean " + fmt::format("{:.3f}x", g) + " is " +
         fmt::format("{:.3f}x", g / bar) + " " + bar_what + "); run attngate gate again so the re-measurement confirms it";
}

std::string commit_message(const Record& r, const std::string& bar_what) {
  const double lo = *r.geomean.ci_low, hi = r.geomean.ci_high.value_or(lo);
  std::ostringstream msg;
  msg << "candidate: attngate version " << r.version << ", geomean " << fmt::format("{:.3f}x", *r.geomean.speedup) << " (CI "
      << fmt::format("{:.3f}", lo) << "-" << fmt::format("{:.3f}", hi) << ")\n\n"
      << "Passed the gate" << (r.target.baseline.empty() ? "" : " against " + r.target.baseline)
      << " and its CI lower bound clears " << bar_what << ".\n\n"
      << "Attngate-Version: " << r.version << "\n"
      << "Attngate-Geomean: " << fmt::format("{:.6g}", *r.geomean.speedup) << "\n"
      << "Attngate-CI: " << fmt::format("{:.6g}", lo) << " " << fmt::format("{:.6g}", hi) << "\n"
      << "Attngate-Baseline: " << (r.target.baseline.empty() ? "unknown" : r.target.baseline) << "\n"
      << "Attngate-Candidate-Sha256: " << r.candidate_sha256 << "\n"
      << "Attngate-Candidate-Tree-Sha256: " << r.candidate_tree_sha256 << "\n";
  return msg.str();
}

// The tree hash of `dir` as staged in the index git is told to use.
std::string staged_tree_sha256(const std::function<RunResult(std::vector<std::string>)>& git, const std::string& dir) {
  auto ls = git({"ls-files", "-s", "-z", "--", dir});
  if (ls.exit_code != 0) return {};
  TreeListing listing;
  std::istringstream entries(ls.out);
  for (std::string e; std::getline(entries, e, '\0');) {
    auto tab = e.find('\t');  // "<mode> <object> <stage>\t<path>"
    if (tab == std::string::npos) return {};
    std::string mode, object;
    std::istringstream(e.substr(0, tab)) >> mode >> object;
    auto blob = git({"cat-file", "blob", object});
    if (blob.exit_code != 0) return {};
    listing.push_back({e.substr(tab + 1 + dir.size() + 1), sha256_hex(blob.out)});
  }
  return tree_sha256(listing);
}

// Commits exactly the measured tree of the candidate folder and nothing else: the folder is staged
// into a private index (HEAD plus the folder), checked against the recorded tree hash (an edit
// after the checks above shows here), and committed from that index; the real index then takes
// the folder from the new HEAD, so whatever else was staged stays staged.
std::string commit_folder(const Context& ctx, const Record& r, const std::string& message) {
  const std::string dir = candidate_dir_rel(ctx);
  const fs::path index = state_dir(ctx) / ("commit-index." + std::to_string(::getpid()));
  fs::create_directories(index.parent_path());
  struct Remove {
    fs::path p;
    ~Remove() {
      std::error_code ec;
      fs::remove(p, ec);
    }
  } cleanup{index};
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", ctx.repo.string()});
    RunOptions o;
    o.env = {{"GIT_INDEX_FILE", index.string()}};
    return run_process(args, o);
  };
  if (auto rt = git({"read-tree", "HEAD"}); rt.exit_code != 0) return "git read-tree HEAD failed: " + rt.err;
  if (auto add = git({"add", "-A", "-f", "--", dir}); add.exit_code != 0) return "git add failed: " + add.err;
  const std::string staged = staged_tree_sha256(git, dir);
  if (staged != r.candidate_tree_sha256)
    return "what git staged from " + dir + " (tree " + tree_name(staged) + ") is not what " + version_name(r) +
           " measured (" + tree_name(r.candidate_tree_sha256) +
           "): the folder changed while committing, or holds something git stores differently (a symlink)";
  if (git({"diff", "--cached", "--quiet", "HEAD", "--", dir}).exit_code == 0)
    return "the candidate folder " + dir + " is unchanged since HEAD";
  if (auto c = git({"commit", "-q", "-m", message}); c.exit_code != 0) return "git commit failed: " + c.err + c.out;
  if (run_process({"git", "-C", ctx.repo.string(), "reset", "-q", "--", dir}).exit_code != 0)
    *ctx.err << "attngate commit: warning: git reset -- " << dir
             << " failed; the index may show the folder as changed\n";
  return {};
}

// The questions logged since the previous committed version's evaluation (its own included) up to
// the evaluation of `version` (not its own: those came after the gain was measured).
std::vector<QuestionRef> questions_before(const LineageContents& c, int version) {
  int previous = 0;
  for (const auto& r : c.records)
    if (r.type == "commit" && r.version < version) previous = std::max(previous, r.version);
  std::vector<QuestionRef> out;
  bool on = previous == 0;
  for (const auto& r : c.records) {
    if (r.is_evaluation() && r.version == version) break;
    if (r.is_evaluation() && r.version == previous) on = true;
    if (on && (r.is_evaluation() || r.type == "ask")) out.insert(out.end(), r.questions.begin(), r.questions.end());
  }
  return out;
}

// A "commit" record: which questions preceded this committed gain (shown by `attngate history`).
void log_commit(const Context& ctx, int version) {
  Lineage(ctx.lineage).append(
      [&](const LineageContents& earlier, int) {
        Record r;
        r.type = "commit";
        r.version = version;
        r.time = now_iso8601();
        r.source = "commit";
        r.questions_before = questions_before(earlier, version);
        return r;
      },
      false);
}

}  // namespace

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
  const std::string dir = candidate_dir_rel(ctx);
  if (dir.empty() || dir == "." || dir.rfind("..", 0) == 0)
    return refuse("the candidate folder " + candidate_dir(ctx).string() + " is not a folder inside " +
                  ctx.repo.string());
  if (!git_state(ctx.repo, candidate_rel(ctx)).is_repo) return refuse(ctx.repo.string() + " is not a git repository");
  if (auto why = provenance_refusal(ctx, *latest); !why.empty()) return refuse(why);
  if (auto why = judgement_refusal(*latest); !why.empty()) return refuse(why);

  auto [best, best_what] = commit_bar(ctx, *latest);
  try {
    if (auto why = step_refusal(*latest, best, best_what, load_supervisor(ctx).suspicious.step_speedup); !why.empty())
      return refuse(why);
  } catch (const std::exception& e) {
    err << "attngate commit: " << e.what() << "\n";
    return kExitError;
  }
  const double lo = *latest->geomean.ci_low;
  if (!(lo > best))
    return refuse("the CI lower bound " + fmt::format("{:.3f}", lo) + " of " + version_name(*latest) + " does not clear " +
                  best_what);
  try {
    if (auto why = commit_folder(ctx, *latest, commit_message(*latest, best_what)); !why.empty()) return refuse(why);
  } catch (const std::exception& e) {
    err << "attngate commit: " << e.what() << "\n";
    return kExitError;
  }
  try {
    log_commit(ctx, latest->version);
  } catch (const std::exception& e) {
    err << "attngate commit: warning: the commit is made but not logged in the lineage: " << e.what() << "\n";
  }
  auto head = run_process({"git", "-C", ctx.repo.string(), "rev-parse", "--short=12", "HEAD"});
  *ctx.out << "attngate commit: committed " << dir << " as version " << latest->version << " ("
           << fmt::format("{:.3f}x", *latest->geomean.speedup) << ", CI low " << fmt::format("{:.3f}", lo) << ") as "
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
  std::vector<std::string> tags;
  std::vector<LineageIssue> issues;
  Lineage(ctx.lineage).append(
      [&](const LineageContents& earlier, int version) {
        issues = earlier.issues;
        latest = earlier.last_evaluation();
        // done and correctness choose by what failed: the given report's, else the latest evaluation's.
        const std::vector<Reason> none_r;
        const std::vector<ScenarioResult> none_s;
        const auto& reasons = rep ? rep->reasons : latest ? latest->reasons : none_r;
        const auto& scenarios = rep ? rep->scenarios : latest ? latest->scenarios : none_s;
        tags = question_tags(trigger, reasons, scenarios);
        chosen = bank.select_for(trigger, asked_questions(earlier), tags);
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
  if (auto pointer = knowledge_pointer(ctx, *chosen, ""); !pointer.empty()) *ctx.out << pointer << "\n";
  if (trigger == "correctness")
    *ctx.out << "chosen by: the failing scenarios share " << (tags.empty() ? std::string("no listed feature") : fmt::format("{}", fmt::join(tags, ", ")))
             << "\n";
  if (trigger == "done" && !tags.empty()) *ctx.out << "chosen by: reason " << fmt::format("{}", fmt::join(tags, ", ")) << "\n";
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
      const Record& last = evals.back();
      // The whole folder when the record has its hash (older records: candidate.cu alone).
      bool unchanged = last.candidate_tree_sha256.empty()
                           ? last.candidate_sha256 == sha256_file(ctx.candidate).value_or("")
                           : last.candidate_tree_sha256 == current_tree_sha256(ctx);
      if (unchanged) {
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
    quiet.progress = false;  // the runner hands a refusal's stderr to the agent: the reason only
    EvaluationInput in;
    in.source = "stop_hook";
    in.session = session;
    in.agent_triggers_on_fail = {"done"};
    GateOutcome g = gate_and_record(ctx, quiet, in);
    if (!g.evaluation) {
      // Nothing the agent can fix: refuse once so it is seen, then let the agent stop.
      err << "attngate stop hook: the gate cannot run here: " << g.environment_failure << "\n";
      return active ? kExitPass : kExitRefuse;
    }
    const Evaluation& e = *g.evaluation;
    if (e.record.verdict == "pass") {
      *ctx.out << g.remeasured << format_verdict(ctx, e);
      return kExitPass;
    }
    // The supervisor asks for a human (stalls in a row): the agent stops and hands over, the gate
    // still failing; refusing the stop would keep it going where a person should decide.
    for (const auto& sig : e.record.signals)
      if (sig.trigger == "human") {
        err << "attngate stop hook: the supervisor asks for a human (" << sig.detail
            << "); letting the agent stop (the gate still fails)\n"
            << format_verdict(ctx, e);
        return kExitPass;
      }
    fs::path build = build_dir_of(ctx, o);
    err << "The attngate gate does not pass yet, so the work is not done.\n"
        << g.remeasured << format_verdict(ctx, e)
        << "  gate output: " << (build / "gate" / "attngate_gate.log").string() << "\n";
    return kExitRefuse;
  } catch (const std::exception& ex) {
    // Refuse once so the error is seen; on the runner's retry let the agent stop, since an error
    // the agent cannot fix would otherwise trap it.
    err << "attngate stop hook: " << ex.what() << "\n";
    return active ? kExitPass : kExitRefuse;
  }
}

fs::path scenarios_dir(const Context& ctx) {
  const fs::path here = ctx.repo / "scenarios";
  return fs::exists(here / "gate.yaml") ? here : fs::path(ATTNGATE_HOOKS_SCENARIO_DIR);
}

}  // namespace attngate::hooks
