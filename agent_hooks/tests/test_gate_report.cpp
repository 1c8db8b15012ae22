// `attngate report` on synthetic gate outcomes: the verdict, every reason code, freshness, tamper
// evidence, targets from the suite and the environment, report.md; and the bench's comparison JSON
// read as written (the contract between attngate_bench and the report).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "attngate/bench/compare.hpp"
#include "attngate/hooks/report.hpp"
#include "attngate/hooks/sha256.hpp"
#include "attngate/scenario.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kGateYaml = R"(suite: gate
description: three shapes for the report tests
settings:
  geomean_target: "1.0"
  scenario_floor: "0.9"
  baseline_kernel: "initial"
scenarios:
  - {id: gate_a, batch: 1, seqlen_q: 512, seqlen_k: 512, heads_q: 2, heads_kv: 2, head_dim: 64, causal: false, dtype: bf16, tags: [mha]}
  - {id: gate_b, batch: 1, seqlen_q: 1024, seqlen_k: 1024, heads_q: 2, heads_kv: 2, head_dim: 128, causal: true, dtype: bf16, tags: [mha]}
  - {id: gate_c, batch: 2, seqlen_q: 256, seqlen_k: 256, heads_q: 4, heads_kv: 2, head_dim: 64, causal: false, dtype: bf16, tags: [gqa]}
)";

const std::vector<std::string> kIds = {"gate_a", "gate_b", "gate_c"};

// One kernel's figures on one scenario, as attngate_bench writes them (*_timing).
struct Clocks {
  double event = 1.0, kernel = 0.996, wall = 1.03;
  int kmin = 1, kmax = 1;
  double foreign = 0, streams = 1, memcpy = 0, memset = 0;
};

struct PerfRow {
  std::string id;
  double speedup = 1.05, lo = 1.04, hi = 1.06;
  Clocks cand{1.0, 0.996, 1.03}, base{1.05, 1.046, 1.08};
};

json timing(const std::string& name, const Clocks& c) {
  return {{"name", name},
          {"event_ms", c.event},
          {"kernel_ms", c.kernel},
          {"span_ms", c.kernel},
          {"wall_ms", c.wall},
          {"cycles", c.event * 1.98e6},
          {"kernel_cycles", c.kernel * 1.98e6},
          {"kernels_per_call", double(c.kmin)},
          {"kernel_count_min", c.kmin},
          {"kernel_count_max", c.kmax},
          {"kernel_count_changed", c.kmin != c.kmax},
          {"kernel_count_changes", c.kmin != c.kmax ? 1.0 : 0.0},
          {"streams", c.streams},
          {"foreign_stream_kernels", c.foreign},
          {"memcpy_per_call", c.memcpy},
          {"memset_per_call", c.memset},
          {"tflops", 300.0},
          {"pct_peak", 30.3},
          {"traced_samples", 16.0},
          {"held_timeouts", 0.0},
          {"sm_clock_mhz", 1980.0},
          {"kernel_names", {"attngate::fwd"}}};
}

json perf_json(const std::vector<PerfRow>& rows, double geo = 1.05, double lo = 1.04, double hi = 1.06,
               const std::string& kernel = "candidate", const std::string& base = "initial") {
  json j = {{"schema", "attngate.comparison/1"},
            {"kernel", kernel},
            {"base", base},
            {"suite", "gate"},
            {"device", "NVIDIA H200"},
            {"device_sm", 90},
            {"driver_version", "580.159.04"},
            {"cuda_driver_version", "13.0"},
            {"cuda_runtime_version", "13.0"},
            {"peak_tflops", 989.5},
            {"geomean_speedup", geo},
            {"geomean_ci95", {lo, hi}},
            {"geomean_kernel_speedup", geo},
            {"geomean_wall_speedup", geo},
            {"bootstrap_resamples", 2000},
            {"wall_s", 12.5},
            {"sm_clock", {{"available", true}, {"median_mhz", 1980.0}, {"min_mhz", 1900.0}, {"device_max_mhz", 1980.0},
                          {"lowest_median_mhz", 1950.0}, {"highest_median_mhz", 1980.0}, {"event_reasons", 4}}},
            {"scenarios", json::array()},
            {"failed", json::array()}};
  for (const auto& r : rows)
    j["scenarios"].push_back({{"id", r.id},
                              {"speedup", r.speedup},
                              {"speedup_ci95", {r.lo, r.hi}},
                              {"kernel_speedup", r.base.kernel / r.cand.kernel},
                              {"wall_speedup", r.base.wall / r.cand.wall},
                              {"calls", 40},
                              {"kernel_timing", timing(kernel, r.cand)},
                              {"base_timing", timing(base, r.base)}});
  return j;
}

std::vector<PerfRow> good_rows() {
  std::vector<PerfRow> rows;
  for (const auto& id : kIds) rows.push_back(PerfRow{id});
  return rows;
}

// A repository with attngate's layout (a committed harness and gate suite) and a build folder in
// which the tests lay out what the gate's tests would have written.
class ReportCmd : public ::testing::Test {
 protected:
  test::Sandbox sb{/*with_git=*/true};
  fs::path build = sb.dir / "build" / "gpu";
  fs::path results = build / "verify" / "results";
  fs::path gate = build / "gate";

  void SetUp() override {
    test::write_file(sb.dir / "scenarios" / "gate.yaml", kGateYaml);
    test::write_file(sb.dir / "verify" / "README.md", "the verifier\n");
    test::write_file(sb.dir / "bench" / "src" / "harness.cpp", "// timing\n");
    test::write_file(sb.dir / "README.md", "not harness\n");
    sb.commit_all("harness");
  }

  RunResult attngate(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env = {}) {
    args.insert(args.begin(), {ATTNGATE_EXE, "--repo", sb.dir.path().string()});
    RunOptions o;
    o.env = {{"ATTNGATE_GEOMEAN_TARGET", ""}, {"ATTNGATE_SCENARIO_FLOOR", ""}};
    o.env.insert(o.env.end(), env.begin(), env.end());
    return run_process(args, o);
  }
  std::vector<std::string> common() const {
    return {"report", "--build-dir", build.string(), "--scenarios", (sb.dir / "scenarios").string()};
  }
  RunResult prepare() {
    auto args = common();
    args.push_back("--prepare");
    return attngate(args);
  }
  RunResult report(std::vector<std::pair<std::string, std::string>> env = {}, std::vector<std::string> extra = {}) {
    auto args = common();
    args.insert(args.end(), extra.begin(), extra.end());
    return attngate(args, env);
  }

  void result(const std::string& id, const std::string& status, double o_max = 0.0039,
              const std::string& detail = "", const std::string& reason = "") {
    json run = {{"distribution", "standard"},
                {"seed", "11"},
                {"pass", status == "passed" || reason.empty()},
                {"reasons", reason.empty() ? json::array() : json::array({reason})},
                {"o", {{"max_abs", o_max}}},
                {"lse", {{"max_abs", 2e-6}}}};
    json j = {{"schema", "attngate.verify_result/1"},
              {"test", "verify.candidate." + id},
              {"kernel", "candidate"},
              {"scenario", id},
              {"suite", "gate"},
              {"status", status},
              {"detail", detail},
              {"base_seed", "12345"}};
    if (status == "passed" || status == "failed") j["runs"] = json::array({run});
    test::write_file(results / ("verify.candidate." + id + ".json"), j.dump(1));
  }
  void all_passed() {
    for (const auto& id : kIds) result(id, "passed");
  }
  void perf(const json& j) { test::write_file(gate / "performance.json", j.dump(1)); }

  json report_json() { return json::parse(test::slurp(gate / "report.json")); }
  // The reason with this code, or null (a missing one fails the expectation, not the process).
  static json reason(const json& r, const std::string& code) {
    for (const auto& x : r["reasons"])
      if (x["code"] == code) return x;
    return nullptr;
  }
  static std::vector<std::string> codes(const json& r) {
    std::vector<std::string> out;
    for (const auto& x : r["reasons"]) out.push_back(x["code"]);
    return out;
  }
  static const json& scenario(const json& r, const std::string& id) {
    for (const auto& s : r["scenarios"])
      if (s["id"] == id) return s;
    throw std::runtime_error("no scenario " + id);
  }
};

TEST_F(ReportCmd, PassWritesBothFilesWithProvenance) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  perf(perf_json(good_rows()));
  auto r = report();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("attngate report: PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find((gate / "report.md").string()), std::string::npos) << r.out;

  const json j = report_json();
  EXPECT_EQ(j["schema"], kReportSchema);
  EXPECT_EQ(j["verdict"], "pass") << j["reasons"].dump();
  EXPECT_TRUE(j["reasons"].empty());
  EXPECT_EQ(j["target"]["geomean"], 1.0);
  EXPECT_EQ(j["target"]["scenario_floor"], 0.9);
  EXPECT_EQ(j["target"]["baseline"], "initial");
  EXPECT_EQ(j["geomean"]["ci_low"], 1.04);
  ASSERT_EQ(j["scenarios"].size(), 3u);
  const json& a = scenario(j, "gate_a");
  EXPECT_EQ(a["correct"], true);
  EXPECT_EQ(a["o_max_abs"], 0.0039);
  EXPECT_EQ(a["candidate"]["kernel_count"], 1);
  EXPECT_EQ(a["candidate"]["streams"], 1);
  EXPECT_EQ(a["baseline"]["wall_ms"], 1.08);
  EXPECT_EQ(a["percent_of_peak"], 30.3);
  EXPECT_TRUE(a["flags"].empty());
  const json& p = j["provenance"];
  EXPECT_EQ(p["gpu"], "NVIDIA H200");
  EXPECT_EQ(p["driver"], "580.159.04");
  EXPECT_EQ(p["cuda"], "13.0");
  EXPECT_EQ(p["sm_clock_mhz"], 1980.0);
  EXPECT_EQ(p["attngate_commit"], sb.head());
  EXPECT_EQ(p["attngate_dirty"], false);
  EXPECT_EQ(p["candidate_sha256"], *sha256_file(sb.candidate()));
  EXPECT_EQ(j["harness"]["verified"], true);
  EXPECT_TRUE(j["harness"]["modified"].empty());
  EXPECT_EQ(j["harness"]["sha256"]["scenarios/gate.yaml"], sha256_hex(kGateYaml));
  EXPECT_FALSE(j["harness"]["sha256"].contains("kernels/candidate/candidate.cu"));
  EXPECT_FALSE(j["harness"]["sha256"].contains("README.md"));
  EXPECT_TRUE(j["wall_s"].is_number());

  // The hooks read it back as any gate report.
  GateReport parsed = load_report(gate / "report.json");
  EXPECT_EQ(parsed.verdict, "pass");
  EXPECT_EQ(*parsed.scenarios[1].candidate.kernel_count, 1);

  const std::string md = test::slurp(gate / "report.md");
  EXPECT_NE(md.find("# attngate gate report: PASS"), std::string::npos) << md;
  EXPECT_NE(md.find("| scenario | correct | O max err | speedup [95% CI] | event ms | kernel ms | wall ms | TFLOPS"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| gate_b | yes | 0.0039 | 1.0500 [1.0400, 1.0600] | 1.0000 / 1.0500 | 0.9960 / 1.0460 | "
                    "1.0300 / 1.0800 | 300.0 (30.3%) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(md.find("gate wall time"), std::string::npos);
}

TEST_F(ReportCmd, PrepareClearsTheRunAndWritesTheMarker) {
  all_passed();
  result("gate_a", "passed");
  test::write_file(results / "verify.initial.gate_a.json", "{}");  // another kernel's: kept
  perf(perf_json(good_rows()));
  test::write_file(gate / "report.json", "{}");
  test::write_file(gate / "report.md", "old");
  auto r = prepare();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& id : kIds) EXPECT_FALSE(fs::exists(results / ("verify.candidate." + id + ".json"))) << id;
  EXPECT_TRUE(fs::exists(results / "verify.initial.gate_a.json"));
  EXPECT_FALSE(fs::exists(gate / "performance.json"));
  EXPECT_FALSE(fs::exists(gate / "report.json"));
  EXPECT_FALSE(fs::exists(gate / "report.md"));
  EXPECT_TRUE(fs::exists(gate / "started"));
}

TEST_F(ReportCmd, MissingResultIsACrashOrATimeoutFromCTestsLog) {
  ASSERT_EQ(prepare().exit_code, 0);
  result("gate_a", "passed");
  perf(perf_json(good_rows()));
  // CTest's running log: gate_b ran into its timeout, gate_c died after 2 s.
  test::write_file(build / "Testing" / "Temporary" / "LastTest.log.tmp",
                   "Start testing: Nov 29 20:48 UTC\n"
                   "----------------------------------------------------------\n"
                   "3/6 Testing: verify.candidate.gate_b\n3/6 Test: verify.candidate.gate_b\n"
                   "Command: \"attngate_verify\"\nOutput:\n"
                   "----------------------------------------------------------\nrunning\n<end of output>\n"
                   "Test time = 900.02 sec\n----------------------------------------------------------\n"
                   "Test Failed.\n\n"
                   "4/6 Testing: verify.candidate.gate_c\n4/6 Test: verify.candidate.gate_c\n"
                   "Command: \"attngate_verify\"\nOutput:\n"
                   "----------------------------------------------------------\n"
                   "CUDA error: an illegal memory access was encountered\n<end of output>\n"
                   "Test time =   2.10 sec\n----------------------------------------------------------\n"
                   "Test Failed.\n\n");
  auto r = report({}, {"--verify-timeout", "900"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json j = report_json();
  EXPECT_EQ(j["verdict"], "fail");
  json timeout = reason(j, "TEST_TIMEOUT");
  ASSERT_NE(timeout, nullptr) << j["reasons"].dump();
  EXPECT_EQ(timeout["scenarios"], json::array({"gate_b"}));
  json crash = reason(j, "TEST_CRASHED");
  ASSERT_NE(crash, nullptr) << j["reasons"].dump();
  EXPECT_EQ(crash["scenarios"], json::array({"gate_c"}));
  EXPECT_NE(crash["detail"].get<std::string>().find("illegal memory access"), std::string::npos);
  EXPECT_EQ(scenario(j, "gate_b")["status"], "missing");

  // Without a log entry a missing result is a crash (the test died or did not run).
  fs::remove(build / "Testing" / "Temporary" / "LastTest.log.tmp");
  r = report();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(reason(report_json(), "TEST_CRASHED")["scenarios"], json::array({"gate_b", "gate_c"}));
}

TEST_F(ReportCmd, SkippedErroredAndFailedResults) {
  ASSERT_EQ(prepare().exit_code, 0);
  result("gate_a", "skipped", 0, "no CUDA device of the required architecture");
  result("gate_b", "failed", 0.41, "", "O max abs 0.41 > 0.0121");
  result("gate_c", "error", 0, "CUDA error: out of memory");
  perf(perf_json(good_rows()));
  auto r = report();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json j = report_json();
  EXPECT_EQ(reason(j, "TEST_SKIPPED")["scenarios"], json::array({"gate_a"}));
  ASSERT_NE(reason(j, "NO_DEVICE"), nullptr);
  json failed = reason(j, "CORRECTNESS_FAILED");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed["scenarios"], json::array({"gate_b"}));
  EXPECT_NE(failed["detail"].get<std::string>().find("O max abs 0.41 > 0.0121"), std::string::npos);
  EXPECT_NE(failed["detail"].get<std::string>().find("ATTNGATE_SEED=12345"), std::string::npos);
  json crash = reason(j, "TEST_CRASHED");
  ASSERT_NE(crash, nullptr);
  EXPECT_EQ(crash["scenarios"], json::array({"gate_c"}));
  EXPECT_NE(crash["detail"].get<std::string>().find("out of memory"), std::string::npos);
  EXPECT_EQ(scenario(j, "gate_b")["correct"], false);
  EXPECT_EQ(scenario(j, "gate_b")["o_max_abs"], 0.41);
  EXPECT_NE(test::slurp(gate / "report.md").find("| gate_b | **no** | 0.41 |"), std::string::npos);
}

// Seen on the H200 with a broken causal mask: verification and the bench's timed-run check both
// reported each causal scenario, and the reason listed every one twice.
TEST_F(ReportCmd, AScenarioFailedTwiceIsListedOnce) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  result("gate_b", "failed", 0.41, "", "O max abs 0.41 > 0.0121");
  auto rows = good_rows();
  json p = perf_json(rows);
  p["failed"] = json::array(
      {{{"id", "gate_b"}, {"error", "timed-run check [wrong output]: candidate on gate_b: O max abs 0.5"}}});
  perf(p);
  EXPECT_EQ(report().exit_code, 1);
  EXPECT_EQ(reason(report_json(), "CORRECTNESS_FAILED")["scenarios"], json::array({"gate_b"}));
}

TEST_F(ReportCmd, GeomeanJudgedByItsCILowerBound) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  perf(perf_json(good_rows(), 1.01, 0.995, 1.02));  // the point estimate clears 1.0, the interval does not
  auto r = report();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const json j = report_json();
  EXPECT_EQ(codes(j), std::vector<std::string>{"GEOMEAN_BELOW_TARGET"});
  EXPECT_NE(reason(j, "GEOMEAN_BELOW_TARGET")["detail"].get<std::string>().find("lower bound 0.9950"),
            std::string::npos);
}

TEST_F(ReportCmd, ScenarioBelowFloor) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto rows = good_rows();
  rows[2].speedup = 0.85;
  perf(perf_json(rows));
  EXPECT_EQ(report().exit_code, 1);
  const json j = report_json();
  EXPECT_EQ(codes(j), std::vector<std::string>{"SCENARIO_BELOW_FLOOR"});
  EXPECT_EQ(reason(j, "SCENARIO_BELOW_FLOOR")["scenarios"], json::array({"gate_c"}));
  EXPECT_EQ(scenario(j, "gate_c")["flags"], json::array({"SCENARIO_BELOW_FLOOR"}));
}

TEST_F(ReportCmd, CrossChecksOfTheCandidatesCalls) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto rows = good_rows();
  rows[0].cand.foreign = 2;
  rows[0].cand.streams = 2;
  rows[1].cand.kmin = 1;
  rows[1].cand.kmax = 2;
  rows[2].cand.memcpy = 1;
  rows[2].cand.memset = 1;
  perf(perf_json(rows));
  EXPECT_EQ(report().exit_code, 1);
  json j = report_json();
  EXPECT_EQ(reason(j, "SIDE_STREAM_WORK")["scenarios"], json::array({"gate_a"}));
  EXPECT_EQ(reason(j, "KERNEL_COUNT_CHANGED")["scenarios"], json::array({"gate_b"}));
  EXPECT_EQ(reason(j, "MEMCPY_IN_CALL")["scenarios"], json::array({"gate_c"}));
  EXPECT_EQ(reason(j, "MEMSET_IN_CALL"), nullptr);  // a flag, not a failure
  EXPECT_EQ(scenario(j, "gate_c")["flags"], json::array({"MEMCPY_IN_CALL", "MEMSET_IN_CALL"}));
  EXPECT_EQ(reason(j, "WALL_KERNEL_MISMATCH"), nullptr);

  // The bench's own checks of the timed calls fail a scenario's measurement with their kind.
  rows = good_rows();
  rows.resize(1);
  json p = perf_json(rows);
  p["failed"] = json::array(
      {{{"id", "gate_b"}, {"error", "timed-run check [side stream]: candidate on gate_b: output completed late"}},
       {{"id", "gate_c"}, {"error", "timed-run check [wrong output]: candidate on gate_c: O max abs 0.5"}}});
  perf(p);
  EXPECT_EQ(report().exit_code, 1);
  j = report_json();
  EXPECT_EQ(reason(j, "SIDE_STREAM_WORK")["scenarios"], json::array({"gate_b"}));
  EXPECT_EQ(reason(j, "CORRECTNESS_FAILED")["scenarios"], json::array({"gate_c"}));
  EXPECT_EQ(reason(j, "GEOMEAN_BELOW_TARGET"), nullptr);  // not judged on part of the suite
}

TEST_F(ReportCmd, WallOrEventFarAboveKernelTime) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto rows = good_rows();
  // gate_a: an honest kernel twice as fast as the baseline on a 512-token shape, where the host's
  // launch-and-synchronize overhead (~60 µs) is most of the wall time: not flagged.
  rows[0].cand = {0.089, 0.085, 0.145};
  rows[0].base = {0.174, 0.170, 0.230};
  // gate_b: the call spends 1 ms on the host beyond the baseline's overhead (wall time).
  rows[1].cand = {0.52, 0.50, 1.60};
  rows[1].base = {1.02, 1.00, 1.05};
  // gate_c: GPU time inside the timed call that is no kernel (event time).
  rows[2].cand = {0.90, 0.45, 0.93};
  rows[2].base = {1.00, 0.996, 1.03};
  perf(perf_json(rows));
  EXPECT_EQ(report().exit_code, 1);
  const json j = report_json();
  json m = reason(j, "WALL_KERNEL_MISMATCH");
  ASSERT_NE(m, nullptr) << j["reasons"].dump();
  EXPECT_EQ(m["scenarios"], json::array({"gate_b", "gate_c"}));
  EXPECT_NE(m["detail"].get<std::string>().find("wall time"), std::string::npos) << m["detail"];
  EXPECT_TRUE(scenario(j, "gate_a")["flags"].empty());

  // No CUPTI kernel time at all for the candidate's calls.
  rows = good_rows();
  rows[0].cand.kernel = 0;
  perf(perf_json(rows));
  EXPECT_EQ(report().exit_code, 1);
  EXPECT_EQ(reason(report_json(), "WALL_KERNEL_MISMATCH")["scenarios"], json::array({"gate_a"}));
}

TEST_F(ReportCmd, StaleAndMissingFilesAreNotThisRun) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  perf(perf_json(good_rows()));
  // Leftovers of an earlier run: older than the marker.
  const auto old = fs::last_write_time(gate / "started") - std::chrono::hours(1);
  fs::last_write_time(results / "verify.candidate.gate_b.json", old);
  fs::last_write_time(gate / "performance.json", old);
  EXPECT_EQ(report().exit_code, 1);
  json j = report_json();
  EXPECT_EQ(reason(j, "TEST_CRASHED")["scenarios"], json::array({"gate_b"}));
  EXPECT_NE(reason(j, "TEST_CRASHED")["detail"].get<std::string>().find("older than this gate run"),
            std::string::npos);
  EXPECT_NE(reason(j, "NO_PERF"), nullptr);
  EXPECT_EQ(scenario(j, "gate_b")["status"], "stale");

  // No perf JSON at all, or one without a scenario.
  all_passed();
  fs::remove(gate / "performance.json");
  EXPECT_EQ(report().exit_code, 1);
  EXPECT_EQ(codes(report_json()), std::vector<std::string>{"NO_PERF"});
  auto rows = good_rows();
  rows.pop_back();
  json p = perf_json(rows);
  p["failed"] = json::array({{{"id", "gate_c"}, {"error", "out of memory"}}});
  perf(p);
  EXPECT_EQ(report().exit_code, 1);
  j = report_json();
  EXPECT_EQ(reason(j, "NO_PERF")["scenarios"], json::array({"gate_c"}));
  EXPECT_NE(reason(j, "NO_PERF")["detail"].get<std::string>().find("out of memory"), std::string::npos);
  // A comparison of other kernels does not count.
  perf(perf_json(good_rows(), 1.05, 1.04, 1.06, "initial", "initial"));
  EXPECT_EQ(report().exit_code, 1);
  EXPECT_NE(reason(report_json(), "NO_PERF"), nullptr);

  // Without gate.setup's marker nothing is fresh.
  perf(perf_json(good_rows()));
  fs::remove(gate / "started");
  EXPECT_EQ(report().exit_code, 1);
  j = report_json();
  EXPECT_EQ(reason(j, "TEST_CRASHED")["scenarios"].size(), 3u);
  EXPECT_NE(reason(j, "TEST_CRASHED")["detail"].get<std::string>().find("gate.setup did not run"),
            std::string::npos);
}

TEST_F(ReportCmd, HarnessModifiedButNotTheCandidate) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  perf(perf_json(good_rows()));
  sb.set_candidate("// faster\n");  // the candidate may change freely
  test::write_file(sb.dir / "README.md", "docs are not harness\n");
  ASSERT_EQ(report().exit_code, 0);
  EXPECT_EQ(report_json()["provenance"]["attngate_dirty"], true);

  test::write_file(sb.dir / "verify" / "README.md", "the verifier, loosened\n");
  test::write_file(sb.dir / "bench" / "src" / "extra.cpp", "// untracked\n");
  EXPECT_EQ(report().exit_code, 1);
  json j = report_json();
  EXPECT_EQ(codes(j), std::vector<std::string>{"HARNESS_MODIFIED"});
  EXPECT_EQ(j["harness"]["modified"], json::array({"bench/src/extra.cpp", "verify/README.md"}));
  EXPECT_EQ(j["harness"]["sha256"]["verify/README.md"], sha256_hex("the verifier, loosened\n"));
  EXPECT_NE(reason(j, "HARNESS_MODIFIED")["detail"].get<std::string>().find("verify/README.md"), std::string::npos);
  EXPECT_NE(test::slurp(gate / "report.md").find("**modified**: bench/src/extra.cpp, verify/README.md"),
            std::string::npos);

  // Staged counts too; committing makes it the harness again.
  fs::remove(sb.dir / "bench" / "src" / "extra.cpp");
  test::git(sb.dir.path(), {"add", "verify/README.md"});
  EXPECT_EQ(report().exit_code, 1);
  EXPECT_EQ(report_json()["harness"]["modified"], json::array({"verify/README.md"}));
  sb.commit_all("loosen");
  EXPECT_EQ(report().exit_code, 0);
}

TEST_F(ReportCmd, OutsideGitTheHarnessIsUnverified) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  perf(perf_json(good_rows()));
  fs::remove_all(sb.dir / ".git");
  EXPECT_EQ(report().exit_code, 1);
  const json j = report_json();
  EXPECT_EQ(codes(j), std::vector<std::string>{"HARNESS_UNVERIFIED"});
  EXPECT_EQ(j["harness"]["verified"], false);
  EXPECT_EQ(j["harness"]["sha256"]["verify/README.md"], sha256_hex("the verifier\n"));
}

TEST_F(ReportCmd, TargetsFromTheEnvironmentAreAppliedAndRecorded) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  perf(perf_json(good_rows()));
  auto r = report({{"ATTNGATE_GEOMEAN_TARGET", "1.5"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  json j = report_json();
  EXPECT_EQ(j["target"]["geomean"], 1.5);
  EXPECT_EQ(j["target"]["geomean_source"], "ATTNGATE_GEOMEAN_TARGET");
  EXPECT_EQ(codes(j), std::vector<std::string>{"GEOMEAN_BELOW_TARGET"});

  r = report({{"ATTNGATE_GEOMEAN_TARGET", "0.97"}, {"ATTNGATE_SCENARIO_FLOOR", "1.06"}});
  EXPECT_EQ(r.exit_code, 1);
  j = report_json();
  EXPECT_EQ(j["target"]["geomean"], 0.97);
  EXPECT_EQ(j["target"]["scenario_floor"], 1.06);
  EXPECT_EQ(codes(j), std::vector<std::string>{"SCENARIO_BELOW_FLOOR"});

  for (const char* bad : {"abc", "1.0x", "-1", "0", "nan", "inf"}) {
    r = report({{"ATTNGATE_GEOMEAN_TARGET", bad}});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("ATTNGATE_GEOMEAN_TARGET='" + std::string(bad) + "' is not a positive number"),
              std::string::npos)
        << r.err;
  }
  r = report({{"ATTNGATE_SCENARIO_FLOOR", "lots"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("ATTNGATE_SCENARIO_FLOOR='lots'"), std::string::npos) << r.err;
  r = attngate({"report", "--build-dir", build.string(), "--scenarios", (sb.dir / "scenarios").string(), "--suite",
                "nope"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no suite 'nope'"), std::string::npos) << r.err;
}

// `attngate gate` over a stand-in gate whose setup and report are the real `attngate report`, the
// GPU tests replaced by a step that lays down prepared outcomes: the verdict, and --target reaching
// the report through the environment.
TEST_F(ReportCmd, GateRunsTheReportAndPassesTheTarget) {
  const fs::path fake = sb.dir / "fake";
  const std::string report_cmd = std::string(ATTNGATE_EXE) + " --repo " + sb.dir.path().string() +
                                 " report --build-dir ${CMAKE_BINARY_DIR} --scenarios " +
                                 (sb.dir / "scenarios").string();
  test::write_file(fake / "CMakeLists.txt",
                   "cmake_minimum_required(VERSION 3.20)\nproject(fake_gate NONE)\nenable_testing()\n"
                   "add_test(NAME gate.setup COMMAND " + report_cmd + " --prepare)\n"
                   "add_test(NAME gate.outcomes COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR}/outcomes "
                   "-DDST=${CMAKE_BINARY_DIR} -P ${CMAKE_SOURCE_DIR}/write.cmake)\n"
                   "add_test(NAME gate.report COMMAND " + report_cmd + ")\n"
                   "set_tests_properties(gate.setup PROPERTIES LABELS gate)\n"
                   "set_tests_properties(gate.outcomes PROPERTIES LABELS gate DEPENDS gate.setup)\n"
                   "set_tests_properties(gate.report PROPERTIES LABELS gate DEPENDS gate.outcomes)\n");
  // Written anew (not copied, which may keep the old times): outcomes of this run.
  test::write_file(fake / "write.cmake",
                   "file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/*)\n"
                   "foreach(f IN LISTS files)\n  file(READ ${SRC}/${f} text)\n  file(WRITE ${DST}/${f} \"${text}\")\n"
                   "endforeach()\n");
  json passed = {{"schema", "attngate.verify_result/1"}, {"status", "passed"}, {"base_seed", "7"},
                 {"runs", json::array({{{"distribution", "standard"}, {"pass", true}, {"o", {{"max_abs", 0.004}}}}})}};
  for (const auto& id : kIds)
    test::write_file(fake / "outcomes" / "verify" / "results" / ("verify.candidate." + id + ".json"), passed.dump());
  test::write_file(fake / "outcomes" / "gate" / "performance.json", perf_json(good_rows()).dump());
  auto r = run_process({"cmake", "-S", fake.string(), "-B", build.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  auto gate_run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {ATTNGATE_EXE, "--repo", sb.dir.path().string(), "gate", "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunOptions o;
    o.env = {{"ATTNGATE_GEOMEAN_TARGET", ""}, {"ATTNGATE_SCENARIO_FLOOR", ""}};
    return run_process(args, o);
  };
  r = gate_run({});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << test::slurp(gate / "attngate_gate.log");
  EXPECT_NE(r.out.find("attngate: PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("target 1.000x vs initial, floor 0.900x"), std::string::npos) << r.out;

  r = gate_run({"--target", "1.5"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("reason GEOMEAN_BELOW_TARGET"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("TARGET_NOT_APPLIED"), std::string::npos) << r.out;
  EXPECT_EQ(report_json()["target"]["geomean"], 1.5);

  r = gate_run({"--target", "0.97"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(report_json()["target"]["geomean"], 0.97);
}

// The comparison JSON exactly as attngate_bench writes it (bench's to_json on a synthetic
// measurement), read by the report: the field names of both sides agree.
TEST_F(ReportCmd, ReadsWhatTheBenchWrites) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  bench::ComparisonReport cmp;
  cmp.kernel = "candidate";
  cmp.base = "initial";
  cmp.suite = "gate";
  cmp.device = "NVIDIA H200";
  cmp.driver_version = "580.159.04";
  cmp.cuda_runtime_version = 13000;
  cmp.resamples = 200;
  const Suite suite = load_suite_file(sb.dir / "scenarios" / "gate.yaml");
  for (const Scenario& s : suite.scenarios) {
    bench::Measurement m;
    m.clock.available = true;
    m.clock.median_mhz = m.clock.before_mhz = m.clock.after_mhz = m.clock.min_mhz = m.clock.device_max_mhz = 1980;
    for (auto [name, ms] : {std::pair{"candidate", 0.9}, std::pair{"initial", 1.0}}) {
      bench::KernelSeries k;
      k.kernel = name;
      for (int i = 0; i < 30; ++i) {
        k.event_ms.push_back(ms * (1 + 0.0001 * (i % 3)));
        k.wall_ms.push_back(ms + 0.03);
      }
      for (int i = 0; i < 4; ++i) {
        bench::CallTrace t;
        t.kernels = 1;
        t.kernel_sum_ns = t.span_ns = (ms - 0.003) * 1e6;
        t.streams = {7};
        k.traces.push_back(t);
        k.traced_event_ms.push_back(ms);
        k.traced_wall_ms.push_back(ms + 0.03);
        k.traced_after.push_back(size_t(10 * (i + 1)));
      }
      m.series.push_back(k);
    }
    cmp.rows.push_back(bench::comparison_row(s, m, {s.flops(), 989.5}));
  }
  test::write_file(gate / "performance.json", bench::to_json(cmp, bench::suite_speedup(cmp)));
  auto r = report();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = report_json();
  EXPECT_NEAR(j["geomean"]["speedup"].get<double>(), 1.0 / 0.9, 1e-3);
  EXPECT_NEAR(j["geomean"]["kernel_speedup"].get<double>(), 0.997 / 0.897, 1e-6);
  const json& a = scenario(j, "gate_a");
  EXPECT_NEAR(a["candidate"]["kernel_ms"].get<double>(), 0.897, 1e-9);
  EXPECT_NEAR(a["baseline"]["wall_ms"].get<double>(), 1.03, 1e-9);
  EXPECT_EQ(a["candidate"]["kernel_count"], 1);
  EXPECT_EQ(a["candidate"]["kernel_count_changed"], false);
  EXPECT_EQ(a["candidate"]["streams"], 1);
  EXPECT_EQ(a["candidate"]["foreign_stream_kernels"], 0);
  EXPECT_NEAR(a["candidate"]["cycles"].get<double>(), 0.9e-3 * 1980e6, 1e3);
  EXPECT_EQ(j["provenance"]["driver"], "580.159.04");
  EXPECT_EQ(j["provenance"]["cuda"], "13.0");
  EXPECT_EQ(j["provenance"]["sm_clock_mhz"], 1980.0);
}

}  // namespace
}  // namespace attngate::hooks
