// --rounds-out: every timed call as a repetition in Google Benchmark's JSON (gbench_rounds.hpp),
// and Google Benchmark's own tools/compare.py on two such files, U-test included, where the
// machine has it (Debian's libbenchmark-tools and scipy; skipped with the reason otherwise).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>
#include <sstream>

#include "attngate/bench/gbench_rounds.hpp"

namespace {

using attngate::bench::gbench_rounds_document;
using attngate::bench::RoundSeries;
namespace fs = std::filesystem;

RoundSeries series(const std::string& name, double ms, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.002);
  RoundSeries s{name, {}, {}};
  for (int i = 0; i < n; ++i) {
    s.real_ms.push_back(ms * (1 + noise(rng)));
    s.cpu_ms.push_back(ms + 0.30 + 0.001 * noise(rng));  // the host's call: the round trip on top
  }
  return s;
}

TEST(Rounds, EveryCallIsARepetitionPerCallInMicroseconds) {
  const auto doc = gbench_rounds_document({series("candidate/gate_x", 1.0, 30, 1)}, {{"host_name", "h"}});
  const auto& b = doc.at("benchmarks");
  ASSERT_EQ(b.size(), 33u);  // 30 calls, mean, stddev, median
  EXPECT_EQ(b[0].at("name"), "candidate/gate_x");
  EXPECT_EQ(b[0].at("run_type"), "iteration");
  EXPECT_EQ(b[0].at("repetitions"), 30);
  EXPECT_EQ(b[29].at("repetition_index"), 29);
  EXPECT_EQ(b[0].at("iterations"), 1);
  EXPECT_EQ(b[0].at("time_unit"), "us");
  EXPECT_NEAR(b[0].at("real_time").get<double>(), 1000.0, 10.0);  // one call, not the measurement
  EXPECT_NEAR(b[0].at("cpu_time").get<double>(), 1300.0, 10.0);
  EXPECT_EQ(b[30].at("aggregate_name"), "mean");
  EXPECT_EQ(b[32].at("name"), "candidate/gate_x_median");
  EXPECT_EQ(doc.at("context").at("host_name"), "h");
}

TEST(Rounds, GoogleBenchmarksCompareRunsItsUTest) {
  const char* compare = "/usr/share/benchmark/compare.py";
  if (!fs::exists(compare)) GTEST_SKIP() << compare << " is not installed (Debian: libbenchmark-tools)";
  if (std::system("python3 -c 'import scipy' 2>/dev/null") != 0) GTEST_SKIP() << "compare.py's U-test needs scipy";
  const fs::path dir = fs::temp_directory_path() / ("attngate_rounds_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a.json") << gbench_rounds_document({series("candidate/gate_x", 1.00, 40, 1)}, {}).dump();
  std::ofstream(dir / "b.json") << gbench_rounds_document({series("candidate/gate_x", 1.05, 40, 2)}, {}).dump();
  const std::string out_file = (dir / "out.txt").string();
  const std::string cmd = std::string("python3 ") + compare + " -a benchmarks " + (dir / "a.json").string() + " " +
                          (dir / "b.json").string() + " > " + out_file + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(out_file);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  EXPECT_NE(out.find("candidate/gate_x_pvalue"), std::string::npos) << out;  // the U-test's row
  EXPECT_NE(out.find("+0.05"), std::string::npos) << out;                     // 5% slower per call
  EXPECT_EQ(out.find("WARNING: Results unreliable"), std::string::npos) << out;
}

}  // namespace
