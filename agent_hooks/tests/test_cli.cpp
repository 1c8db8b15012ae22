// The `attngate` executable as an agent sees it: exit codes and what it prints.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "attngate/hooks/commands.hpp"
#include "attngate/hooks/lineage.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

namespace fs = std::filesystem;

RunResult attngate(const test::Sandbox& sb, std::vector<std::string> args, const std::string& stdin_text = "") {
  args.insert(args.begin(), {ATTNGATE_EXE, "--repo", sb.dir.path().string()});
  if (stdin_text.empty()) return run_process(args);
  // run_process gives children /dev/null as stdin; a shell pipes the runner's JSON in instead.
  std::string cmd = "printf '%s' \"$0\" | \"$@\"";
  args.insert(args.begin(), {"bash", "-c", cmd, stdin_text});
  return run_process(args);
}

// The runner's Stop-hook JSON through its type: its two fields, unknown ones ignored, each field
// taken where it has its type, and anything unreadable as the defaults (a hook that blocked on bad
// input would trap the agent; one that lost stop_hook_active would re-run the gate on every stop).
TEST(Cli, StopHookInputIsReadThroughItsType) {
  StopHookInput in = parse_stop_hook_input(R"({"session_id": "s1", "stop_hook_active": true, "cwd": "/x"})");
  EXPECT_TRUE(in.stop_hook_active);
  EXPECT_EQ(in.session_id, "s1");
  in = parse_stop_hook_input(R"({"session_id": "s2"})");
  EXPECT_FALSE(in.stop_hook_active);
  EXPECT_EQ(in.session_id, "s2");
  for (const char* bad : {"", "not json", "[1, 2]", R"({"stop_hook_active": "yes", "session_id": 3})"}) {
    in = parse_stop_hook_input(bad);
    EXPECT_FALSE(in.stop_hook_active) << bad;
    EXPECT_EQ(in.session_id, "") << bad;
  }
  in = parse_stop_hook_input(R"({"stop_hook_active": true, "session_id": null})");  // one field mistyped
  EXPECT_TRUE(in.stop_hook_active);
  EXPECT_EQ(in.session_id, "");
}

TEST(Cli, RecordExitCodesAndHistory) {
  test::Sandbox sb(true);
  auto pass = test::write_report(sb.dir / "build" / "pass.json", test::report_json("pass", 1.03, 1.02, 1.04));
  auto fail = test::write_report(sb.dir / "build" / "fail.json",
                                 test::report_json("fail", 0.95, 0.94, 0.96, {{"gate_a"}}, {"GEOMEAN_BELOW_TARGET"}));

  auto r = attngate(sb, {"record", "--report", pass.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("attngate: PASS, version 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("geomean 1.030x, CI [1.020, 1.040]"), std::string::npos) << r.out;

  r = attngate(sb, {"record", "--report", fail.string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("attngate: FAIL, version 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reason GEOMEAN_BELOW_TARGET [gate_a]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("signal cycle/repeat"), std::string::npos) << r.out;  // same source as version 1
  EXPECT_NE(r.out.find("question (cycle): "), std::string::npos) << r.out;

  r = attngate(sb, {"history"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("version"), std::string::npos);
  EXPECT_NE(r.out.find("1.030x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pass"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0.950x"), std::string::npos) << r.out;
  // Recorded reports set no bar (only the gate's measurements do), so no regression against version 1.
  EXPECT_NE(r.out.find("cycle"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("regression"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(GEOMEAN_BELOW_TARGET)"), std::string::npos) << r.out;

  // Global options may also follow the subcommand.
  r = run_process({ATTNGATE_EXE, "history", "--lineage", sb.ctx.lineage.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0.950x"), std::string::npos) << r.out;
}

TEST(Cli, UsageAndInputErrorsExitTwo) {
  test::Sandbox sb(false);
  test::write_file(sb.dir / "bad.json", "{not json");
  auto r = attngate(sb, {"record", "--report", (sb.dir / "bad.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not JSON"), std::string::npos) << r.err;
  test::write_file(sb.dir / "schema.json", R"({"schema": "attngate.gate_report/2", "verdict": "pass"})");
  r = attngate(sb, {"record", "--report", (sb.dir / "schema.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unsupported schema"), std::string::npos) << r.err;
  EXPECT_EQ(attngate(sb, {"frobnicate"}).exit_code, 2);
  EXPECT_EQ(attngate(sb, {"ask", "--trigger", "bored"}).exit_code, 2);
  EXPECT_EQ(attngate(sb, {}).exit_code, 2);
  EXPECT_EQ(attngate(sb, {"--help"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(sb.ctx.lineage));
}

// The bank, the knowledge index and the thresholds come from --repo's agent_hooks/ when it has
// them, not from the checkout this binary was built from.
TEST(Cli, TheBankAndKnowledgeComeFromTheRepo) {
  test::Sandbox sb(false);
  const fs::path shipped = ATTNGATE_HOOKS_DIR_FOR_TESTS, mine = sb.dir / "agent_hooks";
  fs::create_directories(mine / "knowledge");
  std::string bank = test::slurp(shipped / "questions.yaml");
  const std::string from = "Is the kernel bound by memory traffic or by math?";
  ASSERT_NE(bank.find(from), std::string::npos);
  bank.replace(bank.find(from), from.size(), "Is this the repository's own bank?");
  test::write_file(mine / "questions.yaml", bank);
  fs::copy_file(shipped / "supervisor.yaml", mine / "supervisor.yaml");
  fs::copy_file(shipped / "knowledge" / "README.md", mine / "knowledge" / "README.md");
  auto r = attngate(sb, {"ask", "--trigger", "stall"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Is this the repository's own bank?"), std::string::npos) << r.out;
}

TEST(Cli, AskPrintsAQuestion) {
  test::Sandbox sb(false);
  auto r = attngate(sb, {"ask", "--trigger", "stall"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_NE(r.out.find('?'), std::string::npos) << r.out;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(Cli, AskCorrectnessAndDoneChooseByTheReport) {
  test::Sandbox sb(false);
  auto report = test::report_json("fail", 1.0, 0.99, 1.01, {{"gate_t", false}}, {"CORRECTNESS_FAILED"});
  report["reasons"][0]["scenarios"] = {"gate_t"};
  report["scenarios"][0]["shape"] = "b=1 sq=1000 sk=2000 hq=8 hkv=8 d=64 noncausal bf16";
  auto file = test::write_report(sb.dir / "r.json", report);
  auto r = attngate(sb, {"ask", "--trigger", "correctness", "--report", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nread: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chosen by: the failing scenarios share tail, seqlen_mismatch"), std::string::npos) << r.out;
  r = attngate(sb, {"ask", "--trigger", "done", "--report", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("chosen by: reason CORRECTNESS_FAILED"), std::string::npos) << r.out;
}

// `attngate gate` and the stop hook over the stand-in gate of test_util.hpp.
class FakeGate : public ::testing::Test {
 protected:
  test::Sandbox sb{/*with_git=*/true};
  test::FakeGate fake{sb};
  fs::path build = fake.build;

  void next_report(const nlohmann::json& j) { fake.next_report(j); }
  void no_report() { fake.no_report(); }
};

TEST_F(FakeGate, GateExitCodesFollowTheReport) {
  next_report(test::report_json("pass", 1.03, 1.02, 1.04));
  auto r = attngate(sb, {"gate", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // --quiet: the output goes to the log, and stderr says how far the gate is, stage by stage.
  EXPECT_NE(r.err.find("attngate: build done ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("attngate: report ("), std::string::npos) << "stderr: " << r.err;
  EXPECT_NE(r.out.find("attngate: PASS, version 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("report: " + (build / "gate" / "report.json").string()), std::string::npos) << r.out;

  next_report(test::report_json("fail", 0.93, 0.92, 0.94, {{"gate_a"}}, {"GEOMEAN_BELOW_TARGET"}));
  r = attngate(sb, {"gate", "--build-dir", build.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("reason GEOMEAN_BELOW_TARGET"), std::string::npos) << r.out;

  // No report from this run: the one left by the previous run must not be read.
  no_report();
  r = attngate(sb, {"gate", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("reason NO_REPORT: ctest -L gate exited 8 without writing"), std::string::npos) << r.out;

  // ctest arguments pass through: a filter that selects nothing is an error, not a pass.
  next_report(test::report_json("pass", 1.03, 1.02, 1.04));
  r = attngate(sb, {"gate", "--quiet", "--ctest-args=-R 'no such test'"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("NO_REPORT"), std::string::npos) << r.out;
  r = attngate(sb, {"gate", "--quiet", "--", "-R", "gate.(setup|fake)"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // A report written without this run's gate.setup (its marker is older than the run) is stale too.
  r = attngate(sb, {"gate", "--quiet", "--", "-R", "gate.fake"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("reason NO_REPORT: the report was not written after this run's gate.setup"), std::string::npos)
      << r.out;

  // A target the gate did not apply cannot pass.
  r = attngate(sb, {"gate", "--quiet", "--target", "1.5"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("TARGET_NOT_APPLIED"), std::string::npos) << r.out;

  auto c = Lineage(sb.ctx.lineage).read();
  ASSERT_EQ(c.records.size(), 7u);
  EXPECT_EQ(*c.records[2].ctest_exit, 8);
  EXPECT_EQ(c.records[0].source, "gate");
}

TEST_F(FakeGate, BuildFailureIsAFailingEvaluation) {
  next_report(test::report_json("pass", 1.03, 1.02, 1.04));
  fake.set("fail_build");
  auto r = attngate(sb, {"gate", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("reason BUILD_FAILED"), std::string::npos) << r.out;
  EXPECT_EQ(Lineage(sb.ctx.lineage).read().records.size(), 1u);
}

// (e) A gate that cannot run here says so with its own exit code, and the lineage does not count it
// as an evaluation of the candidate: no configured build, no cmake on PATH, no GPU.
TEST_F(FakeGate, EnvironmentFailuresExitThreeAndRecordNothing) {
  next_report(test::report_json("pass", 1.03, 1.02, 1.04));
  auto r = attngate(sb, {"gate", "--quiet", "--build-dir", (sb.dir / "nowhere").string()});
  EXPECT_EQ(r.exit_code, kExitEnvironment) << r.out << r.err;
  EXPECT_NE(r.err.find("environment failure: no configured build at"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing recorded in the lineage"), std::string::npos) << r.err;

  r = run_process({"env", "PATH=" + (sb.dir / "no-tools").string(), ATTNGATE_EXE, "--repo", sb.dir.path().string(),
                   "gate", "--quiet", "--build-dir", build.string()});
  EXPECT_EQ(r.exit_code, kExitEnvironment) << r.out << r.err;
  EXPECT_NE(r.err.find("cmake not found on PATH"), std::string::npos) << r.err;

  // What `attngate report` writes on a machine without a GPU.
  next_report(test::report_json("fail", 1.0, 1.0, 1.0, {{"gate_a"}}, {"TEST_SKIPPED", "NO_DEVICE", "NO_PERF"}));
  r = attngate(sb, {"gate", "--quiet"});
  EXPECT_EQ(r.exit_code, kExitEnvironment) << r.out << r.err;
  EXPECT_NE(r.err.find("NO_DEVICE"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(sb.ctx.lineage));

  // The stop hook refuses once with the reason, then lets the agent stop; nothing is recorded either.
  r = attngate(sb, {"stop-hook", "--build-dir", build.string()}, R"({"stop_hook_active": false})");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("the gate cannot run here"), std::string::npos) << r.err;
  r = attngate(sb, {"stop-hook", "--build-dir", build.string()}, R"({"stop_hook_active": true})");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(sb.ctx.lineage));
}

// (d) Two gate runs on one build folder would rebuild and clear each other's outcomes: the second
// one finds the first holding <build>/gate/.lock and exits 3, naming the lock and the holder's pid.
TEST_F(FakeGate, ASecondGateOnTheSameBuildFolderExitsThreeOnTheLock) {
  next_report(test::report_json("pass", 1.03, 1.02, 1.04));
  fake.set("hold");
  RunResult first;
  std::thread t([&] { first = attngate(sb, {"gate", "--quiet"}); });
  for (int i = 0; i < 600 && !fs::exists(fake.project / "entered"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(fake.project / "entered"));

  auto second = attngate(sb, {"gate", "--quiet"});
  fake.set("release");
  t.join();
  EXPECT_EQ(second.exit_code, kExitEnvironment) << second.out << second.err;
  const fs::path lock = build / "gate" / ".lock";
  std::string holder = test::slurp(lock);
  holder = holder.substr(0, holder.find('\n'));
  EXPECT_NE(second.err.find("another attngate gate holds the lock " + lock.string() + " (pid " + holder + ")"),
            std::string::npos)
      << second.err;
  EXPECT_EQ(first.exit_code, 0) << first.out << first.err;
  auto c = Lineage(sb.ctx.lineage).read();
  ASSERT_EQ(c.records.size(), 1u);  // the refused run is not an evaluation

  // Once the first has finished, the folder is free again.
  fake.unset("hold");
  EXPECT_EQ(attngate(sb, {"gate", "--quiet"}).exit_code, 0);
}

// When the supervisor asks for a human, the stop hook lets the agent stop (the gate still failing).
TEST_F(FakeGate, StopHookLetsTheAgentStopWhenTheSupervisorAsksForAHuman) {
  const fs::path sup = sb.dir / "build" / "sup.yaml";
  test::write_file(sup, "stall:\n  evaluations: 1\nredirect:\n  restart_after: 1\n  human_after: 1\n");
  next_report(test::report_json("pass", 1.2, 1.19, 1.21));
  auto r = attngate(sb, {"--supervisor", sup.string(), "gate", "--build-dir", build.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  next_report(test::report_json("fail", 0.95, 0.94, 0.96, {{"gate_a"}}, {"GEOMEAN_BELOW_TARGET"}));
  sb.set_candidate("// another try\n");
  r = attngate(sb, {"--supervisor", sup.string(), "stop-hook", "--build-dir", build.string()},
               R"({"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": false})");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("the supervisor asks for a human"), std::string::npos) << r.err;
}

TEST_F(FakeGate, StopHookRefusesWithADoneQuestionUntilTheGatePasses) {
  const std::string input = R"({"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": false})";
  const std::string again = R"({"session_id": "s1", "hook_event_name": "Stop", "stop_hook_active": true})";
  auto hook = [&](const std::string& json) {
    return attngate(sb, {"stop-hook", "--build-dir", build.string()}, json);
  };

  next_report(test::report_json("fail", 0.93, 0.92, 0.94, {{"gate_a"}}, {"GEOMEAN_BELOW_TARGET"}));
  auto r = hook(input);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("does not pass yet"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("question (done): "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gate output: "), std::string::npos) << r.err;

  // The runner retries after our refusal with nothing changed: let it stop rather than loop.
  r = hook(again);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("unchanged since version 1"), std::string::npos) << r.err;
  EXPECT_EQ(Lineage(sb.ctx.lineage).read().records.size(), 1u);

  // The agent changed the candidate: the gate runs again, and a pass lets it stop.
  sb.set_candidate("// faster\n");
  r = hook(again);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  next_report(test::report_json("pass", 1.03, 1.02, 1.04));
  sb.set_candidate("// faster still\n");
  r = hook(again);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS, version 3"), std::string::npos) << r.out;

  auto c = Lineage(sb.ctx.lineage).read();
  ASSERT_EQ(c.records.size(), 3u);
  EXPECT_EQ(c.records[0].source, "stop_hook");
  EXPECT_EQ(c.records[0].session, "s1");
  ASSERT_FALSE(c.records[0].questions.empty());
  EXPECT_EQ(c.records[0].questions.back().trigger, "done");
  EXPECT_NE(c.records[1].questions.back().id, c.records[0].questions.back().id);
  for (const auto& q : c.records[2].questions) EXPECT_NE(q.trigger, "done");
}

TEST_F(FakeGate, GateAndStopHookPrintExactlyOneQuestion) {
  auto wrong = test::report_json("fail", 0.93, 0.92, 0.94, {{"gate_a", false}}, {"CORRECTNESS_FAILED"});
  next_report(wrong);
  auto r = attngate(sb, {"gate", "--build-dir", build.string(), "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(count_of(r.out, "  question ("), 1u) << r.out;
  EXPECT_NE(r.out.find("question (correctness): "), std::string::npos) << r.out;

  // Same source again: a cycle signal beside the stop hook's done, still one question.
  next_report(test::report_json("fail", 0.93, 0.92, 0.94, {{"gate_a"}}, {"GEOMEAN_BELOW_TARGET"}));
  r = attngate(sb, {"stop-hook", "--build-dir", build.string()}, R"({"session_id": "s9", "stop_hook_active": false})");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("signal cycle/"), std::string::npos) << r.err;
  EXPECT_EQ(count_of(r.err, "  question ("), 1u) << r.err;
}

TEST_F(FakeGate, StopHookCapsRefusalsInASession) {
  next_report(test::report_json("fail", 0.93, 0.92, 0.94, {{"gate_a"}}, {"GEOMEAN_BELOW_TARGET"}));
  const std::string again = R"({"session_id": "s2", "stop_hook_active": true})";
  std::vector<std::string> cmd = {"env", "ATTNGATE_STOP_MAX_REFUSALS=2", ATTNGATE_EXE, "--repo", sb.dir.path().string(),
                                  "stop-hook", "--build-dir", build.string()};
  auto run = [&](int n) {
    sb.set_candidate("// attempt " + std::to_string(n) + "\n");
    std::vector<std::string> argv = {"bash", "-c", "printf '%s' \"$0\" | \"$@\"", again};
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    return run_process(argv);
  };
  EXPECT_EQ(run(1).exit_code, 2);
  EXPECT_EQ(run(2).exit_code, 2);
  auto r = run(3);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("refused 2 stops in a row"), std::string::npos) << r.err;
}

TEST_F(FakeGate, StopHookScriptWrapsTheCommand) {
  const std::string script = std::string(ATTNGATE_HOOKS_DIR_FOR_TESTS) + "/stop_hook.sh";
  auto run = [&](const std::string& json, const std::string& build_dir, const std::string& bin) {
    return run_process({"bash", "-c", "printf '%s' \"$0\" | \"$@\"", json, "env",
                        "CLAUDE_PROJECT_DIR=" + sb.dir.path().string(), "ATTNGATE_BUILD_DIR=" + build_dir,
                        "ATTNGATE_BIN=" + bin, "bash", script});
  };
  next_report(test::report_json("fail", 0.93, 0.92, 0.94, {{"gate_a"}}, {"GEOMEAN_BELOW_TARGET"}));
  auto r = run(R"({"stop_hook_active": false})", build.string(), ATTNGATE_EXE);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("question (done): "), std::string::npos) << r.err;
  next_report(test::report_json("pass", 1.03, 1.02, 1.04));
  sb.set_candidate("// better\n");
  r = run(R"({"stop_hook_active": false})", build.string(), ATTNGATE_EXE);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;

  // Without a configured build the hook says how to make one, and does not trap the agent on retry.
  const std::string nowhere = (sb.dir / "unconfigured").string();
  r = run(R"({"stop_hook_active": false})", nowhere, nowhere + "/agent_hooks/attngate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no configured build"), std::string::npos) << r.err;
  r = run(R"({"stop_hook_active": true})", nowhere, nowhere + "/agent_hooks/attngate");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace attngate::hooks
