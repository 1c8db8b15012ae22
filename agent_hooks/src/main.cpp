// attngate: the command an external coding agent runs as its stop condition.
#include <unistd.h>
#include <wordexp.h>

#include <iostream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attngate/hooks/commands.hpp"
#include "attngate/hooks/dry_run.hpp"
#include "attngate/hooks/questions.hpp"

namespace fs = std::filesystem;
using namespace attngate::hooks;

namespace {

// Shell-style word splitting (quotes, escapes) without running anything: WRDE_NOCMD refuses $(...).
std::optional<std::vector<std::string>> split_words(const std::string& text) {
  if (text.empty()) return std::vector<std::string>{};
  wordexp_t w{};
  if (::wordexp(text.c_str(), &w, WRDE_NOCMD) != 0) return std::nullopt;
  std::vector<std::string> out(w.we_wordv, w.we_wordv + w.we_wordc);
  ::wordfree(&w);
  return out;
}

// A note is one line of text: it is printed in verdicts, digests and history, and stored as JSON,
// so a newline, a control character (a terminal escape) or bytes that are not UTF-8 are refused.
std::string note_problem(const std::string& note) {
  if (note.size() > 500) return "longer than 500 bytes";
  for (size_t i = 0; i < note.size();) {
    const auto c = static_cast<unsigned char>(note[i]);
    if (c < 0x20 || c == 0x7F) return "a control character (a newline, a tab, an escape) at byte " + std::to_string(i);
    const int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > note.size()) return "not UTF-8 at byte " + std::to_string(i);
    for (int k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(note[i + k]) >> 6) != 0x2) return "not UTF-8 at byte " + std::to_string(i);
    i += len;
  }
  return {};
}

// Every option's value and every subcommand, filled by CLI11's parse.
struct Cli {
  std::string repo, lineage, candidate, supervisor;
  std::vector<std::string> question_files;
  // gate, stop-hook, report (build folder), record (note)
  std::string build_dir, ctest_args, note;
  double target_value = 0;
  CLI::Option* target_opt = nullptr;
  std::vector<std::string> ctest_rest;
  bool quiet = false, as_json = false, dry_run = false, elites = false;
  // show, diff, commit, ask, record
  int show_version = 0, diff_a = 0, diff_b = 0, commit_version = 0;
  std::string trigger, ask_report, record_report;
  // report
  ReportInputs report_in;
  bool prepare = false;
  std::string report_scenarios, results_dir, perf, out_dir, started_after, start_records;
  // plan, profile
  std::string plan_batches, plan_out, profile_build;
  GateTools plan_tools;
  ProfileOptions po;
  CLI::App *gate = nullptr, *history = nullptr, *show = nullptr, *diff = nullptr, *commit = nullptr, *ask = nullptr,
           *record = nullptr, *report = nullptr, *plan = nullptr, *prof = nullptr, *stop_hook = nullptr;
};

void add_global_options(CLI::App& app, Cli& c) {
  app.add_option("--repo", c.repo, "Repository root (default: the git top level of the working directory)");
  app.add_option("--lineage", c.lineage, "Lineage file (default: <repo>/.attngate/lineage.jsonl)");
  app.add_option("--candidate", c.candidate, "Candidate source (default: <repo>/kernels/candidate/candidate.cu)");
  app.add_option("--supervisor", c.supervisor, "YAML file overriding the supervisor thresholds")
      ->check(CLI::ExistingFile);
  app.add_option("--questions", c.question_files, "YAML file of extra questions, merged into the bank (repeatable)")
      ->check(CLI::ExistingFile);
}

void add_gate_options(CLI::App* sub, Cli& c) {
  sub->add_option("--build-dir", c.build_dir, "Configured build folder (default: <repo>/build/gpu)");
  sub->add_option("--ctest-args", c.ctest_args, "Extra ctest arguments, shell-quoted (or put them after --)");
}

void add_gate(CLI::App& app, Cli& c) {
  c.gate = app.add_subcommand("gate", "Build, run `ctest -L gate`, record the report; exit 0 pass, 1 fail, "
                                      "3 cannot run here (no configured build, no cmake/ctest, another gate "
                                      "holds the build folder, no GPU; nothing recorded); --dry-run: 10, 11");
  add_gate_options(c.gate, c);
  c.target_opt = c.gate->add_option("--target", c.target_value,
                                    "Geomean target overriding scenarios/gate.yaml (passed as ATTNGATE_GEOMEAN_TARGET)")
                     ->check(CLI::PositiveNumber);
  c.gate->add_flag("--quiet", c.quiet, "Send build and ctest output to <build>/gate/attngate_gate.log");
  c.gate->add_flag("--json", c.as_json, "Print one JSON object (schema attngate.gate_result/1) on stdout, the text on stderr");
  c.gate->add_flag("--dry-run", c.dry_run, "Simulate the gate without a build or a GPU (exit 10 simulated pass, 11 "
                                           "simulated fail), recorded in the dry-run lineage");
  c.gate->add_option("--note", c.note, "What this version tries, stored with the evaluation in the lineage");
  c.gate->add_option("ctest_extra", c.ctest_rest, "Arguments after -- go to ctest");
}

// Last, so that --help lists it where it always was.
void add_stop_hook(CLI::App& app, Cli& c) {
  c.stop_hook = app.add_subcommand("stop-hook", "Stop hook for agent runners: reads the runner's JSON on stdin, "
                                                "runs the gate, exit 2 (refuse, reason on stderr) unless it passes");
  add_gate_options(c.stop_hook, c);
}

// The lineage's readers and writers: history, show, diff, commit, ask, record.
void add_lineage_commands(CLI::App& app, Cli& c) {
  c.history = app.add_subcommand("history", "The lineage as a table");
  c.history->add_flag("--elites", c.elites, "The best version per scenario group (head dim, causal, short/long) instead");
  c.history->add_flag("--dry-run", c.dry_run, "Read the dry-run lineage");
  c.show = app.add_subcommand("show", "One evaluated version: its record, per-scenario speedups, signals, "
                                      "questions asked, note and where its source is kept");
  c.show->add_option("version", c.show_version, "Lineage version")->required();
  c.show->add_flag("--json", c.as_json, "One JSON object (schema attngate.show/1)");
  c.show->add_flag("--dry-run", c.dry_run, "Read the dry-run lineage");
  c.diff = app.add_subcommand("diff", "Two evaluated versions compared: per-scenario speedups and their ratio, "
                                      "reasons and signals that differ, notes, a unified diff of their source");
  c.diff->add_option("a", c.diff_a, "Lineage version")->required();
  c.diff->add_option("b", c.diff_b, "Lineage version")->required();
  c.diff->add_flag("--json", c.as_json, "One JSON object (schema attngate.diff/1)");
  c.diff->add_flag("--dry-run", c.dry_run, "Read the dry-run lineage");
  c.commit = app.add_subcommand("commit", "Commit the candidate folder if its latest evaluation is a signed gate "
                                          "run of it at HEAD that passed and beats the best committed version "
                                          "beyond noise");
  c.commit->add_option("--version", c.commit_version,
                       "An earlier evaluation instead, if no later evaluation measured its tree or its candidate.cu "
                       "again and the folder holds that tree again")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  c.ask = app.add_subcommand("ask", "Print one question for a trigger (logged in the lineage)");
  c.ask->add_option("--trigger", c.trigger, "stall|cycle|limit|done|suspicious|regression|correctness|human")
      ->required()
      ->check(CLI::IsMember(all_triggers()));
  c.ask->add_option("--report", c.ask_report, "Report for the limit context and for choosing done/correctness questions (default: the latest evaluation)")
      ->check(CLI::ExistingFile);
  c.record = app.add_subcommand("record", "Append a lineage record from a report without running anything "
                                          "(for inspection: commit refuses it)");
  c.record->add_option("--report", c.record_report, "Gate report (report.json)")->required()->check(CLI::ExistingFile);
  c.record->add_option("--note", c.note, "What this version tries, stored with the evaluation in the lineage");
}

void add_report(CLI::App& app, Cli& c) {
  auto* r = c.report = app.add_subcommand(
      "report", "Judge the outcomes of a gate run (runs nothing) and write <out-dir>/report.json and report.md; "
                "exit 0 only on pass");
  r->add_option("--build-dir", c.build_dir, "Build folder the paths below default into (default: <repo>/build/gpu)");
  r->add_option("--suite", c.report_in.suite, "Suite judged (default gate)");
  r->add_option("--scenarios", c.report_scenarios, "Directory of the YAML suites (default: the shipped scenarios/)");
  r->add_option("--kernel", c.report_in.kernel, "Kernel under test (default: settings.candidate_kernel, else candidate)");
  r->add_option("--baseline", c.report_in.baseline, "Baseline kernel (default: settings.baseline_kernel, else initial)");
  r->add_option("--results-dir", c.results_dir, "Verify results (default: <build>/verify/results)");
  r->add_option("--perf", c.perf, "Performance comparison JSON (default: <out-dir>/performance.json)");
  r->add_option("--out-dir", c.out_dir, "Where report.json and report.md go (default: <build>/gate)");
  r->add_option("--started-after", c.started_after,
                "Marker written when the gate started; older outcomes are stale (default: <out-dir>/started)");
  r->add_option("--start-records", c.start_records,
                "The gate tests' start records, to tell a test that did not run from a crash or a timeout "
                "(default: <results-dir>/started)");
  r->add_option("--verify-timeout", c.report_in.verify_timeout_s, "TIMEOUT of the verify tests, seconds");
  r->add_option("--perf-timeout", c.report_in.perf_timeout_s, "TIMEOUT of gate.performance, seconds");
  r->add_flag("--prepare", c.prepare,
              "gate.setup: delete this suite's results of the kernel, the performance JSON and the report, "
              "then write the marker");
}

// The build's own commands and the profiler: plan, profile.
void add_plan_and_profile(CLI::App& app, Cli& c) {
  auto* plan = c.plan = app.add_subcommand("plan", "Write the CTest script of the gate's own tests (gate.setup, "
                                                   "gate.performance, gate.report) from verify's list of the gate's "
                                                   "verify tests (the build runs it)");
  plan->add_option("--batches", c.plan_batches, "verify's list (attngate.gate_batches/1)")->required();
  plan->add_option("--out", c.plan_out, "The CTest script to write")->required();
  plan->add_option("--attngate", c.plan_tools.attngate, "This command's path, for gate.setup and gate.report")->required();
  plan->add_option("--bench", c.plan_tools.bench, "attngate_bench_judge, for gate.performance")->required();
  plan->add_option("--workers", c.plan_tools.workers_dir, "The folder of the attngate_worker_<library> binaries")->required();
  plan->add_option("--gate-build-dir", c.plan_tools.build_dir, "The build tree (<build>/gate holds the report)")->required();
  plan->add_option("--source-dir", c.plan_tools.source_dir, "The repository the report hashes")->required();
  auto* prof = c.prof = app.add_subcommand("profile", "One scenario's call of a kernel under Nsight Compute, in its "
                                                      "own worker: a summary of at most 40 lines (or --json), the "
                                                      "report kept");
  prof->add_option("--kernel", c.po.kernel, "Kernel to profile (default candidate)");
  prof->add_option("--compare", c.po.compare, "A second kernel, profiled in the same run, side by side (e.g. initial)");
  prof->add_option("--suite", c.po.suite, "Suite of --scenario (default gate)");
  prof->add_option("--scenario", c.po.scenario, "Scenario id");
  prof->add_option("--shape", c.po.shape, "An ad-hoc shape instead (b=4,sq=8192,hq=32,hkv=8,d=128,causal)");
  prof->add_option("--ncu", c.po.ncu, "Nsight Compute's ncu (default: on PATH, else /usr/local/cuda/bin/ncu)");
  prof->add_option("--build-dir", c.profile_build, "Configured build folder (default: <repo>/build/gpu)");
  prof->add_flag("--json", c.po.json, "Print the document (schema attngate.profile/1) instead of the summary");
}

Context make_context(const Cli& c) {
  Context ctx = default_context(std::cout, std::cerr);
  if (!c.repo.empty()) {
    ctx.repo = fs::absolute(c.repo);
    ctx.lineage = ctx.repo / ".attngate" / "lineage.jsonl";
    ctx.candidate = ctx.repo / "kernels" / "candidate" / "candidate.cu";
    ctx.hooks_dir = default_hooks_dir(ctx.repo);
  }
  if (!c.lineage.empty()) ctx.lineage = fs::absolute(c.lineage);
  if (!c.candidate.empty()) ctx.candidate = fs::absolute(c.candidate);
  if (!c.supervisor.empty()) ctx.supervisor_file = fs::absolute(c.supervisor);
  for (const auto& q : c.question_files) ctx.question_files.push_back(fs::absolute(q));
  return ctx;
}

// The gate's options, or nothing (said on stderr) for a note or ctest arguments it cannot take.
std::optional<GateOptions> make_gate_options(const Cli& c) {
  GateOptions go;
  if (!c.build_dir.empty()) go.build_dir = fs::absolute(c.build_dir);
  if (*c.target_opt) go.target = c.target_value;
  go.quiet = c.quiet;
  go.json = c.as_json;
  go.dry_run = c.dry_run;
  if (auto why = note_problem(c.note); !why.empty()) {
    std::cerr << "attngate: --note must be one line of at most 500 bytes of UTF-8 text: " << why << "\n";
    return std::nullopt;
  }
  go.note = c.note;
  auto words = split_words(c.ctest_args);
  if (!words) {
    std::cerr << "attngate: cannot split --ctest-args '" << c.ctest_args << "'\n";
    return std::nullopt;
  }
  go.ctest_args = *words;
  go.ctest_args.insert(go.ctest_args.end(), c.ctest_rest.begin(), c.ctest_rest.end());
  return go;
}

ReportInputs report_inputs(const Cli& c) {
  auto abs_or_empty = [](const std::string& p) { return p.empty() ? fs::path{} : fs::absolute(p); };
  ReportInputs in = c.report_in;
  in.scenarios_dir = abs_or_empty(c.report_scenarios);
  in.results_dir = abs_or_empty(c.results_dir);
  in.perf = abs_or_empty(c.perf);
  in.out_dir = abs_or_empty(c.out_dir);
  in.started_after = abs_or_empty(c.started_after);
  in.start_records_dir = abs_or_empty(c.start_records);
  return in;
}

int run_command(Cli& c, const Context& ctx, const GateOptions& go) {
  if (*c.gate) return cmd_gate(ctx, go);
  if (*c.plan) return cmd_plan(ctx, c.plan_batches, c.plan_out, c.plan_tools);
  if (*c.prof) {
    if (!c.profile_build.empty()) c.po.build_dir = fs::absolute(c.profile_build);
    return cmd_profile(ctx, c.po);
  }
  Context inspected = ctx;
  if (c.dry_run) inspected.lineage = dry_run_lineage(ctx.lineage);
  if (*c.history) return cmd_history(inspected, c.elites);
  if (*c.show) return cmd_show(inspected, c.show_version, c.as_json);
  if (*c.diff) return cmd_diff(inspected, c.diff_a, c.diff_b, c.as_json);
  if (*c.commit) return cmd_commit(ctx, c.commit_version);
  if (*c.ask) return cmd_ask(ctx, c.trigger, c.ask_report.empty() ? std::nullopt : std::optional<fs::path>(c.ask_report));
  if (*c.record) return cmd_record(ctx, c.record_report, c.note);
  if (*c.report) return cmd_report(ctx, report_inputs(c), go.build_dir, c.prepare);
  if (*c.stop_hook) {
    // Run by hand on a terminal there is no runner JSON to wait for.
    std::string input = ::isatty(0) ? std::string{} : std::string(std::istreambuf_iterator<char>(std::cin), {});
    return cmd_stop_hook(ctx, input, go);
  }
  return kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attngate: build and run the attention-kernel gate, keep the lineage of evaluated versions, "
               "and ask the questions that the supervisor's signals call for"};
  app.require_subcommand(1);
  // Global options may follow the subcommand (`attngate history --lineage F`).
  app.fallthrough();
  Cli c;
  add_global_options(app, c);
  add_gate(app, c);
  add_lineage_commands(app, c);
  add_report(app, c);
  add_plan_and_profile(app, c);
  add_stop_hook(app, c);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitError;
  }
  try {
    const Context ctx = make_context(c);
    const std::optional<GateOptions> go = make_gate_options(c);
    if (!go) return kExitError;
    return run_command(c, ctx, *go);
  } catch (const std::exception& e) {
    std::cerr << "attngate: " << e.what() << "\n";
    return kExitError;
  }
}
