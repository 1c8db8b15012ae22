#include "command_support.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace cmd;

namespace cmd {

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
std::vector<Signal> suspicious_signals(const Context& ctx, const SupervisorConfig& cfg, const EvaluationInput& in) {
  Record cur;
  cur.time = now_iso8601();
  copy_report(cur, in.report);
  std::vector<Signal> found;
  for (auto& s : compute_signals(Lineage(ctx.lineage).read().evaluations(), cur, cfg, committed_step_bar(ctx, cur)))
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

// Whether the two 95% intervals overlap, or lie at most `gap` (relative to the lower's top) apart.
bool intervals_overlap(const Geomean& a, const Geomean& b, double gap) {
  return a.ci_low && a.ci_high && b.ci_low && b.ci_high &&
         std::max(*a.ci_low, *b.ci_low) <= std::min(*a.ci_high, *b.ci_high) * (1 + std::max(gap, 0.0));
}

// Why the re-run does not confirm the first run's gain; empty when it does (it passes and the two
// geomeans' 95% intervals overlap, within suspicious.confirm_gap).
std::string unconfirmed_why(const GateReport& first, const GateReport& second, double gap) {
  if (second.verdict != "pass") {
    std::vector<std::string> codes;
    for (const auto& r : second.reasons) codes.push_back(r.code);
    std::string why = "the re-run with fresh seeds failed (" + fmt::format("{}", fmt::join(codes, ", ")) + ")";
    if (!second.reasons.empty() && !second.reasons.front().detail.empty())
      why += ": " + second.reasons.front().detail;
    return why;
  }
  if (!intervals_overlap(first.geomean, second.geomean, gap))
    return "the re-run with fresh seeds measured geomean " + geomean_text(second.geomean) + ", the first run " +
           geomean_text(first.geomean) + ": the 95% intervals lie more than " +
           fmt::format("{:.1f}%", 100 * std::max(gap, 0.0)) +
           " apart (suspicious.confirm_gap)";
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

// The report the record names and whose hash the receipt signs: the first run's, with the outcome of
// the re-run added, written back as report.json (and its report.md put back beside it).
void write_recorded_report(const fs::path& gate, const json& first_raw, const std::optional<std::string>& first_md,
                           const EvaluationInput& second, EvaluationInput& in) {
  GateReport first = parse_report(first_raw);
  first.suspicious_confirmed = in.suspicious_confirmed;
  first.confirmation = Confirmation{second.report.geomean.speedup, second.report.geomean.ci_low,
                                    second.report.geomean.ci_high,
                                    second.report_sha256.empty() ? std::nullopt : std::optional(second.report_sha256),
                                    second.report.verdict,
                                    second.report_path.empty() ? std::nullopt : std::optional(second.report_path)};
  const std::string bytes = json(first).dump(1) + "\n";
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
  const SupervisorConfig cfg = load_supervisor(ctx);
  const std::vector<Signal> signals = suspicious_signals(ctx, cfg, in);
  if (signals.empty()) return {};
  std::vector<std::string> kinds;
  for (const auto& s : signals) kinds.push_back(s.kind);
  if (!o.quiet)
    *ctx.err << "attngate gate: suspicious gain (" << signals.front().kind << ": " << signals.front().detail
             << "); running ctest -L gate again with fresh seeds to confirm it\n";
  const fs::path gate = build / "gate";
  const std::optional<std::string> first_md = read_file(gate / "report.md");
  const EvaluationInput second = rerun_gate_tests(ctx, o, build, before, in);
  const double gap = cfg.suspicious.confirm_gap;
  const std::string why = unconfirmed_why(in.report, second.report, gap);
  for (const auto& r : second.report.reasons)
    if (r.code == "CANDIDATE_CHANGED" || r.code == "HEAD_CHANGED") fail_with(in.report, r.code, r.detail);
  in.suspicious_confirmed = why.empty();
  if (!why.empty()) fail_with(in.report, "SUSPICIOUS_UNCONFIRMED", why);
  write_recorded_report(gate, *first_raw, first_md, second, in);
  std::string line = "attngate: re-measured the suspicious gain (" + fmt::format("{}", fmt::join(kinds, ", ")) + ") with fresh seeds: ";
  if (!why.empty()) return line + "NOT confirmed: " + why + "\n";
  const bool overlap = intervals_overlap(second.report.geomean, in.report.geomean, 0);
  return line + "confirmed, geomean " + geomean_text(second.report.geomean) +
         (overlap ? std::string(" overlaps the first run's ")
                  : fmt::format(" lies within suspicious.confirm_gap ({:.1f}%) of the first run's ", 100 * gap)) +
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

}  // namespace cmd

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

}  // namespace attngate::hooks
