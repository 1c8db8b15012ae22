// `attngate gate --quiet`'s progress lines (progress.hpp): read from the files the gate writes,
// due when a stage begins or ends and otherwise at most every few seconds.
#include <gtest/gtest.h>

#include <fstream>

#include "attngate/hooks/progress.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using namespace attngate::hooks;

struct Dirs {
  attngate::hooks::test::TempDir dir;
  GateProgressPaths p;
  Dirs() {
    p.results_dir = dir / "verify/results";
    p.timing_progress = dir / "gate/performance.json.progress";
    p.report = dir / "gate/report.json";
    p.kernel = "candidate";
    p.verify_total = 3;
    fs::create_directories(p.results_dir);
    fs::create_directories(p.report.parent_path());
  }
  void result(const std::string& name) { std::ofstream(p.results_dir / name) << "{}"; }
};

TEST(Progress, CountsOnlyTheKernelsFreshResults) {
  Dirs d;
  d.result("verify.candidate.old.json");
  const auto since = fs::file_time_type::clock::now() + std::chrono::seconds(1);
  fs::last_write_time(d.p.results_dir / "verify.candidate.old.json", since - std::chrono::hours(1));
  d.result("verify.candidate.a.json");
  d.result("verify.initial.a.json");  // the baseline's
  fs::last_write_time(d.p.results_dir / "verify.candidate.a.json", since);
  fs::last_write_time(d.p.results_dir / "verify.initial.a.json", since);
  const ProgressSnapshot s = read_progress(d.p, since);
  EXPECT_EQ(s.verified, 1);
  EXPECT_FALSE(s.timing);
  EXPECT_FALSE(s.report);
}

TEST(Progress, LinesAreDueAtStagesAndAtMostEveryFewSeconds) {
  Dirs d;
  ProgressSnapshot none, one, two, three;
  one.verified = 1;
  two.verified = 2;
  three.verified = 3;
  EXPECT_EQ(progress_line(none, one, d.p, 12.4, 0.5), "attngate: verification 1/3 (12 s)");  // began
  EXPECT_EQ(progress_line(one, two, d.p, 13, 1.0), std::nullopt);                             // too soon
  EXPECT_EQ(progress_line(one, two, d.p, 18, 6.0), "attngate: verification 2/3 (18 s)");
  EXPECT_EQ(progress_line(two, three, d.p, 19, 0.1), "attngate: verification 3/3 (19 s)");    // ended
  EXPECT_EQ(progress_line(three, three, d.p, 25, 9.0), std::nullopt);                         // nothing new
  ProgressSnapshot timing = three;
  timing.timing = attngate::bench::TimingProgress{1, 28, "gate_mha_d64_s512"};
  EXPECT_EQ(progress_line(three, timing, d.p, 20, 0.1), "attngate: timing 1/28 gate_mha_d64_s512 (20 s)");
  ProgressSnapshot later = timing;
  later.timing->done = 2;
  EXPECT_EQ(progress_line(timing, later, d.p, 21, 1.0), std::nullopt);
  later.timing->done = 28;
  EXPECT_EQ(progress_line(timing, later, d.p, 30, 1.0), "attngate: timing 28/28 gate_mha_d64_s512 (30 s)");
  ProgressSnapshot done = later;
  done.report = true;
  EXPECT_EQ(progress_line(later, done, d.p, 31, 0.2), "attngate: report (31 s)");
}

TEST(Progress, ReadsTheBenchsProgressFileAndIgnoresAHalfWrittenOne) {
  Dirs d;
  const auto since = fs::file_time_type::clock::now() - std::chrono::seconds(5);
  std::ofstream(d.p.timing_progress) << R"({"done": 3, "total": 28, "scenario": "gate_x"})";
  ProgressSnapshot s = read_progress(d.p, since);
  ASSERT_TRUE(s.timing);
  EXPECT_EQ(s.timing->done, 3);
  EXPECT_EQ(s.timing->total, 28);
  std::ofstream(d.p.timing_progress) << R"({"done": 3, "tot)";
  s = read_progress(d.p, since);
  EXPECT_FALSE(s.timing);
}

TEST(Progress, TotalsComeFromTheGateSuiteAndItsCorrectnessSuites) {
  const GateProgressPaths p = gate_progress_paths(ATTNGATE_HOOKS_SCENARIO_DIR_FOR_TESTS, "/b");
  EXPECT_EQ(p.kernel, "candidate");
  EXPECT_EQ(p.verify_total, 28 + 7 + 210);  // gate, smoke, full (unit.docs.facts holds the README to it)
  EXPECT_EQ(p.results_dir, fs::path("/b/verify/results"));
}

}  // namespace
