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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attngate: build and run the attention-kernel gate, keep the lineage of evaluated versions, "
               "and ask the questions that the supervisor's signals call for"};
  app.require_subcommand(1);
  // Global options may follow the subcommand (`attngate history --lineage F`).
  app.fallthrough();

  std::string repo, lineage, candidate, supervisor;
  std::vector<std::string> question_files;
  app.add_option("--repo", repo, "Repository root (default: the git top level of the working directory)");
  app.add_option("--lineage", lineage, "Lineage file (default: <repo>/.attngate/lineage.jsonl)");
  app.add_option("--candidate", candidate, "Candidate source (default: <repo>/kernels/candidate/candidate.cu)");
  app.add_option("--supervisor", supervisor, "YAML file overriding the supervisor thresholds")
      ->check(CLI::ExistingFile);
  app.add_option("--questions", question_files, "YAML file of extra questions, merged into the bank (repeatable)")
      ->check(CLI::ExistingFile);

  std::string build_dir, ctest_args;
  std::optional<double> target;
  double target_value = 0;
  std::vector<std::string> ctest_rest;
  bool quiet = false, as_json = false, dry_run = false, elites = false;
  std::string note;
  auto add_gate_options = [&](CLI::App* sub) {
    sub->add_option("--build-dir", build_dir, "Configured build folder (default: <repo>/build/gpu)");
    sub->add_option("--ctest-args", ctest_args, "Extra ctest arguments, shell-quoted (or put them after --)");
  };

  auto* gate = app.add_subcommand("gate", "Build, run `ctest -L gate`, record the report; exit 0 pass, 1 fail, "
                                          "3 cannot run here (no configured build, no cmake/ctest, another gate "
                                          "holds the build folder, no GPU; nothing recorded); --dry-run: 10, 11");
  add_gate_options(gate);
  auto* target_opt = gate->add_option("--target", target_value,
                                      "Geomean target overriding scenarios/gate.yaml (passed as ATTNGATE_GEOMEAN_TARGET)")
                         ->check(CLI::PositiveNumber);
  gate->add_flag("--quiet", quiet, "Send build and ctest output to <build>/gate/attngate_gate.log");
  gate->add_flag("--json", as_json, "Print one JSON object (schema attngate.gate_result/1) on stdout, the text on stderr");
  gate->add_flag("--dry-run", dry_run, "Simulate the gate without a build or a GPU (exit 10 simulated pass, 11 "
                                       "simulated fail), recorded in the dry-run lineage");
  gate->add_option("--note", note, "What this version tries, stored with the evaluation in the lineage");
  gate->add_option("ctest_extra", ctest_rest, "Arguments after -- go to ctest");

  auto* history = app.add_subcommand("history", "The lineage as a table");
  history->add_flag("--elites", elites, "The best version per scenario group (head dim, causal, short/long) instead");
  history->add_flag("--dry-run", dry_run, "Read the dry-run lineage");
  int show_version = 0, diff_a = 0, diff_b = 0;
  auto* show = app.add_subcommand("show", "One evaluated version: its record, per-scenario speedups, signals, "
                                          "questions asked, note and where its source is kept");
  show->add_option("version", show_version, "Lineage version")->required();
  show->add_flag("--json", as_json, "One JSON object (schema attngate.show/1)");
  show->add_flag("--dry-run", dry_run, "Read the dry-run lineage");
  auto* diff = app.add_subcommand("diff", "Two evaluated versions compared: per-scenario speedups and their ratio, "
                                          "reasons and signals that differ, notes, a unified diff of their source");
  diff->add_option("a", diff_a, "Lineage version")->required();
  diff->add_option("b", diff_b, "Lineage version")->required();
  diff->add_flag("--json", as_json, "One JSON object (schema attngate.diff/1)");
  diff->add_flag("--dry-run", dry_run, "Read the dry-run lineage");
  auto* commit = app.add_subcommand("commit", "Commit the candidate folder if its latest evaluation is a signed gate "
                                              "run of it at HEAD that passed and beats the best committed version "
                                              "beyond noise");
  int commit_version = 0;
  commit->add_option("--version", commit_version,
                     "An earlier evaluation instead, if no later evaluation measured its tree or its candidate.cu "
                     "again and the folder holds that tree again")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));

  std::string trigger;
  std::string ask_report;
  auto* ask = app.add_subcommand("ask", "Print one question for a trigger (logged in the lineage)");
  ask->add_option("--trigger", trigger, "stall|cycle|limit|done|suspicious|regression|correctness|human")
      ->required()
      ->check(CLI::IsMember(all_triggers()));
  ask->add_option("--report", ask_report, "Report for the limit context and for choosing done/correctness questions (default: the latest evaluation)")
      ->check(CLI::ExistingFile);

  std::string record_report;
  auto* record = app.add_subcommand("record", "Append a lineage record from a report without running anything "
                                              "(for inspection: commit refuses it)");
  record->add_option("--report", record_report, "Gate report (report.json)")->required()->check(CLI::ExistingFile);
  record->add_option("--note", note, "What this version tries, stored with the evaluation in the lineage");

  ReportInputs report_in;
  bool prepare = false;
  std::string report_scenarios, results_dir, perf, out_dir, started_after, start_records;
  auto* report = app.add_subcommand(
      "report", "Judge the outcomes of a gate run (runs nothing) and write <out-dir>/report.json and report.md; "
                "exit 0 only on pass");
  report->add_option("--build-dir", build_dir, "Build folder the paths below default into (default: <repo>/build/gpu)");
  report->add_option("--suite", report_in.suite, "Suite judged (default gate)");
  report->add_option("--scenarios", report_scenarios, "Directory of the YAML suites (default: the shipped scenarios/)");
  report->add_option("--kernel", report_in.kernel, "Kernel under test (default: settings.candidate_kernel, else candidate)");
  report->add_option("--baseline", report_in.baseline, "Baseline kernel (default: settings.baseline_kernel, else initial)");
  report->add_option("--results-dir", results_dir, "Verify results (default: <build>/verify/results)");
  report->add_option("--perf", perf, "Performance comparison JSON (default: <out-dir>/performance.json)");
  report->add_option("--out-dir", out_dir, "Where report.json and report.md go (default: <build>/gate)");
  report->add_option("--started-after", started_after,
                     "Marker written when the gate started; older outcomes are stale (default: <out-dir>/started)");
  report->add_option("--start-records", start_records,
                     "The gate tests' start records, to tell a test that did not run from a crash or a timeout "
                     "(default: <results-dir>/started)");
  report->add_option("--verify-timeout", report_in.verify_timeout_s, "TIMEOUT of the verify tests, seconds");
  report->add_option("--perf-timeout", report_in.perf_timeout_s, "TIMEOUT of gate.performance, seconds");
  report->add_flag("--prepare", prepare,
                   "gate.setup: delete this suite's results of the kernel, the performance JSON and the report, "
                   "then write the marker");

  std::string plan_batches, plan_out;
  GateTools plan_tools;
  auto* plan = app.add_subcommand("plan", "Write the CTest script of the gate's own tests (gate.setup, gate.performance, "
                                          "gate.report) from verify's list of the gate's verify tests (the build runs it)");
  plan->add_option("--batches", plan_batches, "verify's list (attngate.gate_batches/1)")->required();
  plan->add_option("--out", plan_out, "The CTest script to write")->required();
  plan->add_option("--attngate", plan_tools.attngate, "This command's path, for gate.setup and gate.report")->required();
  plan->add_option("--bench", plan_tools.bench, "attngate_bench_judge, for gate.performance")->required();
  plan->add_option("--workers", plan_tools.workers_dir, "The folder of the attngate_worker_<library> binaries")->required();
  plan->add_option("--gate-build-dir", plan_tools.build_dir, "The build tree (<build>/gate holds the report)")->required();
  plan->add_option("--source-dir", plan_tools.source_dir, "The repository the report hashes")->required();

  ProfileOptions po;
  std::string profile_build;
  auto* prof = app.add_subcommand("profile", "One scenario's call of a kernel under Nsight Compute, in its own "
                                             "worker: a summary of at most 40 lines (or --json), the report kept");
  prof->add_option("--kernel", po.kernel, "Kernel to profile (default candidate)");
  prof->add_option("--compare", po.compare, "A second kernel, profiled in the same run, side by side (e.g. initial)");
  prof->add_option("--suite", po.suite, "Suite of --scenario (default gate)");
  prof->add_option("--scenario", po.scenario, "Scenario id");
  prof->add_option("--shape", po.shape, "An ad-hoc shape instead (b=4,sq=8192,hq=32,hkv=8,d=128,causal)");
  prof->add_option("--ncu", po.ncu, "Nsight Compute's ncu (default: on PATH, else /usr/local/cuda/bin/ncu)");
  prof->add_option("--build-dir", profile_build, "Configured build folder (default: <repo>/build/gpu)");
  prof->add_flag("--json", po.json, "Print the document (schema attngate.profile/1) instead of the summary");

  auto* stop_hook = app.add_subcommand("stop-hook", "Stop hook for agent runners: reads the runner's JSON on stdin, "
                                                    "runs the gate, exit 2 (refuse, reason on stderr) unless it passes");
  add_gate_options(stop_hook);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitError;
  }

  try {
    Context ctx = default_context(std::cout, std::cerr);
    if (!repo.empty()) {
      ctx.repo = fs::absolute(repo);
      ctx.lineage = ctx.repo / ".attngate" / "lineage.jsonl";
      ctx.candidate = ctx.repo / "kernels" / "candidate" / "candidate.cu";
      ctx.hooks_dir = default_hooks_dir(ctx.repo);
    }
    if (!lineage.empty()) ctx.lineage = fs::absolute(lineage);
    if (!candidate.empty()) ctx.candidate = fs::absolute(candidate);
    if (!supervisor.empty()) ctx.supervisor_file = fs::absolute(supervisor);
    for (const auto& q : question_files) ctx.question_files.push_back(fs::absolute(q));

    GateOptions go;
    if (!build_dir.empty()) go.build_dir = fs::absolute(build_dir);
    if (*target_opt) target = target_value;
    go.target = target;
    go.quiet = quiet;
    go.json = as_json;
    go.dry_run = dry_run;
    if (auto why = note_problem(note); !why.empty()) {
      std::cerr << "attngate: --note must be one line of at most 500 bytes of UTF-8 text: " << why << "\n";
      return kExitError;
    }
    go.note = note;
    auto words = split_words(ctest_args);
    if (!words) {
      std::cerr << "attngate: cannot split --ctest-args '" << ctest_args << "'\n";
      return kExitError;
    }
    go.ctest_args = *words;
    go.ctest_args.insert(go.ctest_args.end(), ctest_rest.begin(), ctest_rest.end());

    if (*gate) return cmd_gate(ctx, go);
    if (*plan) return cmd_plan(ctx, plan_batches, plan_out, plan_tools);
    if (*prof) {
      if (!profile_build.empty()) po.build_dir = fs::absolute(profile_build);
      return cmd_profile(ctx, po);
    }
    Context inspected = ctx;
    if (dry_run) inspected.lineage = dry_run_lineage(ctx.lineage);
    if (*history) return cmd_history(inspected, elites);
    if (*show) return cmd_show(inspected, show_version, as_json);
    if (*diff) return cmd_diff(inspected, diff_a, diff_b, as_json);
    if (*commit) return cmd_commit(ctx, commit_version);
    if (*ask) return cmd_ask(ctx, trigger, ask_report.empty() ? std::nullopt : std::optional<fs::path>(ask_report));
    if (*record) return cmd_record(ctx, record_report, note);
    if (*report) {
      report_in.scenarios_dir = report_scenarios.empty() ? fs::path{} : fs::absolute(report_scenarios);
      report_in.results_dir = results_dir.empty() ? fs::path{} : fs::absolute(results_dir);
      report_in.perf = perf.empty() ? fs::path{} : fs::absolute(perf);
      report_in.out_dir = out_dir.empty() ? fs::path{} : fs::absolute(out_dir);
      report_in.started_after = started_after.empty() ? fs::path{} : fs::absolute(started_after);
      report_in.start_records_dir = start_records.empty() ? fs::path{} : fs::absolute(start_records);
      return cmd_report(ctx, report_in, go.build_dir, prepare);
    }
    if (*stop_hook) {
      // Run by hand on a terminal there is no runner JSON to wait for.
      std::string input = ::isatty(0) ? std::string{} : std::string(std::istreambuf_iterator<char>(std::cin), {});
      return cmd_stop_hook(ctx, input, go);
    }
  } catch (const std::exception& e) {
    std::cerr << "attngate: " << e.what() << "\n";
    return kExitError;
  }
  return kExitError;
}
