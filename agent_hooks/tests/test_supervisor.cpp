#include <algorithm>

#include <gtest/gtest.h>

#include "attngate/hooks/supervisor.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

using test::scored;

bool fired(const std::vector<Signal>& s, const std::string& trigger, const std::string& kind) {
  return std::any_of(s.begin(), s.end(), [&](const Signal& x) { return x.trigger == trigger && x.kind == kind; });
}

bool any_of_trigger(const std::vector<Signal>& s, const std::string& trigger) {
  return std::any_of(s.begin(), s.end(), [&](const Signal& x) { return x.trigger == trigger; });
}

// Runs the supervisor over a lineage of geomeans, returning the signals of the last one.
std::vector<Signal> last_signals(const std::vector<double>& geomeans, const SupervisorConfig& cfg = {},
                                 long long minutes_apart = 1) {
  std::vector<Record> lineage;
  for (std::size_t i = 0; i < geomeans.size(); ++i)
    lineage.push_back(scored(static_cast<int>(i + 1), geomeans[i], static_cast<long long>(i) * minutes_apart));
  Record cur = lineage.back();
  lineage.pop_back();
  return compute_signals(lineage, cur, cfg);
}

TEST(Supervisor, StallAfterFiveEvaluationsWithoutNewBest) {
  // Version 1 is the best; versions 2..5 are four evaluations without a new best, 2..6 five.
  EXPECT_FALSE(any_of_trigger(last_signals({1.10, 1.09, 1.095, 1.09, 1.085}), "stall"));
  auto s = last_signals({1.10, 1.09, 1.095, 1.09, 1.085, 1.09});
  EXPECT_TRUE(fired(s, "stall", "no_new_best"));
  EXPECT_EQ(triggers_of(s), std::vector<std::string>{"stall"});
}

TEST(Supervisor, NewBestResetsStallButNoiseDoesNot) {
  EXPECT_FALSE(any_of_trigger(last_signals({1.10, 1.05, 1.06, 1.04, 1.05, 1.12}), "stall"));
  // +0.1% steps are below min_gain (0.5%): still a stall.
  EXPECT_TRUE(fired(last_signals({1.100, 1.101, 1.102, 1.103, 1.104, 1.105}), "stall", "no_new_best"));
  SupervisorConfig cfg;
  cfg.stall.min_gain = 0;
  EXPECT_FALSE(any_of_trigger(last_signals({1.100, 1.101, 1.102, 1.103, 1.104, 1.105}, cfg), "stall"));
}

TEST(Supervisor, StallAfterSixtyMinutesWithoutNewBest) {
  EXPECT_FALSE(any_of_trigger(last_signals({1.10, 1.05}, {}, 59), "stall"));
  EXPECT_TRUE(fired(last_signals({1.10, 1.05}, {}, 61), "stall", "no_new_best_time"));
  // A new best an hour later is progress, not a stall.
  EXPECT_FALSE(any_of_trigger(last_signals({1.10, 1.20}, {}, 61), "stall"));
}

TEST(Supervisor, StallCountsFailedEvaluationsToo) {
  std::vector<Record> lineage = {scored(1, 1.1)};
  for (int v = 2; v <= 5; ++v) {
    Record broken;
    broken.version = v;
    broken.verdict = "fail";
    broken.reasons.push_back({"BUILD_FAILED", {}, ""});
    lineage.push_back(broken);
  }
  Record cur = scored(6, 1.05);
  EXPECT_TRUE(fired(compute_signals(lineage, cur, {}), "stall", "no_new_best"));
}

TEST(Supervisor, CycleOnRepeatedSource) {
  std::vector<Record> lineage = {scored(1, 1.0, 0, "aaa"), scored(2, 1.1, 1, "bbb")};
  auto s = compute_signals(lineage, scored(3, 1.05, 2, "aaa"), {});
  EXPECT_TRUE(fired(s, "cycle", "repeat"));
  EXPECT_FALSE(fired(compute_signals(lineage, scored(3, 1.05, 2, "ccc"), {}), "cycle", "repeat"));
}

TEST(Supervisor, CycleOnOscillatingScores) {
  EXPECT_TRUE(fired(last_signals({1.00, 1.02, 1.00, 1.02, 1.00, 1.02}), "cycle", "oscillation"));
  EXPECT_TRUE(fired(last_signals({1.05, 1.10, 1.01, 1.02, 1.00, 1.02, 1.01, 1.02}), "cycle", "oscillation"));
  // Five alternations are not six.
  EXPECT_FALSE(fired(last_signals({1.00, 1.02, 1.00, 1.02, 1.00}), "cycle", "oscillation"));
  // Monotone, or alternating but far apart, is not oscillation within a band.
  EXPECT_FALSE(fired(last_signals({1.00, 1.01, 1.02, 1.03, 1.04, 1.05}), "cycle", "oscillation"));
  EXPECT_FALSE(fired(last_signals({1.00, 1.20, 1.00, 1.20, 1.00, 1.20}), "cycle", "oscillation"));
}

TEST(Supervisor, CycleOnChurnAboveThreshold) {
  std::vector<Record> lineage = {scored(1, 1.0)};
  Record cur = scored(2, 1.01);
  cur.churn = ChurnFigure{10, 4};
  EXPECT_TRUE(fired(compute_signals(lineage, cur, {}), "cycle", "churn"));
  cur.churn = ChurnFigure{10, 3};
  EXPECT_FALSE(fired(compute_signals(lineage, cur, {}), "cycle", "churn"));
  cur.churn = ChurnFigure{4, 4};  // too few added lines to judge
  EXPECT_FALSE(fired(compute_signals(lineage, cur, {}), "cycle", "churn"));
}

TEST(Supervisor, SuspiciousStepOverPreviousBest) {
  EXPECT_TRUE(fired(last_signals({1.0, 1.1, 1.7}), "suspicious", "step"));
  EXPECT_FALSE(fired(last_signals({1.0, 1.1, 1.6}), "suspicious", "step"));
  // The first version is compared with the baseline itself.
  EXPECT_TRUE(fired(last_signals({1.6}), "suspicious", "step"));
}

// A lineage begun afresh (session 15: a new machine) measures the step from the committed bar,
// not from the baseline: v4d's 1.619x after v4c's committed 1.553x is no step.
TEST(Supervisor, SuspiciousStepFromTheCommittedBarWhenHigher) {
  const Record v4d = scored(1, 1.619);
  EXPECT_TRUE(fired(compute_signals({}, v4d, {}), "suspicious", "step"));
  const StepBar committed{1.553, "best committed version (1.553x, commit ab48faa)"};
  EXPECT_FALSE(fired(compute_signals({}, v4d, {}, committed), "suspicious", "step"));
  // A real step over the committed bar still fires, and names the bar.
  const auto s = compute_signals({}, scored(1, 2.4), {}, committed);
  const auto step = std::find_if(s.begin(), s.end(), [](const Signal& x) { return x.kind == "step"; });
  ASSERT_NE(step, s.end());
  EXPECT_NE(step->detail.find("is 1.545x the best committed version (1.553x"), std::string::npos) << step->detail;
  // The higher of the two counts: the lineage's 1.4 (2.0 / 1.4 is no step, 2.0 / 1.1 would be) ...
  EXPECT_FALSE(fired(compute_signals({scored(1, 1.4)}, scored(2, 2.0), {}, {1.1, "x"}), "suspicious", "step"));
  // ... or the committed 1.553 (1.9 / 1.553 is no step, 1.9 / 1.2 is one).
  EXPECT_TRUE(fired(compute_signals({scored(1, 1.2)}, scored(2, 1.9), {}, {1.1, "x"}), "suspicious", "step"));
  EXPECT_FALSE(fired(compute_signals({scored(1, 1.2)}, scored(2, 1.9), {}, committed), "suspicious", "step"));
}

TEST(Supervisor, SuspiciousAbovePeak) {
  Record cur = scored(1, 1.0);
  cur.scenarios[0].percent_of_peak = 100.5;
  EXPECT_TRUE(fired(compute_signals({}, cur, {}), "suspicious", "above_peak"));
  cur.scenarios[0].percent_of_peak = 99.0;
  EXPECT_FALSE(fired(compute_signals({}, cur, {}), "suspicious", "above_peak"));
}

TEST(Supervisor, SuspiciousWallClockWithoutKernelGainAndReverse) {
  Record cur = scored(1, 1.0);
  cur.geomean.wall_speedup = 1.3;
  cur.geomean.kernel_speedup = 1.0;
  EXPECT_TRUE(fired(compute_signals({}, cur, {}), "suspicious", "wall_vs_kernel"));
  cur.geomean.wall_speedup = 1.0;
  cur.geomean.kernel_speedup = 1.25;
  EXPECT_TRUE(fired(compute_signals({}, cur, {}), "suspicious", "wall_vs_kernel"));
  cur.geomean.wall_speedup = 1.05;
  cur.geomean.kernel_speedup = 1.0;
  EXPECT_FALSE(fired(compute_signals({}, cur, {}), "suspicious", "wall_vs_kernel"));
}

// The signal judges wall time against what kernel time predicts, with the baseline's per-call
// overhead: an honest kernel twice as fast behind a 1.45 ms round trip (v4c's figures on the H200,
// 2026-12-02) does not raise it; the same kernel with 0.5 ms of work outside its kernels does.
TEST(Supervisor, WallVsKernelAllowsAFixedRoundTripAndFlagsUntracedWork) {
  Record cur = scored(1, 2.0);
  auto times = [](ScenarioResult& s, double ck, double cw, double bk, double bw) {
    s.candidate.kernel_ms = ck, s.candidate.wall_ms = cw, s.baseline.kernel_ms = bk, s.baseline.wall_ms = bw;
  };
  times(cur.scenarios[0], 0.2489, 1.7165, 0.2715, 1.7300);
  ScenarioResult long_call = cur.scenarios[0];
  long_call.id = "long";
  times(long_call, 3.3395, 4.8610, 6.8675, 8.4466);
  cur.scenarios.push_back(long_call);
  cur.geomean.wall_speedup = 1.22;  // what the two speedups said: a gap of 22 %
  cur.geomean.kernel_speedup = 1.56;
  EXPECT_FALSE(fired(compute_signals({}, cur, {}), "suspicious", "wall_vs_kernel"));
  for (auto& s : cur.scenarios) *s.candidate.wall_ms += 0.5;
  EXPECT_TRUE(fired(compute_signals({}, cur, {}), "suspicious", "wall_vs_kernel"));
}

TEST(Supervisor, SuspiciousKernelCountChange) {
  std::vector<Record> lineage = {scored(1, 1.0)};
  Record cur = scored(2, 1.01);
  cur.scenarios[0].candidate.kernel_count = 2;
  auto s = compute_signals(lineage, cur, {});
  EXPECT_TRUE(fired(s, "suspicious", "kernel_count"));
  cur.scenarios[0].candidate.kernel_count = 1;
  EXPECT_FALSE(fired(compute_signals(lineage, cur, {}), "suspicious", "kernel_count"));
}

TEST(Supervisor, SuspiciousSideStreamWork) {
  Record cur = scored(1, 1.0);
  cur.scenarios[0].flags = {"SIDE_STREAM_WORK"};
  EXPECT_TRUE(fired(compute_signals({}, cur, {}), "suspicious", "side_stream_work"));
  Record by_reason = scored(1, 1.0);
  by_reason.reasons.push_back({"SIDE_STREAM_WORK", {"gate_a"}, ""});
  EXPECT_TRUE(fired(compute_signals({}, by_reason, {}), "suspicious", "side_stream_work"));
}

TEST(Supervisor, RegressionAgainstTheBest) {
  auto s = last_signals({1.0, 1.2, 1.1});
  EXPECT_TRUE(fired(s, "regression", "below_best"));
  EXPECT_FALSE(fired(last_signals({1.0, 1.2, 1.19}), "regression", "below_best"));
}

TEST(Supervisor, IncorrectVersionsAreNeverBestNorRegress) {
  std::vector<Record> lineage = {scored(1, 1.0)};
  Record wrong = scored(2, 1.4);
  wrong.scenarios[0].correct = false;
  wrong.reasons.push_back({"CORRECTNESS_FAILED", {"gate_a"}, ""});
  EXPECT_FALSE(is_scored(wrong));
  EXPECT_FALSE(fired(compute_signals(lineage, wrong, {}), "regression", "below_best"));
  lineage.push_back(wrong);
  // 1.1 is a regression only against a correct best (1.0): it is not one.
  EXPECT_FALSE(fired(compute_signals(lineage, scored(3, 1.1), {}), "regression", "below_best"));
  EXPECT_TRUE(is_scored(scored(4, 0.9)));  // failed only on speed: still a measurement
}

TEST(Supervisor, ShippedFileMatchesBuiltInDefaults) {
  SupervisorConfig shipped;
  apply_supervisor_file(shipped, std::filesystem::path(ATTNGATE_HOOKS_DIR_FOR_TESTS) / "supervisor.yaml");
  SupervisorConfig d;
  EXPECT_EQ(shipped.stall.evaluations, d.stall.evaluations);
  EXPECT_DOUBLE_EQ(shipped.stall.minutes, d.stall.minutes);
  EXPECT_DOUBLE_EQ(shipped.stall.min_gain, d.stall.min_gain);
  EXPECT_EQ(shipped.cycle.repeat_hash, d.cycle.repeat_hash);
  EXPECT_EQ(shipped.cycle.oscillation_window, d.cycle.oscillation_window);
  EXPECT_DOUBLE_EQ(shipped.cycle.oscillation_band, d.cycle.oscillation_band);
  EXPECT_DOUBLE_EQ(shipped.cycle.churn_threshold, d.cycle.churn_threshold);
  EXPECT_EQ(shipped.cycle.churn_min_added_lines, d.cycle.churn_min_added_lines);
  EXPECT_DOUBLE_EQ(shipped.suspicious.step_speedup, d.suspicious.step_speedup);
  EXPECT_DOUBLE_EQ(shipped.suspicious.peak_percent, d.suspicious.peak_percent);
  EXPECT_DOUBLE_EQ(shipped.suspicious.wall_kernel_gap, d.suspicious.wall_kernel_gap);
  EXPECT_EQ(shipped.suspicious.kernel_count_change, d.suspicious.kernel_count_change);
  EXPECT_EQ(shipped.suspicious.side_stream_work, d.suspicious.side_stream_work);
  EXPECT_DOUBLE_EQ(shipped.regression.tolerance, d.regression.tolerance);
}

TEST(Supervisor, UserFileOverridesOnlyItsKeys) {
  test::TempDir d;
  test::write_file(d / "mine.yaml", "stall:\n  evaluations: 3\nsuspicious:\n  step_speedup: 1.2\n");
  SupervisorConfig cfg;
  apply_supervisor_file(cfg, d / "mine.yaml");
  EXPECT_EQ(cfg.stall.evaluations, 3);
  EXPECT_DOUBLE_EQ(cfg.stall.minutes, 60);
  EXPECT_DOUBLE_EQ(cfg.suspicious.step_speedup, 1.2);
  EXPECT_TRUE(fired(last_signals({1.0, 1.25}, cfg), "suspicious", "step"));
  EXPECT_TRUE(fired(last_signals({1.1, 1.0, 1.0, 1.0}, cfg), "stall", "no_new_best"));
}

TEST(Supervisor, UserFileErrorsNameFileAndLine) {
  test::TempDir d;
  SupervisorConfig cfg;
  test::write_file(d / "typo.yaml", "stall:\n  evaluations: 3\n  minuets: 5\n");
  try {
    apply_supervisor_file(cfg, d / "typo.yaml");
    FAIL() << "an unknown key must be an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("typo.yaml:3: unknown key 'stall.minuets'"), std::string::npos) << e.what();
  }
  test::write_file(d / "type.yaml", "cycle:\n  churn_threshold: lots\n");
  try {
    apply_supervisor_file(cfg, d / "type.yaml");
    FAIL() << "a wrong type must be an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("type.yaml:2: 'cycle.churn_threshold' has the wrong type"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace attngate::hooks
