// `attngate commit`: what it accepts (a signed, passing gate run of the candidate folder as it is,
// at HEAD, on this machine, beating the committed best) and the ways around that it refuses.
#include <functional>

#include <gtest/gtest.h>

#include "attngate/gate/candidate_tree.hpp"
#include "attngate/hooks/commands.hpp"
#include "attngate/gate/digest.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::git;

class Commit : public ::testing::Test {
 protected:
  test::Sandbox sb{/*with_git=*/true};
  test::FakeGate fake{sb};

  // One gate run (build, ctest, report) on the current candidate folder.
  int gate(const json& report) {
    fake.next_report(report);
    sb.clear_streams();
    return cmd_gate(sb.ctx, fake.options());
  }
  static json report(const std::string& verdict, double geomean, double ci_low, std::vector<std::string> reasons = {},
                     std::vector<test::ScenarioSpec> scenarios = {{"gate_a"}}) {
    return test::report_json(verdict, geomean, ci_low, geomean + (geomean - ci_low), std::move(scenarios),
                             std::move(reasons));
  }
  int gate_pass(double geomean, double ci_low) { return gate(report("pass", geomean, ci_low)); }
  int commit(int version = 0) {
    sb.clear_streams();
    return cmd_commit(sb.ctx, version);
  }
  std::string refusal() const { return sb.err.str(); }
  std::string status() { return git(sb.dir.path(), {"status", "--porcelain"}).out; }
  std::string last_message() { return git(sb.dir.path(), {"log", "-1", "--format=%B"}).out; }
  std::string committed_files() { return git(sb.dir.path(), {"show", "--name-only", "--format=", "HEAD"}).out; }
  // Rewrites the lineage's last line, as an agent editing .attngate/lineage.jsonl would.
  void edit_last_record(const std::function<void(json&)>& edit) {
    std::string text = test::slurp(sb.ctx.lineage);
    text.pop_back();
    auto cut = text.rfind('\n');
    std::string head = cut == std::string::npos ? "" : text.substr(0, cut + 1);
    json last = json::parse(text.substr(cut == std::string::npos ? 0 : cut + 1));
    edit(last);
    test::write_file(sb.ctx.lineage, head + last.dump() + "\n");
  }
  // Asserts a refusal that names `why` and leaves HEAD where it was.
  void expect_refused(const std::string& why) { expect_refused_version(0, why); }
  void expect_refused_version(int version, const std::string& why) {
    auto head = sb.head();
    EXPECT_EQ(commit(version), kExitFail);
    EXPECT_NE(refusal().find(why), std::string::npos) << refusal();
    EXPECT_EQ(sb.head(), head);
  }
};

TEST_F(Commit, RefusedWithoutAnEvaluation) { expect_refused("no evaluation"); }

TEST_F(Commit, RefusedWhenTheGateFailed) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate(report("fail", 1.2, 1.1, {"CORRECTNESS_FAILED"})), kExitFail);
  auto before = status();
  expect_refused("version 1 failed the gate (CORRECTNESS_FAILED)");
  EXPECT_EQ(status(), before);
}

TEST_F(Commit, RefusedWhenNotBetterThanTheBaselineBeyondNoise) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_pass(1.01, 0.995), kExitPass);  // passes a 0.97 target, but is noise against 1.0
  expect_refused("does not clear the baseline itself");
}

TEST_F(Commit, CommitsTheWholeFolderAndThenRequiresBeatingTheCommittedBest) {
  // Something else staged must stay staged and out of the commit.
  test::write_file(sb.dir / "notes.txt", "unrelated\n");
  git(sb.dir.path(), {"add", "notes.txt"});

  sb.set_candidate("// v1 faster\n#include \"tile.cuh\"\n");
  test::write_file(sb.dir / "kernels" / "candidate" / "tile.cuh", "// tiles\n");
  EXPECT_EQ(gate_pass(1.05, 1.03), kExitPass) << sb.out.str() << sb.err.str();
  auto head = sb.head();
  ASSERT_EQ(commit(), kExitPass) << refusal();
  EXPECT_NE(sb.head(), head);
  auto msg = last_message();
  EXPECT_NE(msg.find("attngate version 1, geomean 1.050x (CI 1.030-1.070)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Attngate-Geomean: 1.05"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Attngate-Candidate-Tree-Sha256: " + candidate_tree_sha256(candidate_dir(sb.ctx))),
            std::string::npos)
      << msg;
  EXPECT_EQ(committed_files(), "kernels/candidate/candidate.cu\nkernels/candidate/tile.cuh\n");
  EXPECT_EQ(status(), "A  notes.txt\n");

  // The commit moved HEAD, so version 1 no longer describes HEAD; measured again, it is unchanged.
  expect_refused("git HEAD moved since version 1 was measured");
  EXPECT_EQ(gate_pass(1.2, 1.1), kExitPass);
  expect_refused("the candidate folder kernels/candidate is unchanged since HEAD");

  // Version 3's CI lower bound (1.04) does not clear the committed 1.05.
  sb.set_candidate("// v2\n");
  EXPECT_EQ(gate_pass(1.06, 1.04), kExitPass);
  expect_refused("does not clear the best committed version (1.050x");

  // Version 4 clears it; deleting a file of the folder is part of the commit.
  sb.set_candidate("// v3\n");
  fs::remove(sb.dir / "kernels" / "candidate" / "tile.cuh");
  EXPECT_EQ(gate_pass(1.10, 1.07), kExitPass);
  ASSERT_EQ(commit(), kExitPass) << refusal();
  EXPECT_NE(last_message().find("attngate version 4"), std::string::npos);
  EXPECT_NE(sb.out.str().find("committed kernels/candidate as version 4"), std::string::npos) << sb.out.str();
  EXPECT_EQ(committed_files(), "kernels/candidate/candidate.cu\nkernels/candidate/tile.cuh\n");
  EXPECT_EQ(status(), "A  notes.txt\n");
}

// Session 15: a script gated several versions in one device call and wanted the best, not the last.
TEST_F(Commit, CommitsAnEarlierVersionWhoseTreeTheFolderHoldsAgain) {
  sb.set_candidate("// v1: the best\n");
  EXPECT_EQ(gate_pass(1.30, 1.25), kExitPass);
  sb.set_candidate("// v2: slower\n");
  EXPECT_EQ(gate_pass(1.10, 1.05), kExitPass);
  auto head = sb.head();
  EXPECT_EQ(commit(7), kExitFail);
  EXPECT_NE(refusal().find("no evaluation with version 7"), std::string::npos) << refusal();
  // The folder holds v2: version 1's tree is not what would be committed.
  expect_refused_version(1, "changed since version 1 was evaluated");
  sb.set_candidate("// v1: the best\n");
  ASSERT_EQ(commit(1), kExitPass) << refusal();
  EXPECT_NE(sb.head(), head);
  EXPECT_NE(last_message().find("attngate version 1, geomean 1.300x"), std::string::npos) << last_message();
}

TEST_F(Commit, RefusesAnEarlierVersionWhoseTreeWasMeasuredAgain) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_pass(1.30, 1.25), kExitPass);
  EXPECT_EQ(gate_pass(1.12, 1.08), kExitPass);  // the same tree, measured again: this one counts
  expect_refused_version(1, "version 1 is not the latest evaluation of its code: version 2 measured the same tree");
  // A file added beside the source changes the tree, not candidate.cu: still the same source.
  test::write_file(sb.dir / "kernels" / "candidate" / "junk.txt", "x\n");
  EXPECT_EQ(gate_pass(1.11, 1.07), kExitPass);
  fs::remove(sb.dir / "kernels" / "candidate" / "junk.txt");
  expect_refused_version(2, "version 2 is not the latest evaluation of its code: version 3 measured the same tree or "
                            "candidate source again");
  test::write_file(sb.dir / "kernels" / "candidate" / "junk.txt", "x\n");
  ASSERT_EQ(commit(3), kExitPass) << refusal();
  EXPECT_NE(last_message().find("attngate version 3, geomean 1.110x"), std::string::npos) << last_message();
}

TEST_F(Commit, CommitsTheLatestOfTheSameTreeByVersion) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_pass(1.30, 1.25), kExitPass);
  EXPECT_EQ(gate_pass(1.12, 1.08), kExitPass);
  ASSERT_EQ(commit(2), kExitPass) << refusal();
  EXPECT_NE(last_message().find("attngate version 2, geomean 1.120x"), std::string::npos) << last_message();
}

TEST_F(Commit, CommitsAnUntrackedCandidate) {
  git(sb.dir.path(), {"rm", "-q", "--cached", "kernels/candidate/candidate.cu"});
  git(sb.dir.path(), {"commit", "-q", "-m", "untrack"});
  sb.set_candidate("// new\n");
  EXPECT_EQ(gate_pass(1.2, 1.1), kExitPass);
  ASSERT_EQ(commit(), kExitPass) << refusal();
  EXPECT_EQ(status(), "");
}

// (a) The commit race: an edit made while the gate builds and measures is not credited with the
// measured speed. The gate hashes the folder before building and again after ctest.
TEST_F(Commit, AnEditDuringTheGateRunFailsItWithCandidateChanged) {
  sb.set_candidate("// v1, the source that will be measured\n");
  fake.set("edit_candidate", "// v2, swapped in while the gate ran\n");
  EXPECT_EQ(gate_pass(1.19, 1.15), kExitFail);
  EXPECT_NE(sb.out.str().find("reason CANDIDATE_CHANGED: kernels/candidate changed during the gate run "
                              "(candidate.cu changed)"),
            std::string::npos)
      << sb.out.str();
  expect_refused("kernels/candidate changed since version 1 was evaluated");
  sb.set_candidate("// v1, the source that will be measured\n");  // back to the tree hashed before the build
  expect_refused("version 1 failed the gate (CANDIDATE_CHANGED)");
}

// ... and the built binaries name the tree they were built from (the report's
// provenance.candidate_tree_sha256_built): an edit between the hash and the build shows there.
TEST_F(Commit, BinariesBuiltFromAnotherTreeFailWithCandidateChanged) {
  sb.set_candidate("// v1\n");
  json r = report("pass", 1.19, 1.15);
  r["provenance"]["candidate_tree_sha256_built"] = std::string(64, '0');
  EXPECT_EQ(gate(r), kExitFail);
  EXPECT_NE(sb.out.str().find("reason CANDIDATE_CHANGED: the measured binaries were built from kernels/candidate "
                              "tree 000000000000"),
            std::string::npos)
      << sb.out.str();
  expect_refused("CANDIDATE_CHANGED");

  r["provenance"]["candidate_tree_sha256_built"] = candidate_tree_sha256(candidate_dir(sb.ctx));
  EXPECT_EQ(gate(r), kExitPass) << sb.out.str();
  ASSERT_EQ(commit(), kExitPass) << refusal();
}

// (a) An edit after the gate, in any file of the folder, makes the evaluation stale.
TEST_F(Commit, AnEditAfterTheGateIsRefused) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_pass(1.2, 1.1), kExitPass);
  test::write_file(sb.dir / "kernels" / "candidate" / "extra.cuh", "// added after the gate\n");
  expect_refused("kernels/candidate changed since version 1 was evaluated");
  fs::remove(sb.dir / "kernels" / "candidate" / "extra.cuh");
  sb.set_candidate("// v1 edited\n");
  expect_refused("kernels/candidate changed since version 1 was evaluated");
}

TEST_F(Commit, RefusedWhenHeadMovedSinceTheGate) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_pass(1.2, 1.1), kExitPass);
  test::write_file(sb.dir / "verify" / "loosened.cpp", "// a harness change\n");
  git(sb.dir.path(), {"add", "verify/loosened.cpp"});
  git(sb.dir.path(), {"commit", "-q", "-m", "loosen"});
  expect_refused("git HEAD moved since version 1 was measured");
}

// (b) Forgery: `attngate record` of a hand-made passing report is for inspection only.
TEST_F(Commit, ARecordedReportIsNotCommitted) {
  sb.set_candidate("// v1\n");
  auto file = test::write_report(sb.dir / "build" / "forged.json", report("pass", 1.5, 1.4));
  EXPECT_EQ(cmd_record(sb.ctx, file), kExitPass);
  EXPECT_NE(sb.out.str().find("recorded for inspection (source record)"), std::string::npos) << sb.out.str();
  expect_refused("version 1 was recorded by `attngate record`, not measured by a gate run");

  // Hand-editing the line to claim a gate run does not give it a receipt.
  edit_last_record([](json& r) { r["source"] = "gate"; });
  expect_refused("version 1 carries no gate receipt");
}

// (b) Forgery: a real gate record edited by hand no longer matches its receipt.
TEST_F(Commit, AnEditedGateRecordIsRefused) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate(report("fail", 0.95, 0.93, {"GEOMEAN_BELOW_TARGET"})), kExitFail);
  edit_last_record([](json& r) {
    r["verdict"] = "pass";
    r["reasons"] = json::array();
    r["geomean"] = {{"speedup", 1.5}, {"ci_low", 1.4}, {"ci_high", 1.6}};
  });
  expect_refused("the receipt of version 1 does not match its record");

  // Any signed field changed breaks it, here the version of a genuine pass.
  EXPECT_EQ(gate_pass(1.2, 1.1), kExitPass);
  edit_last_record([](json& r) { r["version"] = 3; });
  expect_refused("the receipt of version 3 does not match its record");
}

// attngate.receipt/2: what the agent reads besides the verdict is signed too.
TEST_F(Commit, AnEditedNoteOrScenarioBreaksTheReceipt) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_pass(1.2, 1.1), kExitPass);
  edit_last_record([](json& r) { r["note"] = "tried nothing"; });
  expect_refused("the receipt of version 1 does not match its record");

  sb.set_candidate("// v2\n");
  EXPECT_EQ(gate_pass(1.2, 1.1), kExitPass);
  edit_last_record([](json& r) {
    ASSERT_FALSE(r["scenarios"].empty());
    r["scenarios"][0]["speedup"] = 9.0;
  });
  expect_refused("the receipt of version 2 does not match its record");

  sb.set_candidate("// v3\n");
  EXPECT_EQ(gate_pass(1.2, 1.1), kExitPass);
  edit_last_record([](json& r) { r["dry_run"] = true; });
  expect_refused("version 3");
}

// (c) A report that passes on its face but says the speed is physically impossible.
TEST_F(Commit, AnImplausibleReportIsRefused) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate(report("pass", 1.3, 1.2, {"IMPLAUSIBLE"})), kExitPass);
  expect_refused("version 1 is IMPLAUSIBLE");
}

// (c) Above the device's peak: a measurement artefact, not a faster kernel.
TEST_F(Commit, AnAbovePeakVersionIsRefused) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate(report("pass", 1.3, 1.2, {}, {{"gate_a", true, 1.3, 130.0}})), kExitPass);
  EXPECT_NE(sb.out.str().find("signal suspicious/above_peak"), std::string::npos) << sb.out.str();
  // Re-measured like any suspicious gain, and confirmed, but never committed.
  EXPECT_EQ(fake.ctest_runs(), 2);
  EXPECT_NE(sb.out.str().find("re-measured the suspicious gain (above_peak) with fresh seeds: confirmed"),
            std::string::npos)
      << sb.out.str();
  expect_refused("version 1 ran above the device's peak");
}

// A gain beyond the supervisor's suspicious factor passes only after the gate ran ctest again (fresh
// seeds, fresh workers) and the second report agrees with the first.
class SuspiciousGain : public Commit {
 protected:
  fs::path gate_dir() const { return fake.build / "gate"; }
  json recorded_report() const { return json::parse(test::slurp(gate_dir() / "report.json")); }
  Record last_record() const { return *Lineage(sb.ctx.lineage).read().last_evaluation(); }
  // Gates a 1.8x gain (1.8x the baseline in one step: the step signal) whose re-run reports `second`.
  int gate_step(const json& second) {
    fake.next_report(report("pass", 1.8, 1.7));
    fake.then_report(second);
    sb.clear_streams();
    return cmd_gate(sb.ctx, fake.options());
  }
};

TEST_F(SuspiciousGain, ANonSuspiciousPassRunsCtestOnce) {
  sb.set_candidate("// v1\n");
  fake.then_report(report("fail", 0.5, 0.4, {"CORRECTNESS_FAILED"}));  // would fail, were it run
  EXPECT_EQ(gate_pass(1.05, 1.03), kExitPass);
  EXPECT_EQ(fake.ctest_runs(), 1);
  EXPECT_EQ(sb.out.str().find("re-measured"), std::string::npos) << sb.out.str();
  EXPECT_FALSE(fs::exists(gate_dir() / "report.confirm.json"));
  EXPECT_FALSE(recorded_report().contains("suspicious_confirmed"));
  EXPECT_FALSE(last_record().suspicious_confirmed);
  ASSERT_EQ(commit(), kExitPass) << refusal();
}

TEST_F(SuspiciousGain, ConfirmedByTheReRunItIsRecordedAndCommitted) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_step(report("pass", 1.75, 1.66)), kExitPass) << sb.out.str() << sb.err.str();
  EXPECT_EQ(fake.ctest_runs(), 2);
  EXPECT_NE(sb.out.str().find("attngate: re-measured the suspicious gain (step) with fresh seeds: confirmed, "
                              "geomean 1.750x CI [1.660, 1.840] overlaps the first run's 1.800x CI [1.700, 1.900]"),
            std::string::npos)
      << sb.out.str();

  // The recorded report is the first run's with the confirmation added; the second is kept beside it.
  const std::string recorded = test::slurp(gate_dir() / "report.json");
  const json j = json::parse(recorded);
  EXPECT_EQ(j["geomean"]["speedup"], 1.8);
  EXPECT_EQ(j["suspicious_confirmed"], true);
  EXPECT_EQ(j["confirmation"]["geomean"], 1.75);
  EXPECT_EQ(j["confirmation"]["ci_low"], 1.66);
  EXPECT_NEAR(j["confirmation"]["ci_high"].get<double>(), 1.84, 1e-12);
  EXPECT_EQ(j["confirmation"]["report_sha256"], sha256_hex(test::slurp(gate_dir() / "report.confirm.json")));
  EXPECT_EQ(json::parse(test::slurp(gate_dir() / "report.confirm.json"))["geomean"]["speedup"], 1.75);

  // ... and signed: the receipt holds the hash of those bytes and covers suspicious_confirmed.
  const Record r = last_record();
  EXPECT_TRUE(r.suspicious_confirmed);
  EXPECT_EQ(r.verdict, "pass");
  ASSERT_TRUE(r.receipt);
  EXPECT_EQ(r.receipt->report_sha256, sha256_hex(recorded));
  EXPECT_EQ(r.report, (gate_dir() / "report.json").string());
  ASSERT_EQ(commit(), kExitPass) << refusal();
}

TEST_F(SuspiciousGain, AReRunOutsideTheIntervalFailsItAsUnconfirmed) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_step(report("pass", 1.3, 1.25)), kExitFail);
  EXPECT_EQ(fake.ctest_runs(), 2);
  EXPECT_NE(sb.out.str().find("re-measured the suspicious gain (step) with fresh seeds: NOT confirmed"),
            std::string::npos)
      << sb.out.str();
  EXPECT_NE(sb.out.str().find("reason SUSPICIOUS_UNCONFIRMED: the re-run with fresh seeds measured geomean 1.300x "
                              "CI [1.250, 1.350], the first run 1.800x CI [1.700, 1.900]: the 95% intervals lie "
                              "more than 1.0% apart (suspicious.confirm_gap)"),
            std::string::npos)
      << sb.out.str();
  const Record r = last_record();
  EXPECT_EQ(r.verdict, "fail");
  EXPECT_FALSE(r.suspicious_confirmed);
  EXPECT_EQ(recorded_report()["suspicious_confirmed"], false);
  EXPECT_EQ(recorded_report()["confirmation"]["geomean"], 1.3);
  expect_refused("version 1 failed the gate (SUSPICIOUS_UNCONFIRMED)");

  // A report cannot confirm itself: its own "suspicious_confirmed" is not what the gate records.
  json self_confirmed = report("pass", 1.8, 1.7);
  self_confirmed["suspicious_confirmed"] = true;
  fake.next_report(self_confirmed);
  fake.then_report(report("pass", 1.3, 1.25));
  EXPECT_EQ(cmd_gate(sb.ctx, fake.options()), kExitFail);
  EXPECT_FALSE(last_record().suspicious_confirmed);
  expect_refused("version 2 failed the gate (SUSPICIOUS_UNCONFIRMED)");
}

// Two honest gate runs differ by more than their intervals' width (v6 on the H200, 2026-12-03:
// [1.713, 1.717] then [1.722, 1.726]); the shipped confirm_gap (1 %) lets such a re-run confirm.
TEST_F(SuspiciousGain, AReRunJustBeyondTheIntervalConfirmsWithinTheGap) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_step(report("pass", 1.92, 1.915)), kExitPass) << sb.out.str();  // 1.915 <= 1.9 * 1.01
  EXPECT_NE(sb.out.str().find("confirmed, geomean 1.920x CI [1.915, 1.925] lies within suspicious.confirm_gap (1.0%) "
                              "of the first run's 1.800x CI [1.700, 1.900]"),
            std::string::npos)
      << sb.out.str();
  EXPECT_TRUE(last_record().suspicious_confirmed);
  sb.set_candidate("// v2\n");
  EXPECT_EQ(gate_step(report("pass", 1.94, 1.93)), kExitFail);  // 1.93 > 1.919
  EXPECT_NE(sb.out.str().find("lie more than 1.0% apart (suspicious.confirm_gap)"), std::string::npos) << sb.out.str();
  // A re-run below the first run's interval is judged the same way (the fluke's direction).
  sb.set_candidate("// v3\n");
  fake.next_report(report("pass", 1.8, 1.7));
  fake.then_report(report("pass", 1.66, 1.63));  // top 1.69: no overlap, but 1.70 <= 1.69 * 1.01
  sb.clear_streams();
  EXPECT_EQ(cmd_gate(sb.ctx, fake.options()), kExitPass) << sb.out.str();
  sb.set_candidate("// v4\n");
  fake.next_report(report("pass", 1.8, 1.7));
  fake.then_report(report("pass", 1.64, 1.6));  // top 1.68: 1.70 <= 1.68 * 1.01 = 1.6968 fails
  sb.clear_streams();
  EXPECT_EQ(cmd_gate(sb.ctx, fake.options()), kExitFail) << sb.out.str();
  // An agent's own supervisor file may narrow the gap, never widen it.
  test::write_file(sb.dir / "build" / "loose.yaml", "suspicious:\n  confirm_gap: 0.5\n");
  sb.ctx.supervisor_file = sb.dir / "build" / "loose.yaml";
  EXPECT_DOUBLE_EQ(load_supervisor(sb.ctx).suspicious.confirm_gap, 0.01);
  test::write_file(sb.dir / "build" / "narrow.yaml", "suspicious:\n  confirm_gap: 0\n");
  sb.ctx.supervisor_file = sb.dir / "build" / "narrow.yaml";
  sb.set_candidate("// v5\n");
  EXPECT_EQ(gate_step(report("pass", 1.92, 1.915)), kExitFail);  // confirmed above with the shipped gap
  // A NaN or negative gap is refused when the file is read.
  test::write_file(sb.dir / "build" / "nan.yaml", "suspicious:\n  confirm_gap: .nan\n");
  sb.ctx.supervisor_file = sb.dir / "build" / "nan.yaml";
  EXPECT_THROW(load_supervisor(sb.ctx), std::runtime_error);
  test::write_file(sb.dir / "build" / "neg.yaml", "suspicious:\n  confirm_gap: -1\n");
  sb.ctx.supervisor_file = sb.dir / "build" / "neg.yaml";
  EXPECT_THROW(load_supervisor(sb.ctx), std::runtime_error);
}

TEST_F(SuspiciousGain, AFailingReRunFailsItAsUnconfirmed) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_step(report("fail", 1.8, 1.7, {"CORRECTNESS_FAILED"})), kExitFail);
  EXPECT_NE(sb.out.str().find("reason SUSPICIOUS_UNCONFIRMED: the re-run with fresh seeds failed "
                              "(CORRECTNESS_FAILED): synthetic"),
            std::string::npos)
      << sb.out.str();
  expect_refused("version 1 failed the gate (SUSPICIOUS_UNCONFIRMED)");

  // No report at all from the re-run (a crash) confirms nothing either.
  fake.next_report(report("pass", 1.8, 1.7));
  test::write_file(fake.project / "report_2.json", "");  // exists, so run 2 does not fall back; not a report
  sb.clear_streams();
  EXPECT_EQ(cmd_gate(sb.ctx, fake.options()), kExitFail);
  EXPECT_NE(sb.out.str().find("reason SUSPICIOUS_UNCONFIRMED: the re-run with fresh seeds failed (NO_REPORT"),
            std::string::npos)
      << sb.out.str();
}

// The tree hash covers the re-run: an edit made while it runs fails the gate.
TEST_F(SuspiciousGain, AnEditDuringTheReRunFailsItWithCandidateChanged) {
  sb.set_candidate("// v1\n");
  fake.set("edit_candidate_2", "// v2, swapped in during the re-run\n");
  EXPECT_EQ(gate_step(report("pass", 1.8, 1.7)), kExitFail);
  EXPECT_NE(sb.out.str().find("reason CANDIDATE_CHANGED: kernels/candidate changed during the gate run "
                              "(candidate.cu changed)"),
            std::string::npos)
      << sb.out.str();
  EXPECT_NE(sb.out.str().find("after the confirming ctest run"), std::string::npos) << sb.out.str();
  EXPECT_NE(sb.out.str().find("reason SUSPICIOUS_UNCONFIRMED: the re-run with fresh seeds failed (CANDIDATE_CHANGED)"),
            std::string::npos)
      << sb.out.str();
  EXPECT_FALSE(last_record().suspicious_confirmed);
  sb.set_candidate("// v1\n");
  expect_refused("version 1 failed the gate (CANDIDATE_CHANGED, SUSPICIOUS_UNCONFIRMED)");
}

// A second gate run of the same tree has no step signal (the best so far is that tree), but the step
// over the committed bar calls for the re-run all the same, so it can be confirmed again.
TEST_F(SuspiciousGain, ASecondRunOfTheSameTreeIsReMeasuredAgainstTheCommitBar) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_step(report("pass", 1.8, 1.7)), kExitPass);
  EXPECT_EQ(gate_step(report("pass", 1.8, 1.7)), kExitPass);
  EXPECT_EQ(fake.ctest_runs(), 2);
  for (const auto& s : last_record().signals) EXPECT_NE(s.kind, "step") << s.detail;
  EXPECT_NE(sb.out.str().find("re-measured the suspicious gain (step) with fresh seeds: confirmed"), std::string::npos)
      << sb.out.str();
  ASSERT_EQ(commit(), kExitPass) << refusal();
}

// A lineage begun afresh (a new checkout) measures the step from the commits `attngate commit`
// made on this machine, whose receipts its key verifies: session 15's v4d (1.619x after a committed
// 1.553x) no longer reads as a step of 1.62x and costs no re-run.
TEST_F(SuspiciousGain, ANewLineageMeasuresTheStepFromAVerifiedCommit) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_step(report("pass", 1.75, 1.66)), kExitPass);
  ASSERT_EQ(commit(), kExitPass) << refusal();
  EXPECT_NE(last_message().find("\nAttngate-Receipt: "), std::string::npos) << last_message();
  fs::remove(sb.ctx.lineage);
  sb.set_candidate("// v2\n");
  fake.then_report(report("fail", 0.5, 0.4, {"CORRECTNESS_FAILED"}));  // would fail, were it run
  EXPECT_EQ(gate_pass(1.9, 1.85), kExitPass) << sb.out.str() << sb.err.str();
  EXPECT_EQ(fake.ctest_runs(), 1);
  for (const auto& s : last_record().signals) EXPECT_NE(s.kind, "step") << s.detail;
  ASSERT_EQ(commit(), kExitPass) << refusal();
}

// A commit whose trailers were written by hand (a made-up receipt, or none, as commits before
// attngate.commit_receipt/1 have) does not raise the step's bar: it would switch the confirming
// re-run off. commit's own bar still reads it (a higher bar only refuses more).
TEST_F(SuspiciousGain, AHandMadeTrailerDoesNotRaiseTheStepBar) {
  for (const std::string& receipt : {std::string(64, '0'), std::string()}) {
    SCOPED_TRACE("receipt '" + receipt + "'");
    const std::string forged = "candidate: faster\n\nAttngate-Version: 1\nAttngate-Geomean: 1.8\nAttngate-CI: 1.7 1.9\n"
                               "Attngate-Baseline: initial\n" +
                               (receipt.empty() ? "" : "Attngate-Receipt: " + receipt + "\n");
    ASSERT_EQ(git(sb.dir.path(), {"commit", "-q", "--allow-empty", "-m", forged}).exit_code, 0);
    fs::remove(sb.ctx.lineage);
    sb.set_candidate("// v1 " + receipt + "\n");
    EXPECT_EQ(gate_step(report("pass", 1.75, 1.66)), kExitPass);
    EXPECT_EQ(fake.ctest_runs(), 2);
    EXPECT_NE(sb.out.str().find("re-measured the suspicious gain (step)"), std::string::npos) << sb.out.str();
    expect_refused("does not clear the best committed version (1.800x");
  }
}

// A genuine receipt copied onto a commit of another candidate folder does not count either: the
// folder's tree must be the one the receipt signed.
TEST_F(SuspiciousGain, AGenuineReceiptOnAnotherFolderDoesNotCount) {
  const std::string start = sb.head();
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate_step(report("pass", 1.75, 1.66)), kExitPass);
  ASSERT_EQ(commit(), kExitPass) << refusal();
  const std::string genuine = last_message();
  ASSERT_EQ(git(sb.dir.path(), {"reset", "-q", "--hard", start}).exit_code, 0);
  sb.set_candidate("// something else\n");
  ASSERT_EQ(git(sb.dir.path(), {"add", "-A", "kernels/candidate"}).exit_code, 0);
  ASSERT_EQ(git(sb.dir.path(), {"commit", "-q", "-m", genuine}).exit_code, 0);
  fs::remove(sb.ctx.lineage);
  sb.set_candidate("// v2\n");
  EXPECT_EQ(gate_step(report("pass", 1.75, 1.66)), kExitPass);
  EXPECT_EQ(fake.ctest_runs(), 2);
  EXPECT_NE(sb.out.str().find("re-measured the suspicious gain (step)"), std::string::npos) << sb.out.str();
}

// The agent's own supervisor file cannot loosen the step threshold: the gate re-measures a 1.8x
// gain with a file that says 2.0, and so does commit's check.
TEST_F(SuspiciousGain, ALooserSupervisorFileCannotSkipTheReMeasurement) {
  sb.set_candidate("// v1\n");
  test::write_file(sb.dir / "build" / "loose.yaml", "suspicious:\n  step_speedup: 2.0\n");
  sb.ctx.supervisor_file = sb.dir / "build" / "loose.yaml";
  EXPECT_EQ(gate_step(report("pass", 1.8, 1.7)), kExitPass);
  EXPECT_EQ(fake.ctest_runs(), 2);
  EXPECT_NE(sb.out.str().find("re-measured the suspicious gain"), std::string::npos) << sb.out.str();
  EXPECT_DOUBLE_EQ(load_supervisor(sb.ctx).suspicious.step_speedup, 1.5);
}


TEST_F(Commit, HistoryNamesTheQuestionsAskedBeforeEachCommittedGain) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(gate(report("fail", 0.9, 0.85, {"GEOMEAN_BELOW_TARGET"})), kExitFail);
  ASSERT_EQ(cmd_ask(sb.ctx, "stall", std::nullopt), kExitPass);  // stall.memory, about version 1
  sb.set_candidate("// v2\n");
  EXPECT_EQ(gate_pass(1.05, 1.03), kExitPass);
  ASSERT_EQ(cmd_ask(sb.ctx, "limit", std::nullopt), kExitPass);  // asked after version 2 was measured
  ASSERT_EQ(commit(), kExitPass) << refusal();

  auto c = Lineage(sb.ctx.lineage).read();
  ASSERT_EQ(c.records.back().type, "commit");
  EXPECT_EQ(c.records.back().version, 2);
  ASSERT_EQ(c.records.back().questions_before.size(), 1u);
  EXPECT_EQ(c.records.back().questions_before[0].id, "stall.memory");
  EXPECT_EQ(c.evaluations().size(), 2u);  // a commit record is no evaluation

  sb.set_candidate("// v3\n");
  EXPECT_EQ(gate_pass(1.2, 1.1), kExitPass);
  ASSERT_EQ(commit(), kExitPass) << refusal();

  sb.clear_streams();
  ASSERT_EQ(cmd_history(sb.ctx), kExitPass) << sb.err.str();
  const std::string h = sb.out.str();
  auto v2 = h.find("committed; questions asked before this gain: stall.memory\n");
  auto v3 = h.find("committed; questions asked before this gain: limit.peak\n");
  EXPECT_NE(v2, std::string::npos) << h;
  EXPECT_NE(v3, std::string::npos) << h;
  EXPECT_LT(v2, v3) << h;
  EXPECT_EQ(h.find("ask:commit"), std::string::npos) << h;
  // The line follows the committed version's row.
  auto row2 = h.find("\n2      ");
  ASSERT_NE(row2, std::string::npos) << h;
  EXPECT_EQ(h.find('\n', row2 + 1) + 1, v2 - 9) << h;
}

}  // namespace
}  // namespace attngate::hooks
