#include "command_support.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;

namespace cmd {


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
  cfg.suspicious.confirm_gap = std::min(cfg.suspicious.confirm_gap, base.suspicious.confirm_gap);
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
std::string knowledge_pointer(const Context& ctx, const Question& q, const char* indent) {
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
    if (!src && !r.git.candidate_dirty && !r.git.commit.empty()) {
      src = git_show(ctx_.repo, r.git.commit, rel_);
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
    const std::string& base = v.trailers.baseline;
    if (!base.empty() && !r.target.baseline.empty() && base != r.target.baseline) continue;
    if (!best || v.geomean > best->geomean) best = v;
  }
  if (!best) return {1.0, "the baseline itself (1.000x)"};
  return {best->geomean, "the best committed version (" + fmt::format("{:.3f}x", best->geomean) + ", commit " +
                             best->commit.substr(0, 12) + ")"};
}

// Unlike commit_bar, a commit counts only if its Attngate-Receipt verifies under this machine's key
// and its candidate folder is the tree the receipt signed (trailers pasted onto another commit do
// not count), against the same named baseline: a higher bar switches the confirming re-run off, so
// a hand-made trailer must not raise it. Without a key (nothing was ever gated here) the bar is the
// baseline's.
StepBar committed_step_bar(const Context& ctx, const Record& r) {
  std::string key;
  try {
    key = load_receipt_key(receipt_key_file(), ctx.repo, /*create=*/false);
  } catch (const std::exception&) {
    return {};
  }
  std::optional<CommittedVersion> best;
  for (const auto& v : git_committed_versions(ctx.repo)) {
    if (r.target.baseline.empty() || v.trailers.baseline != r.target.baseline || (best && v.geomean <= best->geomean))
      continue;
    if (!commit_receipt_valid(v.trailers, v.receipt, key)) continue;
    const auto folder = git_folder(ctx.repo, v.commit, candidate_dir_rel(ctx));
    if (!folder || files_tree_sha256(*folder) != v.trailers.candidate_tree_sha256) continue;
    best = v;
  }
  if (!best) return {};
  return {best->geomean, "best committed version (" + fmt::format("{:.3f}x", best->geomean) + ", commit " +
                             best->commit.substr(0, 12) + ", its receipt verified)"};
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


}  // namespace cmd

using namespace cmd;

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
    r.git = {git.commit, git.dirty, git.candidate_dirty};
    copy_report(r, in.report);
    r.report = in.report_path;
    r.build_exit = in.build_exit;
    r.ctest_exit = in.ctest_exit;
    r.suspicious_confirmed = in.suspicious_confirmed;
    r.note = in.note;
    r.dry_run = in.dry_run;
    auto earlier = earlier_all.evaluations();
    r.churn = churn_for(ctx, earlier, r, source);
    r.signals = compute_signals(earlier, r, cfg, committed_step_bar(ctx, r));
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
    if (report.dry_run)
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

fs::path scenarios_dir(const Context& ctx) {
  const fs::path here = ctx.repo / "scenarios";
  return fs::exists(here / "gate.yaml") ? here : fs::path(ATTNGATE_HOOKS_SCENARIO_DIR);
}

}  // namespace attngate::hooks
