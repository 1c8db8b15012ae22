// Each rule of the verdict on typed inputs (Timing, Policy, verify::ResultDocument): what makes it
// hold, what makes it fire. The whole report on documents is agent_hooks/tests/test_gate_report.cpp.
#include <gtest/gtest.h>

#include "attngate/gate/policy.hpp"
#include "attngate/gate/reasons.hpp"
#include "attngate/gate/rules_correctness.hpp"
#include "attngate/gate/rules_timing.hpp"

namespace attngate::hooks {
namespace {

// A kernel timed in a worker by the judge, with every clock agreeing.
Timing worker_timing(double event_ms) {
  Timing t;
  t.event_ms = event_ms;
  t.kernel_ms = event_ms - 0.01;
  t.span_ms = event_ms - 0.005;
  t.wall_ms = event_ms + 0.6;
  t.traced_event_ms = event_ms + 0.001;
  t.cupti_minus_traced_event_us = -8;
  t.isolated = 1;
  t.process = "worker";
  t.worker_event_ms = event_ms - 0.02;
  t.pre_ms = 0.05;
  t.hold_gap_max_us = 3;
  t.solo_handoff_us = 287;
  t.reference_handoff_us = 287.4;
  t.alone_event_ms = event_ms;
  t.round_trip_correction_us = 0;
  return t;
}

// gate.yaml's numbers.
Policy shipped_policy() {
  Policy p;
  p.clock_tolerance = 0.05, p.clock_slack_ms = 0.03, p.wall_slack_ms = 0.3, p.baseline_disturbed_us = 20;
  p.baseline_alone_tolerance = 0.02, p.baseline_alone_slack_us = 1.5, p.worker_clock_trust_us = 1.5;
  return p;
}

TEST(ClockRule, AgreeingClocksOfAFasterKernelHold) {
  Timing c = worker_timing(0.5), b = worker_timing(1.0);
  c.round_trip_correction_us = 0.9;  // within worker_clock_trust_us
  EXPECT_TRUE(clock_disagreements(c, b, shipped_policy()).empty());
}

TEST(ClockRule, AWallClockThatDoesNotMoveWithTheEventsIsA) {
  Timing c = worker_timing(0.5), b = worker_timing(1.0);
  c.wall_ms = 1.6;  // the judge's wall clock says the call took as long as the baseline's
  const auto d = clock_disagreements(c, b, shipped_policy());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rfind("(a) wall vs event", 0), 0u) << d[0];
}

TEST(ClockRule, AWorkerClockThatDisagreesWithTheJudgeIsE) {
  Timing c = worker_timing(0.5), b = worker_timing(1.0);
  c.worker_event_ms = 0.0;  // the worker claims its call took no time
  const auto d = clock_disagreements(c, b, shipped_policy());
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d.back().find("(e) the worker's events vs the judge's clock"), std::string::npos) << d.back();
}

TEST(ClockRule, ACorrectionBeyondTheTrustAndAnyForTheBaselineIsH) {
  Timing c = worker_timing(0.5), b = worker_timing(1.0);
  c.round_trip_correction_us = 1.6;
  b.round_trip_correction_us = 0.2;
  const auto d = clock_disagreements(c, b, shipped_policy());
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NE(d[0].find("(h) the candidate's round trip was corrected by +1.60 us"), std::string::npos) << d[0];
  EXPECT_NE(d[1].find("(h) the baseline's round trip"), std::string::npos) << d[1];
}

TEST(ClockRule, ANonFiniteFigureCountsAsMissing) {
  Timing c = worker_timing(0.5), b = worker_timing(1.0);
  c.event_ms = std::numeric_limits<double>::quiet_NaN();
  const auto d = clock_disagreements(c, b, shipped_policy());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].find("cannot be compared"), std::string::npos) << d[0];
}

TEST(BaselineRule, AnUndisturbedBaselineHolds) {
  EXPECT_EQ(baseline_disturbance(worker_timing(1.0), shipped_policy()), "");
}

TEST(BaselineRule, AMovedRoundTripOrASlowerCallThanAloneFires) {
  Timing b = worker_timing(1.0);
  b.reference_handoff_us = 467;  // a GPU hog in another process added 180 µs on the H200
  EXPECT_NE(baseline_disturbance(b, shipped_policy()).find("its round trip to the judge was 467.0 us"), std::string::npos);
  b = worker_timing(1.0);
  b.alone_event_ms = 0.9;  // 11 % faster alone than beside the candidate
  EXPECT_NE(baseline_disturbance(b, shipped_policy()).find("its median time was 1.0000 ms beside the candidate"),
            std::string::npos);
}

TEST(PlausibilityRule, AClockBelowTheDeviceFloorFires) {
  const DeviceFloor d{990, 4.8, 1e12, 1e8};  // 1 TFLOP at 990 TFLOPS: at least 1.01 ms
  Timing c = worker_timing(1.2), b = worker_timing(2.0);
  EXPECT_FALSE(plausibility(d, c, b, 0.3).hit);
  c.event_ms = 0.9;
  const Plausibility p = plausibility(d, c, b, 0.3);
  EXPECT_TRUE(p.hit);
  EXPECT_NE(p.detail.find("event time 0.9000 ms"), std::string::npos) << p.detail;
  ASSERT_TRUE(p.floor_ms);
  EXPECT_NEAR(*p.floor_ms, 1.0101, 1e-3);
}

TEST(PlausibilityRule, WithoutTheFiguresToBoundItTheScenarioFails) {
  const Plausibility p = plausibility(DeviceFloor{}, worker_timing(1.0), worker_timing(1.0), 0.3);
  EXPECT_TRUE(p.hit);
  EXPECT_NE(p.detail.find("cannot be judged"), std::string::npos);
}

TEST(MismatchRule, EventTimeFarBeyondTheKernelsFiresAndTheBaselinesExcessIsForgiven) {
  Timing c = worker_timing(1.0), b = worker_timing(1.0);
  c.kernel_ms = 0.4;  // 2.5x its kernels' time, 0.6 ms of excess the baseline lacks
  EXPECT_TRUE(clock_mismatch(c, b, false).hit);
  b.kernel_ms = 0.4;
  EXPECT_FALSE(clock_mismatch(c, b, false).hit);
}

TEST(ForeignKernelRule, NamesTheFirstThreeKernelsOutsideTheInventory) {
  Timing t = worker_timing(1.0);
  EXPECT_EQ(foreign_kernels(t, "the candidate", "candidate", "candidate_foreign_kernels"), "");
  t.foreign_kernel_names = {"a", "b", "c", "d"};
  const std::string d = foreign_kernels(t, "the candidate", "candidate", "candidate_foreign_kernels");
  EXPECT_NE(d.find("launched 4 kernel(s)"), std::string::npos) << d;
  EXPECT_NE(d.find(": a, b, c, ..."), std::string::npos) << d;
}

TEST(UntimedRule, TheBenchsKindNamesTheCode) {
  EXPECT_EQ(untimed_code({"x", bench::failure_kind::kSideStream, ""}), "SIDE_STREAM_WORK");
  EXPECT_EQ(untimed_code({"x", bench::failure_kind::kJudgeClock, ""}), "CLOCK_DISAGREE");
  EXPECT_EQ(untimed_code({"x", "something new", ""}), "NO_PERF");
}

TEST(SandboxRule, AMissingMechanismIsNamed) {
  bench::SandboxRecord s;
  EXPECT_EQ(sandbox_gaps(s), "the sandbox (ATTNGATE_SANDBOX=off)");
  s.enabled = true;
  s.mechanisms = {{"landlock", true, ""}, {"seccomp", false, "not built"}};
  EXPECT_EQ(sandbox_gaps(s), "seccomp (not built)");
}

verify::ResultDocument failed_result(std::vector<std::string> reasons) {
  verify::ResultDocument r;
  r.status = "failed";
  r.base_seed = "42";
  verify::ResultRun run;
  run.distribution = "standard";
  run.pass = false;
  run.reasons = std::move(reasons);
  r.runs = {run};
  return r;
}

TEST(CorrectnessRule, NondeterminismIsItsOwnCodeAndSkippedWorkIsWrongOutput) {
  EXPECT_TRUE(only_nondeterministic(failed_result({"not deterministic: 1 of 4096 LSE elements differed"})));
  EXPECT_FALSE(only_nondeterministic(failed_result({"not deterministic: 9 elements left unwritten"})));
  EXPECT_FALSE(only_nondeterministic(failed_result({"O max error 0.5 > bound 0.01"})));
}

TEST(CorrectnessRule, ThePolicyDecidesWhetherNondeterminismFails) {
  const auto r = failed_result({"not deterministic: 1 of 4096 LSE elements differed"});
  Policy p = shipped_policy();
  for (bool fail : {true, false}) {
    p.nondeterminism_fail = fail;
    ScenarioResult row;
    row.id = "s";
    Reasons reasons;
    VerifyTally tally;
    judge_verify_status(row, r, "verify.candidate.s", p, reasons, tally);
    EXPECT_TRUE(row.nondeterministic);
    EXPECT_EQ(row.correct, !fail);
    EXPECT_EQ(reasons.empty(), !fail);
    EXPECT_EQ(tally.base_seed, "42");
  }
}

TEST(CorrectnessRule, AWrongOutputFailsWithItsReplayCommand) {
  ScenarioResult row;
  row.id = "s";
  Reasons reasons;
  VerifyTally tally;
  judge_verify_status(row, failed_result({"O max error 0.5 > bound 0.01"}), "verify.candidate.s", shipped_policy(),
                      reasons, tally);
  EXPECT_EQ(row.correct, false);
  EXPECT_EQ(row.failed_distributions, std::vector<std::string>{"standard"});  // typed, for the questions
  const auto done = reasons.done();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].code, "CORRECTNESS_FAILED");
  EXPECT_NE(done[0].detail.find("replay: ATTNGATE_SEED=42 ctest -R 'verify.candidate.s$'"), std::string::npos);
}

TEST(PolicyRule, ASettingThatIsNotANumberIsAConfigurationError) {
  Suite s;
  s.name = "gate";
  s.file = "gate.yaml";
  s.settings["clock_tolerance"] = "five percent";
  EXPECT_THROW(read_policy(s, "gate.yaml"), ReportConfigError);
  s.settings["clock_tolerance"] = "0.05";
  s.settings["sandbox"] = "maybe";
  EXPECT_THROW(read_policy(s, "gate.yaml"), ReportConfigError);
  s.settings.erase("sandbox");
  const Policy p = read_policy(s, "gate.yaml");
  EXPECT_DOUBLE_EQ(p.clock_tolerance, 0.05);
  EXPECT_EQ(p.clock_tolerance_source, "gate.yaml settings.clock_tolerance");
  EXPECT_EQ(p.wall_slack_ms_source, "default");
}

}  // namespace
}  // namespace attngate::hooks
