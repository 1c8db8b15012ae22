// `attngate report` on synthetic gate outcomes: the verdict, every reason code, freshness, tamper
// evidence, targets from the suite and the environment, report.md; and the bench's comparison JSON
// read as written (the contract between attngate_bench and the report).
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <fstream>

#include "attngate/bench/compare.hpp"
#include "attngate/gate/best_baselines.hpp"
#include "attngate/gate/candidate_tree.hpp"
#include "attngate/gate/gate_report.hpp"
#include "attngate/gate/report.hpp"
#include "attngate/gate/digest.hpp"
#include "attngate/scenario.hpp"
#include "attngate/verify/schema_check.hpp"
#include "attngate/verify/start_record.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// report.json against agent_hooks/schema/gate_report.schema.json.
std::vector<std::string> report_schema_problems(const json& j) {
  std::ifstream f(fs::path(ATTNGATE_HOOKS_DIR_FOR_TESTS) / "schema" / "gate_report.schema.json");
  return verify::schema_problems(json::parse(f), j);
}

const char* kGateYamlHead = R"(suite: gate
description: three shapes for the report tests
settings:
  geomean_target: "1.0"
  scenario_floor: "0.9"
  baseline_kernel: "initial"
)";
const char* kGateYamlScenarios = R"(scenarios:
  - {id: gate_a, batch: 1, seqlen_q: 512, seqlen_k: 512, heads_q: 2, heads_kv: 2, head_dim: 64, causal: false, dtype: bf16, tags: [mha]}
  - {id: gate_b, batch: 1, seqlen_q: 1024, seqlen_k: 1024, heads_q: 2, heads_kv: 2, head_dim: 128, causal: true, dtype: bf16, tags: [mha]}
  - {id: gate_c, batch: 2, seqlen_q: 256, seqlen_k: 256, heads_q: 4, heads_kv: 2, head_dim: 64, causal: false, dtype: bf16, tags: [gqa]}
)";
const std::string kGateYaml = std::string(kGateYamlHead) + kGateYamlScenarios;

// The gate suite with more settings lines ("  key: \"value\"\n" each).
std::string gate_yaml_with(const std::string& settings) {
  return std::string(kGateYamlHead) + settings + kGateYamlScenarios;
}

const std::vector<std::string> kIds = {"gate_a", "gate_b", "gate_c"};

// One kernel's figures on one scenario, as attngate_bench writes them (*_timing). The clocks not
// given follow from the three given, as an honest kernel's do: traced calls 1 µs slower on both
// clocks, CUPTI's kernel time against the same traced calls' event time, calls on fresh inputs 2 µs
// slower on both clocks. Run in a worker with an empty list of foreign kernels.
struct Clocks {
  double event = 1.0, kernel = 0.996, wall = 1.03;
  int kmin = 1, kmax = 1;
  double foreign = 0, streams = 1, memcpy = 0, memset = 0;
  std::optional<double> traced_event, traced_wall, cupti_minus_us, fresh_event, fresh_wall;
  // The judge's clock (bench/README.md): the worker's own events (default: the event time), the
  // judge's work before its clock, its hold kernel's longest gap, the round trips.
  std::optional<double> worker_event, alone_event;  // alone: the baseline before the candidate's worker existed
  double pre = 0.05, hold_gap_us = 2.0, reference_handoff_us = 287.5, solo_handoff_us = 287.4;
  double round_trip_correction_us = 0;  // what the bench subtracted on the worker's word (CLOCK_DISAGREE (h))
  double fresh_calls = 4, isolated = 1;
  std::string process = "worker";
  std::vector<std::string> foreign_kernels;  // mangled names outside the worker's inventory
  std::string tree;  // kernel_tree_sha256; empty: the candidate folder as it is (perf()); "none": no hash
};

struct PerfRow {
  std::string id;
  double speedup = 1.05, lo = 1.04, hi = 1.06;
  Clocks cand{1.0, 0.996, 1.03}, base{1.05, 1.046, 1.08};
  double flops = 1e10, min_bytes = 2e7;  // floor: 0.0101 ms at 989.5 TFLOPS (0.0042 ms at 4.8 TB/s)
  int gpu_processes = 3;                 // -1: NVML could not count them (written as null)
};

json timing(const std::string& name, const Clocks& c) {
  const double traced_event = c.traced_event.value_or(c.event + 0.001);
  return {{"name", name},
          {"traced_event_ms", traced_event},
          {"traced_wall_ms", c.traced_wall.value_or(c.wall + 0.001)},
          {"cupti_minus_traced_event_us", c.cupti_minus_us.value_or((c.kernel - traced_event) * 1e3)},
          {"isolated", c.isolated},
          {"fresh_calls", c.fresh_calls},
          {"fresh_event_ms", c.fresh_event.value_or(c.event + 0.002)},
          {"fresh_wall_ms", c.fresh_wall.value_or(c.wall + 0.002)},
          {"checked_calls", 5.0},
          {"inventory_kernels", 1.0},
          {"foreign_kernels", double(c.foreign_kernels.size())},
          {"foreign_kernel_names", c.foreign_kernels},
          {"kernel_tree_sha256", c.tree},
          {"process", c.process},
          {"judge_ms", c.event + 1e-3 * c.solo_handoff_us},
          {"worker_event_ms", c.worker_event.value_or(c.event)},
          {"pre_ms", c.pre},
          {"hold_gap_max_us", c.hold_gap_us},
          {"handoff_us", c.solo_handoff_us},
          {"reference_handoff_us", c.reference_handoff_us},
          {"solo_handoff_us", c.solo_handoff_us},
          {"judge_resolution_us", 0.45},
          {"judge_resolution_pct", 100 * 0.00045 / c.event},
          {"alone_event_ms", c.alone_event.value_or(c.event)},
          {"round_trip_correction_us", c.round_trip_correction_us},
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
            {"hbm_tbps", 4.8},
            {"geomean_speedup", geo},
            {"geomean_ci95", {lo, hi}},
            {"geomean_kernel_speedup", geo},
            {"geomean_wall_speedup", geo},
            {"bootstrap_resamples", 2000},
            {"wall_s", 12.5},
            {"input_seed", 123456789},
            {"sandbox", {{"enabled", true},
                         {"mechanisms", json::array({{{"name", "landlock"}, {"available", true}, {"detail", "ABI 7"}},
                                                     {{"name", "seccomp"}, {"available", true}, {"detail", "2.5.4"}}})}}},
            {"sm_clock", {{"available", true}, {"median_mhz", 1980.0}, {"min_mhz", 1900.0}, {"device_max_mhz", 1980.0},
                          {"lowest_median_mhz", 1950.0}, {"highest_median_mhz", 1980.0}, {"event_reasons", 4}}},
            {"scenarios", json::array()},
            {"failed", json::array()}};
  for (const auto& r : rows)
    j["scenarios"].push_back({{"id", r.id},
                              {"flops", r.flops},
                              {"min_bytes", r.min_bytes},
                              {"speedup", r.speedup},
                              {"speedup_ci95", {r.lo, r.hi}},
                              {"kernel_speedup", r.base.kernel / r.cand.kernel},
                              {"wall_speedup", r.base.wall / r.cand.wall},
                              {"calls", 40},
                              {"gpu_processes", r.gpu_processes < 0 ? json(nullptr) : json(r.gpu_processes)},
                              {"gpu_processes_expected", 3},
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
    // The comparison's schema, which the report checks performance.json against.
    const fs::path schema = fs::path(ATTNGATE_HOOKS_DIR_FOR_TESTS) / ".." / "bench" / "schema" / "comparison.schema.json";
    test::write_file(sb.dir / "bench" / "schema" / "comparison.schema.json", test::slurp(schema));
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
    if (status == "skipped") j["skip_reason"] = skip_reason;
    if (verified_tree != "none")
      j["kernel_tree_sha256"] = verified_tree.empty() ? candidate_tree_sha256(sb.candidate().parent_path()) : verified_tree;
    test::write_file(results / ("verify.candidate." + id + ".json"), j.dump(1));
  }
  // Where the gate's tests leave their start records (the report's default).
  fs::path records() const { return verify::start_records_dir(results); }
  // A start record as a gate test writes it (verify/start_record.hpp), started `ago_s` seconds ago,
  // owing `writes`.
  void start_record(const std::string& test, double ago_s, const std::vector<std::string>& writes) {
    const fs::path file = verify::start_record_file(records(), test);
    verify::StartRecord r = verify::start_record_now(file, writes);
    r.started_unix_ms -= int64_t(ago_s * 1e3);
    verify::write_start_record(file, r);
  }
  // The worker build the verify results name; empty: the candidate folder as it is; "none": no hash.
  std::string verified_tree;
  std::string skip_reason = "no_device";  // of a skipped result
  void all_passed() {
    for (const auto& id : kIds) result(id, "passed");
  }
  // A candidate row timed in a worker names the build like a verify result: an empty hash is the
  // candidate folder as it is, "none" no hash at all.
  void perf(json j) {
    if (!j.contains("scenarios") || !j["scenarios"].is_array()) return test::write_file(gate / "performance.json", j.dump(1));
    for (auto& row : j["scenarios"]) {
      if (!row.is_object() || !row.contains("kernel_timing") || !row["kernel_timing"].is_object()) continue;
      json& t = row["kernel_timing"];
      if (t.value("process", "") != "worker" || !t.contains("kernel_tree_sha256")) continue;
      if (t["kernel_tree_sha256"] == "none") t["kernel_tree_sha256"] = "";
      else if (t["kernel_tree_sha256"] == "") t["kernel_tree_sha256"] = candidate_tree_sha256(sb.candidate().parent_path());
    }
    test::write_file(gate / "performance.json", j.dump(1));
  }

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
  EXPECT_TRUE(report_schema_problems(j).empty()) << j.dump(1);
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
  EXPECT_EQ(p["candidate_tree"], "kernels/candidate");
  EXPECT_EQ(p["candidate_tree_sha256"], candidate_tree_sha256(sb.candidate().parent_path()));
  EXPECT_EQ(p["candidate_tree_sha256_built"], candidate_tree_sha256(sb.candidate().parent_path()));
  const json& pol = j["policy"];
  EXPECT_EQ(pol["clock_tolerance"], 0.05);
  EXPECT_EQ(pol["clock_tolerance_source"], "default");
  EXPECT_EQ(pol["clock_slack_ms"], 0.03);
  EXPECT_EQ(pol["clock_slack_ms_source"], "default");
  EXPECT_EQ(pol["wall_slack_ms"], 0.3);
  EXPECT_EQ(pol["wall_slack_ms_source"], "default");
  EXPECT_EQ(pol["candidate_foreign_kernels"], "fail");
  EXPECT_EQ(pol["baseline_foreign_kernels"], "allow");
  EXPECT_EQ(pol["nondeterminism"], "fail");
  EXPECT_NEAR(a["floor_ms"].get<double>(), 1e3 * 1e10 / 989.5e12, 1e-12);
  EXPECT_EQ(a["candidate"]["process"], "worker");
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

TEST_F(ReportCmd, MissingResultIsExplainedByItsTestsStartRecord) {
  ASSERT_EQ(prepare().exit_code, 0);
  result("gate_a", "passed");
  perf(perf_json(good_rows()));
  // gate_b's batch started 900 s ago, as long as its timeout, and wrote nothing; gate_c's started
  // 2 s ago and died.
  start_record("verify.batch.gate.1of2", 900.5, {"verify.candidate.gate_b.json"});
  start_record("verify.batch.gate.2of2", 2, {"verify.candidate.gate_c.json"});
  auto r = report({}, {"--verify-timeout", "900"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  json j = report_json();
  EXPECT_TRUE(report_schema_problems(j).empty()) << j.dump(1);  // rows without timings too
  EXPECT_EQ(j["verdict"], "fail");
  json timeout = reason(j, "TEST_TIMEOUT");
  ASSERT_NE(timeout, nullptr) << j["reasons"].dump();
  EXPECT_EQ(timeout["scenarios"], json::array({"gate_b"}));
  EXPECT_NE(timeout["detail"].get<std::string>().find("its timeout is 900 s"), std::string::npos) << timeout;
  json crash = reason(j, "TEST_CRASHED");
  ASSERT_NE(crash, nullptr) << j["reasons"].dump();
  EXPECT_EQ(crash["scenarios"], json::array({"gate_c"}));
  EXPECT_NE(crash["detail"].get<std::string>().find("verify.batch.gate.2of2 started at "), std::string::npos) << crash;
  EXPECT_NE(crash["detail"].get<std::string>().find("ended without writing its result"), std::string::npos) << crash;
  EXPECT_EQ(scenario(j, "gate_b")["status"], "missing");

  // gate.performance waits for every gate verify test: one that started 1 s after gate_b's batch
  // bounds how long that batch ran, so it crashed, whatever the time since.
  start_record("gate.performance", 899.5, {"performance.json"});
  EXPECT_EQ(report({}, {"--verify-timeout", "900"}).exit_code, 1);
  EXPECT_EQ(reason(report_json(), "TEST_TIMEOUT"), nullptr);
  EXPECT_EQ(reason(report_json(), "TEST_CRASHED")["scenarios"], json::array({"gate_b", "gate_c"}));

  // Without a start record a missing result's test did not run; a record from before gate.setup's
  // marker is another run's.
  fs::remove(verify::start_record_file(records(), "verify.batch.gate.1of2"));
  const auto old = fs::last_write_time(gate / "started") - std::chrono::hours(1);
  fs::last_write_time(verify::start_record_file(records(), "verify.batch.gate.2of2"), old);
  EXPECT_EQ(report().exit_code, 1);
  crash = reason(report_json(), "TEST_CRASHED");
  EXPECT_EQ(crash["scenarios"], json::array({"gate_b", "gate_c"}));
  EXPECT_NE(crash["detail"].get<std::string>().find("did not run in this gate run"), std::string::npos) << crash;

  // A batch whose workers did not start says so in a record that owes nothing yet.
  verify::write_failed_start_record(verify::start_record_file(records(), "verify.batch.gate.1of2"),
                                    "worker attngate_worker_candidate: hello failed: it exited with status 134");
  EXPECT_EQ(report().exit_code, 1);
  crash = reason(report_json(), "TEST_CRASHED");
  EXPECT_NE(crash["detail"].get<std::string>().find("verify.batch.gate.1of2 failed as it started: worker "
                                                    "attngate_worker_candidate: hello failed"),
            std::string::npos)
      << crash;
}

TEST_F(ReportCmd, MissingPerformanceIsExplainedByItsStartRecord) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  // gate.performance skipped without a GPU: its record says so, not its output.
  verify::StartRecord skipped = verify::start_record_now(verify::start_record_file(records(), "gate.performance"),
                                                         {"performance.json"});
  skipped.skipped = "needs a CUDA GPU: no CUDA-capable device is detected";
  verify::write_start_record(verify::start_record_file(records(), "gate.performance"), skipped);
  EXPECT_EQ(report().exit_code, 1);
  json no_perf = reason(report_json(), "NO_PERF");
  ASSERT_NE(no_perf, nullptr) << report_json()["reasons"].dump();
  EXPECT_NE(no_perf["detail"].get<std::string>().find("skipped: needs a CUDA GPU"), std::string::npos) << no_perf;
  // Started as long ago as its timeout: a timeout.
  start_record("gate.performance", 1800, {"performance.json"});
  EXPECT_EQ(report({}, {"--perf-timeout", "1800"}).exit_code, 1);
  EXPECT_NE(reason(report_json(), "TEST_TIMEOUT"), nullptr) << report_json()["reasons"].dump();
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
  // NO_DEVICE comes from the result's typed skip reason, not its text: a kernel that declines the
  // shape is a skip (never a pass), not a missing device.
  skip_reason = "unsupported";
  result("gate_a", "skipped", 0, "no CUDA device of the required architecture (quoted)");
  report();
  EXPECT_EQ(reason(report_json(), "TEST_SKIPPED")["scenarios"], json::array({"gate_a"}));
  EXPECT_EQ(reason(report_json(), "NO_DEVICE"), nullptr);
  skip_reason = "no_device";
  result("gate_a", "skipped", 0, "no CUDA device of the required architecture");
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

// A verify result is read into attngate::verify::ResultDocument: one that is not such a document
// (another schema, a field of the wrong type) is unreadable, a crash, never a pass.
TEST_F(ReportCmd, AResultThatIsNotAVerifyResultDocumentIsUnreadable) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  json wrong_type = json::parse(test::slurp(results / "verify.candidate.gate_a.json"));
  wrong_type["runs"][0]["pass"] = "yes";
  test::write_file(results / "verify.candidate.gate_a.json", wrong_type.dump(1));
  json other_schema = json::parse(test::slurp(results / "verify.candidate.gate_b.json"));
  other_schema["schema"] = "attngate.verify_result/2";
  test::write_file(results / "verify.candidate.gate_b.json", other_schema.dump(1));
  perf(perf_json(good_rows()));
  auto r = report();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json j = report_json();
  json crash = reason(j, "TEST_CRASHED");
  ASSERT_NE(crash, nullptr);
  EXPECT_EQ(crash["scenarios"], json::array({"gate_a", "gate_b"}));
  EXPECT_NE(crash["detail"].get<std::string>().find("verify.candidate.gate_a.json: not a attngate.verify_result/1"),
            std::string::npos)
      << crash["detail"];
  EXPECT_EQ(scenario(j, "gate_a")["status"], "unreadable");
  EXPECT_EQ(scenario(j, "gate_b")["status"], "unreadable");
  EXPECT_EQ(scenario(j, "gate_c")["status"], "passed");
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
      {{{"id", "gate_b"}, {"kind", "wrong output"}, {"error", "timed-run check [wrong output]: candidate on gate_b: O max abs 0.5"}}});
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
  EXPECT_EQ(reason(j, "MEMSET_IN_CALL")["scenarios"], json::array({"gate_c"}));  // a failure now too
  EXPECT_EQ(scenario(j, "gate_c")["flags"], json::array({"MEMCPY_IN_CALL", "MEMSET_IN_CALL"}));
  EXPECT_EQ(reason(j, "WALL_KERNEL_MISMATCH"), nullptr);

  // The bench's own checks of the timed calls fail a scenario's measurement with their kind:
  // gate_b and gate_c failed with (kind, error) each; the report's codes for them.
  rows = good_rows();
  rows.resize(1);
  auto judged = [&](const std::array<std::string, 2>& b, const std::array<std::string, 2>& c) {
    json p = perf_json(rows);
    p["failed"] = json::array({{{"id", "gate_b"}, {"kind", b[0]}, {"error", b[1]}},
                               {{"id", "gate_c"}, {"kind", c[0]}, {"error", c[1]}}});
    perf(p);
    EXPECT_EQ(report().exit_code, 1);
    return report_json();
  };
  j = judged({"side stream", "timed-run check [side stream]: candidate on gate_b: output completed late"},
             {"wrong output", "timed-run check [wrong output]: candidate on gate_c: O max abs 0.5"});
  EXPECT_EQ(reason(j, "SIDE_STREAM_WORK")["scenarios"], json::array({"gate_b"}));
  EXPECT_EQ(reason(j, "CORRECTNESS_FAILED")["scenarios"], json::array({"gate_c"}));
  EXPECT_EQ(reason(j, "GEOMEAN_BELOW_TARGET"), nullptr);  // not judged on part of the suite
  // The kind decides, never the text: the judge clock is CLOCK_DISAGREE; an error that merely quotes
  // a check is a missing measurement.
  j = judged({"judge clock", "a call's judge time was 3.9 us"},
             {"error", "timed-run check [wrong output]: quoted by a worker"});
  EXPECT_EQ(reason(j, "CLOCK_DISAGREE")["scenarios"], json::array({"gate_b"}));
  EXPECT_EQ(reason(j, "NO_PERF")["scenarios"], json::array({"gate_c"}));
  EXPECT_EQ(reason(j, "CORRECTNESS_FAILED"), nullptr);
}

TEST_F(ReportCmd, WallOrEventFarAboveKernelTime) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto in_process = [](Clocks c) {
    c.process = "in-process", c.isolated = 0;
    return c;
  };
  auto rows = good_rows();
  // gate_a: an honest kernel twice as fast as the baseline on a 512-token shape, where the host's
  // launch-and-synchronize overhead (~60 µs) is most of the wall time: not flagged.
  rows[0].cand = {0.089, 0.085, 0.145};
  rows[0].base = {0.174, 0.170, 0.230};
  // gate_b: GPU time inside the timed call that is no kernel (event time), in a worker: the
  // event-time part of the rule judges a worker's candidate too.
  rows[1].cand = {0.90, 0.45, 0.93};
  rows[1].base = {1.00, 0.996, 1.03};
  // gate_c: an in-process candidate whose call spends 1 ms on the host beyond the baseline's
  // overhead (wall time).
  rows[2].cand = in_process({0.52, 0.50, 1.60});
  rows[2].base = {1.02, 1.00, 1.05};
  // Judges `rows`; WALL_KERNEL_MISMATCH must name `ids`, its detail hold `part`, gate_a stay clean.
  auto expect_mismatch = [&](const std::vector<PerfRow>& judged, const json& ids, const std::string& part) {
    perf(perf_json(judged));
    EXPECT_EQ(report().exit_code, 1);
    json r = report_json();
    json m = reason(r, "WALL_KERNEL_MISMATCH");
    EXPECT_NE(m, nullptr) << r["reasons"].dump();
    if (m.is_null()) return r;
    EXPECT_EQ(m["scenarios"], ids);
    EXPECT_NE(m["detail"].get<std::string>().find(part), std::string::npos) << m["detail"];
    EXPECT_TRUE(scenario(r, "gate_a")["flags"].empty()) << scenario(r, "gate_a")["flags"];
    return r;
  };
  json j = expect_mismatch(rows, json::array({"gate_b", "gate_c"}),
                           "gate_b: event time 0.9000 ms is 2.00x the CUPTI kernel time 0.4500 ms; its excess 0.4500 ms "
                           "exceeds the baseline's 0.0040 ms by more than 0.0900 ms");

  // The judge's wall clock around a worker's call carries the process round trip, whose median
  // differed by up to 0.17 ms between two identical kernels on the H200. gate_a and gate_b: a
  // candidate ~8x faster than its wall time suggests, its overhead 0.17 ms above the baseline's
  // (within CLOCK_DISAGREE's wall tolerance 0.05 x 0.174 + 0.3 ms). In a worker it is not judged
  // on the wall clock (gate_a); the same figures in the judge's process still are (gate_b).
  // gate_c: a worker's candidate with 1 ms of host work is CLOCK_DISAGREE (a)'s, not this rule's.
  rows = good_rows();
  for (auto& row : {&rows[0], &rows[1]}) {
    row->cand = {0.089, 0.085, 0.859};
    row->base = {0.174, 0.170, 0.774};
  }
  rows[1].cand = in_process(rows[1].cand);
  rows[2].cand = {0.52, 0.50, 1.60};
  rows[2].base = {1.02, 1.00, 1.05};
  j = expect_mismatch(rows, json::array({"gate_b"}),
                      "gate_b: wall time 0.8590 ms is 10.11x the CUPTI kernel time 0.0850 ms; its excess 0.7740 ms "
                      "exceeds the baseline's 0.6040 ms by more than 0.0250 ms");
  EXPECT_EQ(scenario(j, "gate_b")["flags"], json::array({"WALL_KERNEL_MISMATCH", "NOT_ISOLATED"}));
  EXPECT_EQ(scenario(j, "gate_c")["flags"], json::array({"CLOCK_DISAGREE"}));
  EXPECT_NE(reason(j, "CLOCK_DISAGREE")["detail"].get<std::string>().find("gate_c: (a) wall vs event"),
            std::string::npos)
      << reason(j, "CLOCK_DISAGREE");

  // No CUPTI kernel time at all for the candidate's calls, in a worker or not.
  rows = good_rows();
  rows[0].cand.kernel = 0;
  rows[1].cand = in_process(rows[1].cand), rows[1].cand.kernel = 0;
  perf(perf_json(rows));
  EXPECT_EQ(report().exit_code, 1);
  j = report_json();
  EXPECT_EQ(reason(j, "WALL_KERNEL_MISMATCH")["scenarios"], json::array({"gate_a", "gate_b"}));
  EXPECT_NE(reason(j, "WALL_KERNEL_MISMATCH")["detail"].get<std::string>().find(
                "gate_a: CUPTI recorded no kernel time for the candidate's traced calls"),
            std::string::npos);
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
  p["failed"] = json::array({{{"id", "gate_c"}, {"kind", "error"}, {"error", "out of memory"}}});
  perf(p);
  EXPECT_EQ(report().exit_code, 1);
  j = report_json();
  EXPECT_EQ(reason(j, "NO_PERF")["scenarios"], json::array({"gate_c"}));
  EXPECT_NE(reason(j, "NO_PERF")["detail"].get<std::string>().find("out of memory"), std::string::npos);
  // A comparison of other kernels does not count.
  perf(perf_json(good_rows(), 1.05, 1.04, 1.06, "initial", "initial"));
  EXPECT_EQ(report().exit_code, 1);
  EXPECT_NE(reason(report_json(), "NO_PERF"), nullptr);
  // Nor one that is not a comparison document (bench/schema/comparison.schema.json).
  p = perf_json(good_rows());
  p["scenarios"][1].erase("kernel_timing");
  p["geomean_ci95"] = "narrow";
  perf(p);
  EXPECT_EQ(report().exit_code, 1);
  EXPECT_EQ(codes(report_json()), std::vector<std::string>{"NO_PERF"});
  EXPECT_NE(reason(report_json(), "NO_PERF")["detail"].get<std::string>().find(
                "is not an attngate.comparison/1 document (bench/schema/comparison.schema.json): $.geomean_ci95: "
                "\"narrow\": Value type not permitted by 'type' constraint.; $.scenarios[1]: Missing required "
                "property 'kernel_timing'."),
            std::string::npos)
      << reason(report_json(), "NO_PERF").dump();

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
  sb.set_candidate("// faster\n");  // the candidate may change freely (before it is built, checked and timed)
  all_passed();
  perf(perf_json(good_rows()));
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
                   "add_test(NAME gate.outcomes COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_CURRENT_SOURCE_DIR}/outcomes "
                   "-DDST=${CMAKE_BINARY_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/write.cmake)\n"
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
                 {"runs", json::array({{{"distribution", "standard"}, {"pass", true}, {"o", {{"max_abs", 0.004}}}}})},
                 {"kernel_tree_sha256", candidate_tree_sha256(sb.candidate().parent_path())}};  // checked in its worker
  for (const auto& id : kIds)
    test::write_file(fake / "outcomes" / "verify" / "results" / ("verify.candidate." + id + ".json"), passed.dump());
  auto rows = good_rows();  // timed from the candidate folder as it is
  for (auto& r : rows) r.cand.tree = candidate_tree_sha256(sb.candidate().parent_path());
  test::write_file(fake / "outcomes" / "gate" / "performance.json", perf_json(rows).dump());
  // attngate gate runs only a build of the repository it judges: the sandbox's root includes the
  // fake (git ignores that file).
  test::write_file(sb.dir / "CMakeLists.txt", "cmake_minimum_required(VERSION 3.20)\nproject(fake_root NONE)\n"
                                              "enable_testing()\nadd_subdirectory(fake)\n");
  {
    std::ofstream exclude(sb.dir / ".git" / "info" / "exclude", std::ios::app);
    exclude << "/CMakeLists.txt\n/fake/\n";
  }
  auto r = run_process({"cmake", "-S", sb.dir.path().string(), "-B", build.string()});
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

// Baselines in the agent's view: the best measured baseline per scenario on this GPU
// (bench/baselines/<gpu>.json), the candidate's fraction of it, and the limit question's context.
json best_entry(const std::string& library, double tflops, bool correct = true) {
  return {{"library", library}, {"tflops", tflops}, {"ms", 0.5}, {"date", "2026-12-01"}, {"suite", "gate"},
          {"correct", correct}, {"source", "bench/results/2026-12-01-h200"}};
}

TEST_F(ReportCmd, BestBaselinesGiveEachScenarioItsFractionOfTheBest) {
  const json best = {{"schema", kBestBaselinesSchema},
                     {"gpu", "NVIDIA H200"},
                     {"updated", "2026-12-01T10:00:00Z"},
                     {"scenarios", {{"gate_a", best_entry("cudnn", 600.0)}, {"gate_b", best_entry("fa3", 750.0)},
                                    {"gate_c", best_entry("broken", 900.0, false)}}}};
  test::write_file(sb.dir / "bench" / "baselines" / "nvidia_h200.json", best.dump(1));
  sb.commit_all("best baselines");  // under bench/: part of the harness
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  perf(perf_json(good_rows()));  // the candidate: 300 TFLOPS on every scenario
  auto r = report();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = report_json();
  const json& a = scenario(j, "gate_a");
  EXPECT_EQ(a["best_baseline"], json({{"library", "cudnn"}, {"tflops", 600.0}, {"date", "2026-12-01"}}));
  EXPECT_DOUBLE_EQ(a["fraction_of_best"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(scenario(j, "gate_b")["fraction_of_best"].get<double>(), 0.4);
  EXPECT_EQ(scenario(j, "gate_c")["best_baseline"], nullptr);  // an incorrect baseline is no bar
  EXPECT_EQ(scenario(j, "gate_c")["fraction_of_best"], nullptr);
  EXPECT_EQ(j["baselines"], json({{"cudnn", {{"gate_a", 600.0}}}, {"fa3", {{"gate_b", 750.0}}}}));
  EXPECT_EQ(j["best_baselines"]["note"], "");
  EXPECT_EQ(j["best_baselines"]["updated"], "2026-12-01T10:00:00Z");
  const std::string md = test::slurp(gate / "report.md");
  EXPECT_NE(md.find("| TFLOPS (% peak) | best baseline TFLOPS (fraction) | flags |"), std::string::npos) << md;
  EXPECT_NE(md.find("300.0 (30.3%) | cudnn 600.0 (50%) |"), std::string::npos) << md;
  EXPECT_NE(md.find("300.0 (30.3%) | n/a |"), std::string::npos) << md;

  GateReport parsed = load_report(gate / "report.json");
  ASSERT_TRUE(parsed.scenarios[1].best_baseline.has_value());
  EXPECT_EQ(parsed.scenarios[1].best_baseline->library, "fa3");
  EXPECT_DOUBLE_EQ(*parsed.scenarios[1].fraction_of_best, 0.4);
  // The limit question's context names the best library and its TFLOPS per scenario.
  ASSERT_EQ(cmd_record(sb.ctx, gate / "report.json"), kExitPass) << sb.err.str();
  sb.clear_streams();
  ASSERT_EQ(cmd_ask(sb.ctx, "limit", std::nullopt), kExitPass) << sb.err.str();
  EXPECT_NE(sb.out.str().find("  best baseline per scenario:\n"
                              "    gate_a: cudnn 600.0 TFLOPS, the candidate 300.0 (50%)\n"
                              "    gate_b: fa3 750.0 TFLOPS, the candidate 300.0 (40%)\n"),
            std::string::npos)
      << sb.out.str();
  EXPECT_EQ(sb.out.str().find("unknown"), std::string::npos) << sb.out.str();
}

TEST_F(ReportCmd, NoBestBaselineFileIsSaidAndTheGateGoesOn) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  perf(perf_json(good_rows()));
  auto r = report();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = report_json();
  const std::string note = "no best-baseline file for NVIDIA H200 (" +
                           (sb.dir / "bench" / "baselines" / "nvidia_h200.json").string() + ")";
  EXPECT_EQ(j["best_baselines"]["note"], note);
  EXPECT_EQ(j["baselines"], json::object());
  EXPECT_EQ(scenario(j, "gate_a")["best_baseline"], nullptr);
  EXPECT_NE(test::slurp(gate / "report.md").find("- best baselines: " + note), std::string::npos);
}

TEST(BestBaselines, FileNamedByTheGpuSlugAndMalformedFilesAreSkipped) {
  EXPECT_EQ(gpu_slug("NVIDIA H200"), "nvidia_h200");
  EXPECT_EQ(gpu_slug("NVIDIA H100 80GB HBM3"), "nvidia_h100_80gb_hbm3");
  EXPECT_EQ(gpu_slug("NVIDIA GH200 (480GB)"), "nvidia_gh200__480gb_");
  test::TempDir repo;
  EXPECT_EQ(best_baselines_file(repo.path(), "NVIDIA H200"), repo / "bench/baselines/nvidia_h200.json");
  test::write_file(repo / "bench" / "baselines" / "nvidia_h200.json", R"({"schema": "attngate.best_baselines/0"})");
  BestBaselines b = load_best_baselines(repo.path(), "NVIDIA H200");
  EXPECT_TRUE(b.scenarios.empty());
  EXPECT_NE(b.info.note.find("is not a attngate.best_baselines/1 document"), std::string::npos) << b.info.note;
  test::write_file(repo / "bench" / "baselines" / "nvidia_h200.json", "{not json");
  EXPECT_FALSE(load_best_baselines(repo.path(), "NVIDIA H200").info.note.empty());
  EXPECT_NE(load_best_baselines(repo.path(), "").info.note.find("names no GPU"), std::string::npos);
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
  cmp.peak_tflops = 989.5;
  cmp.hbm_tbps = 4.8;
  cmp.resamples = 200;
  cmp.sandbox = {true, {{"landlock", true, "ABI 7"}, {"seccomp", true, "2.5.4"}}};
  const std::string tree = candidate_tree_sha256(sb.candidate().parent_path());
  const Suite suite = load_suite_file(sb.dir / "scenarios" / "gate.yaml");
  for (const Scenario& s : suite.scenarios) {
    bench::Measurement m;
    m.clock.available = true;
    m.clock.median_mhz = m.clock.before_mhz = m.clock.after_mhz = m.clock.min_mhz = m.clock.device_max_mhz = 1980;
    // The judge's clock: a round trip of 0.2875 ms measured alone and again with the baseline.
    m.handoff_ms = m.solo_handoff_ms = 0.2875;
    m.reference_handoff_ms = 0.2876;
    m.judge_resolution_ms = 0.00045;
    for (auto [name, ms] : {std::pair{"candidate", 0.9}, std::pair{"initial", 1.0}}) {
      bench::KernelSeries k;
      k.kernel = name;
      k.isolated = true;  // both in workers, the judge's wall clock ~30 µs above the event time
      k.kernel_tree_sha256 = std::string(name) == "candidate" ? tree : std::string(64, 'a');
      k.inventory = {"_Z3fwdv"};
      k.checked_calls = 4;
      k.fresh_event_ms = {ms * 1.001, ms * 1.002};
      k.fresh_wall_ms = {ms * 1.001 + 0.03, ms * 1.002 + 0.03};
      for (int i = 0; i < 30; ++i) {
        k.event_ms.push_back(ms * (1 + 0.0001 * (i % 3)));
        k.judge_ms.push_back(k.event_ms.back() + m.handoff_ms);
        k.worker_event_ms.push_back(k.event_ms.back());
        k.pre_ms.push_back(0.05);
        k.wall_ms.push_back(ms + 0.03);
      }
      k.hold_gap_max_us = 2;
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
    bench::ComparisonRow row = bench::comparison_row(s, m, {s.flops(), 989.5});
    row.base.fields.push_back({"alone_event_ms", 1.0001});  // as attngate_bench adds it: the baseline alone
    cmp.rows.push_back(row);
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
  EXPECT_EQ(j["provenance"]["candidate_tree_sha256_built"], tree);
  EXPECT_EQ(a["candidate"]["process"], "worker");
  EXPECT_EQ(a["candidate"]["isolated"], 1.0);
  EXPECT_NEAR(a["candidate"]["judge_ms"].get<double>(), 0.9 + 0.2875, 1e-3);
  EXPECT_NEAR(a["baseline"]["solo_handoff_us"].get<double>(), 287.5, 1e-9);
  EXPECT_NEAR(a["baseline"]["judge_resolution_pct"].get<double>(), 100 * 0.00045 / 1.0, 1e-3);
  EXPECT_EQ(a["candidate"]["fresh_calls"], 2.0);
  EXPECT_TRUE(a["flags"].empty()) << a["flags"];
  EXPECT_TRUE(a["floor_ms"].is_number());
}


// ---- Issue 12's rules: isolation, every clock, plausibility, inventory, determinism, provenance ----

// The policy settings live in the committed gate suite (a change of it is a harness change).
class ReportPolicy : public ReportCmd {
 protected:
  void settings(const std::string& lines) {
    test::write_file(sb.dir / "scenarios" / "gate.yaml", gate_yaml_with(lines));
    sb.commit_all("policy");
  }
  std::string tree_now() const { return candidate_tree_sha256(sb.candidate().parent_path()); }
  // An honest kernel in a worker, event time e and the judge's wall time w: CUPTI 3 µs under the
  // event time of the same traced calls, traced calls 1.5 µs (event) and 2.5 µs (wall) slower,
  // calls on fresh inputs 8 µs slower on both clocks (cold L2).
  static Clocks worker(double e, double w) {
    Clocks c{e, e - 0.003, w};
    c.traced_event = e + 0.0015;
    c.traced_wall = w + 0.0025;
    c.cupti_minus_us = -3.0;
    c.fresh_event = e + 0.008;
    c.fresh_wall = w + 0.008;
    return c;
  }
  // Every scenario of the suite as an A/A comparison in two workers gives it: both kernels equally
  // fast, the judge's wall clock 40 µs above the event time for both (the IPC round trip and the
  // NaN probe); the candidate's worker built from the tree on disk.
  std::vector<PerfRow> aa_rows() const {
    std::vector<PerfRow> rows = good_rows();
    for (auto& r : rows) {
      r.speedup = 1.0005, r.lo = 0.999, r.hi = 1.002;
      r.cand = worker(0.500, 0.540);
      r.base = worker(0.5003, 0.5403);
      r.cand.tree = tree_now();
      r.base.tree = std::string(64, 'b');  // the baseline's own folder: not compared
      r.flops = 2.4e11;                     // ~49% of the dense peak at 0.5 ms (floor 0.2425 ms)
      r.min_bytes = 6.7e7;                  // 0.014 ms at 4.8 TB/s
    }
    return rows;
  }
  RunResult judge(const std::vector<PerfRow>& rows) {
    perf(perf_json(rows, 1.0005, 0.999, 1.002));
    return report({{"ATTNGATE_GEOMEAN_TARGET", "0.95"}, {"ATTNGATE_SCENARIO_FLOOR", "0.9"}});
  }
  // Judges the rows, expecting a failure with `code` on exactly `ids` and `part` in its detail.
  json expect_reason(const std::vector<PerfRow>& rows, const std::string& code, const json& ids, const std::string& part) {
    EXPECT_EQ(judge(rows).exit_code, 1);
    json j = report_json();
    EXPECT_EQ(reason(j, code)["scenarios"], ids) << j["reasons"].dump();
    EXPECT_TRUE(has(detail(j, code), part)) << detail(j, code);
    return j;
  }
  void expect_pass(const std::vector<PerfRow>& rows) {
    auto r = judge(rows);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err << report_json()["reasons"].dump();
  }
  // The verify result of a scenario whose second distribution failed with these reasons.
  void failed_with(const std::string& id, const std::vector<std::string>& reasons) {
    json run = {{"distribution", "standard"}, {"pass", true}, {"reasons", json::array()}, {"o", {{"max_abs", 0.004}}}};
    json failing = {{"distribution", "outliers"}, {"pass", false}, {"reasons", reasons}, {"o", {{"max_abs", 0.005}}}};
    json j = {{"schema", "attngate.verify_result/1"}, {"kernel", "candidate"}, {"scenario", id}, {"suite", "gate"},
              {"status", "failed"}, {"detail", ""}, {"base_seed", "12345"}, {"runs", json::array({run, failing})},
              {"kernel_tree_sha256", tree_now()}};
    test::write_file(results / ("verify.candidate." + id + ".json"), j.dump(1));
  }
  // A policy value the report cannot apply: exit 2 naming the setting.
  void expect_bad_setting(const std::string& key, const std::string& value, const std::string& why) {
    settings("  " + key + ": \"" + value + "\"\n");
    auto r = judge(aa_rows());
    EXPECT_EQ(r.exit_code, 2) << key << "=" << value;
    EXPECT_TRUE(has(r.err, "gate.yaml settings." + key + "='" + value + "' is not " + why)) << r.err;
  }
  static std::string detail(const json& r, const std::string& code) {
    json x = reason(r, code);
    return x.is_null() ? std::string("<no ") + code + ">" : x["detail"].get<std::string>();
  }
  static bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
};

TEST_F(ReportPolicy, HonestAAFiguresWithHarnessOverheadPassEveryRule) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  expect_pass(aa_rows());
  json j = report_json();
  for (const auto& id : kIds) EXPECT_TRUE(scenario(j, id)["flags"].empty()) << id << scenario(j, id)["flags"];
  EXPECT_EQ(j["provenance"]["candidate_tree_sha256_built"], tree_now());
  EXPECT_EQ(j["provenance"]["candidate_tree_sha256"], tree_now());
  EXPECT_NEAR(scenario(j, "gate_a")["floor_ms"].get<double>(), 1e3 * 2.4e11 / 989.5e12, 1e-9);
  EXPECT_NE(test::slurp(gate / "report.md").find("- policy: the candidate runs in a worker process"), std::string::npos);
  EXPECT_NE(test::slurp(gate / "report.md")
                .find("- the judge's clock: a round trip of 287.4 us subtracted from every call (alone: 287.4 us); its "
                      "resolution at most 0.090 % of a call (gate_a)"),
            std::string::npos)
      << test::slurp(gate / "report.md");

  // An honest candidate twice as fast, at ~97% of the peak, where the wall overhead is 14% of its
  // wall time: still quiet.
  auto rows = aa_rows();
  rows[0].speedup = 2.0, rows[0].lo = 1.98, rows[0].hi = 2.02;
  rows[0].cand = worker(0.25, 0.29);
  rows[0].cand.tree = tree_now();
  expect_pass(rows);
}

TEST_F(ReportPolicy, CandidateChangedWhenVerificationJudgedAnotherBuildThanTheTimedOne) {
  ASSERT_EQ(prepare().exit_code, 0);
  auto rows = aa_rows();
  for (auto& r : rows) r.cand.tree = tree_now();
  verified_tree = std::string(64, 'b');  // verified a build of another tree
  all_passed();
  expect_reason(rows, "CANDIDATE_CHANGED", json::array(),
                         "verification judged build(s) " + verified_tree + " of kernels/candidate, the timing build " +
                             tree_now() + ": the candidate was rebuilt between the gate's tests");
  verified_tree = "none";  // results that name no build cannot be tied to the timed one
  all_passed();
  expect_reason(rows, "CANDIDATE_CHANGED", json::array(),
                "3 verify result(s) of candidate name no build of kernels/candidate (first: gate_a), while the timed "
                "worker was built from " + tree_now() + ": verification cannot be tied to the timed build");
  verified_tree = std::string(1, '\0') + tree_now().substr(1);  // the hash with its first byte blanked
  all_passed();
  expect_reason(rows, "CANDIDATE_CHANGED", json::array(), "3 verify result(s) of candidate name no build");
  verified_tree = tree_now();  // the same build: quiet
  all_passed();
  expect_pass(rows);

  // A worker whose hash was blanked in both judges (the sandbox keeps it from telling them apart):
  // its rows name no build, nor do the verify results.
  verified_tree = "none";
  all_passed();
  for (auto& r : rows) r.cand.tree = "none";
  expect_reason(rows, "CANDIDATE_CHANGED", json::array(),
                "3 scenario(s) of candidate were timed in a worker that named no build of kernels/candidate "
                "(first: gate_a): the timing cannot be tied to the folder judged");
  // A blanked first byte (what cheat_build_hash_when_verified does) is no build either.
  for (auto& r : rows) r.cand.tree = std::string(1, '\0') + tree_now().substr(1);
  expect_reason(rows, "CANDIDATE_CHANGED", json::array(), "3 scenario(s) of candidate were timed in a worker that named no build");
}

TEST_F(ReportPolicy, NotIsolatedWhenTheCandidateRanInTheJudgesProcess) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto rows = aa_rows();
  for (auto& row : rows) row.base.process = "in-process", row.base.isolated = 0;  // the baseline may
  rows[0].cand.process = "in-process", rows[0].cand.isolated = 0;
  rows[1].cand.isolated = 0;  // the two fields disagree: not isolated either
  rows[2].cand.process = "";  // not recorded
  json j = expect_reason(rows, "NOT_ISOLATED", {"gate_a", "gate_b", "gate_c"},
                         "gate_a: the candidate ran 'in-process' (isolated=0); the gate requires it to run in a "
                         "worker process apart from the judge");
  EXPECT_EQ(codes(j), std::vector<std::string>{"NOT_ISOLATED"});

  rows = aa_rows();
  for (auto& row : rows) row.base.process = "in-process", row.base.isolated = 0;
  expect_pass(rows);
}

TEST_F(ReportPolicy, GpuSharedWhenAnotherProcessHeldTheGpuWhileTiming) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto rows = aa_rows();
  rows[1].gpu_processes = 4;  // the judge, two workers and a stranger
  json j = expect_reason(rows, "GPU_SHARED", {"gate_b"},
                         "gate_b: 4 CUDA processes held the GPU while it was timed, the gate's own are 3 (the judge "
                         "and its workers): another process shared it; run the gate on an idle GPU");
  EXPECT_EQ(codes(j), std::vector<std::string>{"GPU_SHARED"});

  rows = aa_rows();
  rows[0].gpu_processes = -1;  // NVML could not count: not a failure
  rows[2].gpu_processes = 2;   // fewer than expected (a worker had not made its context yet): fine
  expect_pass(rows);
}

// BASELINE_DISTURBED: the baseline's round trip in a scenario against the one measured alone (20 µs
// by default), its hold gaps (20 + 50 µs), and a round trip alone that was never measured.
// The share of baseline_alone_tolerance plus baseline_alone_slack_us (1.5 µs): on tiny calls one
// more context on the GPU costs about 0.6 µs (the H200, 2026-12-02), which the share alone failed.
TEST_F(ReportPolicy, BaselineAloneToleranceHasAnAbsoluteSlack) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  settings("  baseline_alone_tolerance: \"0.0001\"\n");
  auto rows = aa_rows();
  rows[1].base.alone_event = rows[1].base.event - 0.0014;
  expect_pass(rows);
  rows[1].base.alone_event = rows[1].base.event - 0.0016;
  expect_reason(rows, "BASELINE_DISTURBED", {"gate_b"}, "alone (tolerance 0.0 % + 1.5 us)");
  settings("  baseline_alone_tolerance: \"0.0001\"\n  baseline_alone_slack_us: \"2\"\n");
  expect_pass(rows);
}

TEST_F(ReportPolicy, BaselineDisturbedWhenItsRoundTripMovedOrAnotherContextRan) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto rows = aa_rows();
  rows[1].base.reference_handoff_us = 287.4 + 180;  // a GPU hog in another process (the H200 probe)
  json j = expect_reason(rows, "BASELINE_DISTURBED", {"gate_b"},
                         "gate_b: the baseline was disturbed while it was timed: its round trip to the judge was 467.4 "
                         "us in this scenario against 287.4 us measured alone (tolerance 20.0 us)");
  EXPECT_EQ(codes(j), std::vector<std::string>{"BASELINE_DISTURBED"});
  rows = aa_rows();
  rows[0].base.reference_handoff_us = 287.4 - 19.0;  // within the tolerance, either way
  rows[2].base.reference_handoff_us = 287.4 + 19.0;
  rows[1].base.hold_gap_us = 69.0;
  expect_pass(rows);
  rows[1].base.hold_gap_us = 71.0;
  expect_reason(rows, "BASELINE_DISTURBED", {"gate_b"}, "the judge's hold kernel was kept off the GPU for 71.0 us");
  rows = aa_rows();
  rows[2].base.solo_handoff_us = 0;  // the baseline's worker was not the judge's first
  expect_reason(rows, "BASELINE_DISTURBED", {"gate_c"}, "the round trip to the baseline's worker was not measured alone");
  // Work landing inside the baseline's own calls: both its clocks slow alike, its round trip stays.
  rows = aa_rows();
  rows[0].base.alone_event = 0.5003 / 1.03;  // 3 % faster alone than beside the candidate
  expect_reason(rows, "BASELINE_DISTURBED", {"gate_a"},
                "its median time was 0.5003 ms beside the candidate against 0.4857 ms alone (tolerance 2.0 % + 1.5 us)");
  rows[0].base.alone_event = 0.5003 / 1.019;
  expect_pass(rows);

  rows[0].base.alone_event = 0;  // not measured
  expect_reason(rows, "BASELINE_DISTURBED", {"gate_a"}, "its time alone, before the candidate's worker existed, was not measured");
  settings("  baseline_disturbed_us: \"200\"\n  baseline_alone_tolerance: \"0\"\n");
  rows = aa_rows();
  rows[1].base.reference_handoff_us = 287.4 + 180;
  rows[2].base.alone_event = 0;
  expect_pass(rows);
}

// SANDBOX_UNAVAILABLE: a mechanism the machine lacked, the sandbox off, no record; gate.yaml's
// `sandbox: allow` lets it through.
TEST_F(ReportPolicy, SandboxUnavailableFailsUnlessThePolicyAllowsIt) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  json p = perf_json(aa_rows(), 1.0005, 0.999, 1.002);
  p["sandbox"]["mechanisms"][1]["available"] = false;
  p["sandbox"]["mechanisms"][1]["detail"] = "built without libseccomp";
  perf(p);
  EXPECT_EQ(report({{"ATTNGATE_GEOMEAN_TARGET", "0.95"}}).exit_code, 1);
  json j = report_json();
  EXPECT_EQ(codes(j), std::vector<std::string>{"SANDBOX_UNAVAILABLE"});
  EXPECT_TRUE(has(detail(j, "SANDBOX_UNAVAILABLE"), "the workers ran without seccomp (built without libseccomp)"))
      << detail(j, "SANDBOX_UNAVAILABLE");
  p["sandbox"]["enabled"] = false;
  perf(p);
  EXPECT_EQ(report({{"ATTNGATE_GEOMEAN_TARGET", "0.95"}}).exit_code, 1);
  EXPECT_TRUE(has(detail(report_json(), "SANDBOX_UNAVAILABLE"), "ATTNGATE_SANDBOX=off"));
  p.erase("sandbox");
  perf(p);
  EXPECT_EQ(report({{"ATTNGATE_GEOMEAN_TARGET", "0.95"}}).exit_code, 1);
  EXPECT_TRUE(has(detail(report_json(), "SANDBOX_UNAVAILABLE"), "ATTNGATE_SANDBOX=off"));
  settings("  sandbox: \"allow\"\n");
  EXPECT_EQ(report({{"ATTNGATE_GEOMEAN_TARGET", "0.95"}}).exit_code, 0);
}

// FORBIDDEN_SYMBOL: a worker whose kernel library defines what a library the worker calls defines.
TEST_F(ReportPolicy, ForbiddenSymbolWhenAWorkersLibraryInterposes) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  json p = perf_json(aa_rows(), 1.0005, 0.999, 1.002);
  p["scenarios"][1]["kernel_timing"]["forbidden_symbols"] =
      json::array({"cudaEventElapsedTime (candidate.cu.o): also defined by libcudart_static.a"});
  perf(p);
  EXPECT_EQ(report({{"ATTNGATE_GEOMEAN_TARGET", "0.95"}}).exit_code, 1);
  json j = report_json();
  EXPECT_EQ(codes(j), std::vector<std::string>{"FORBIDDEN_SYMBOL"});
  EXPECT_TRUE(has(detail(j, "FORBIDDEN_SYMBOL"),
                  "1 symbol(s) defined by a worker's kernel library that a library the worker links or its own code "
                  "also defines (kernels/worker/cmake/symbols.cmake): candidate: cudaEventElapsedTime (candidate.cu.o)"))
      << detail(j, "FORBIDDEN_SYMBOL");
  p["scenarios"][1]["kernel_timing"]["forbidden_symbols"] = json::array();
  perf(p);
  EXPECT_EQ(report({{"ATTNGATE_GEOMEAN_TARGET", "0.95"}}).exit_code, 0);
}

// CLOCK_DISAGREE (e)-(g), the judge's clock: the worker's own events against it, the judge's work
// before its clock, its hold kernel's gaps; tolerance 0.0550 ms on the A/A rows.
TEST_F(ReportPolicy, ClockDisagreeAgainstTheJudgesClock) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto rows = aa_rows();
  rows[0].cand.worker_event = 0.500 - 0.060;  // a forged event time, 60 µs below the judge's
  expect_reason(rows, "CLOCK_DISAGREE", {"gate_a"}, "(e) the worker's events vs the judge's clock");
  rows[0].cand.worker_event = 0.500 - 0.050;
  expect_pass(rows);
  rows = aa_rows();
  rows[1].cand.pre = 0.05 + 0.060;  // work of the candidate's context before the clock
  expect_reason(rows, "CLOCK_DISAGREE", {"gate_b"}, "(f) the judge's work before its clock starts took 0.1100 ms");
  rows[1].cand.pre = 0.05 + 0.050;
  expect_pass(rows);
  rows = aa_rows();
  rows[2].cand.hold_gap_us = 2.0 + 60;  // another context ran while the judge held its stream
  expect_reason(rows, "CLOCK_DISAGREE", {"gate_c"}, "(g) the judge's hold kernel was kept off the GPU for 62.0 us");
  rows[2].cand.hold_gap_us = 2.0 + 50;
  expect_pass(rows);
}

// CLOCK_DISAGREE (h): the bench moved the candidate worker's clock by its own word on its round
// trip, at most worker_clock_trust_us (default 0), and never the baseline's.
TEST_F(ReportPolicy, ClockDisagreeWhenTheWorkersWordMovedItsClockTooFar) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto rows = aa_rows();
  rows[0].cand.round_trip_correction_us = 0.4;  // the default trusts no word
  expect_reason(rows, "CLOCK_DISAGREE", {"gate_a"}, "(h) the candidate's round trip was corrected by +0.40 us, more than");
  settings("  worker_clock_trust_us: \"1.5\"\n");
  rows[0].cand.round_trip_correction_us = -1.5;
  expect_pass(rows);
  EXPECT_EQ(report_json()["policy"]["worker_clock_trust_us"], 1.5);
  rows[0].cand.round_trip_correction_us = 1.6;
  expect_reason(rows, "CLOCK_DISAGREE", {"gate_a"}, "(h) the candidate's round trip was corrected by +1.60 us");
  rows = aa_rows();
  rows[1].base.round_trip_correction_us = 0.2;
  expect_reason(rows, "CLOCK_DISAGREE", {"gate_b"}, "(h) the baseline's round trip was corrected by +0.20 us");
}

// CLOCK_DISAGREE's tolerances on the A/A rows (the slower event time is the baseline's 0.5003 ms)
// under the default policy: 0.05 x 0.5003 + 0.03 = 0.0550 ms for the pairs of event times, and
// 0.05 x 0.5003 + 0.3 = 0.3250 ms for the judge's wall clock (0.3250 + 2 x 0.3 = 0.9250 ms for the
// wall time of the few calls on fresh inputs). Each comparison is tried 5 µs beyond and 5 µs
// inside its tolerance, in both directions.

// (a) The judge's wall clock against the worker's event time, in both directions, within the wall
// slack (the process round trip) rather than the event-time slack.
TEST_F(ReportPolicy, ClockDisagreeWallAgainstEventEitherWay) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  // The candidate in a worker with event time e and wall time w (the baseline's wall minus event
  // is +0.0400 ms), on a shape small enough (floor 0.0101 ms) that IMPLAUSIBLE stays out of it.
  auto cand = [&](PerfRow& row, double e, double w) {
    row.cand = worker(e, w), row.cand.tree = tree_now(), row.flops = 1e10;
  };
  auto rows = aa_rows();
  cand(rows[0], 0.5, 0.87);  // +0.3700: host work in the call that the event timer does not see
  cand(rows[1], 0.5, 0.21);  // -0.2900: a wall time below what the event time claims
  cand(rows[2], 0.5, 0.86);  // +0.3600: 0.32 ms more than the baseline's, far beyond 0.0550 but inside 0.3250
  json j = expect_reason(rows, "CLOCK_DISAGREE", {"gate_a", "gate_b"},
                         "gate_a: (a) wall vs event: wall time minus event time is +0.3700 ms for the candidate, "
                         "+0.0400 ms for the baseline; they differ by 0.3300 ms > tolerance 0.3250 ms");
  EXPECT_EQ(codes(j), std::vector<std::string>{"CLOCK_DISAGREE"});
  EXPECT_TRUE(scenario(j, "gate_c")["flags"].empty()) << scenario(j, "gate_c")["flags"];

  rows = aa_rows();
  cand(rows[1], 0.5, 0.21);
  cand(rows[2], 0.17, 0.54);  // +0.3700: an event time the wall clock does not bear out
  j = expect_reason(rows, "CLOCK_DISAGREE", {"gate_b", "gate_c"},
                    "gate_b: (a) wall vs event: wall time minus event time is -0.2900 ms for the candidate, "
                    "+0.0400 ms for the baseline; they differ by 0.3300 ms > tolerance 0.3250 ms");
  EXPECT_EQ(codes(j), std::vector<std::string>{"CLOCK_DISAGREE"});

  // Just inside, either way: 0.32 ms of round-trip noise is no disagreement on the wall clock.
  auto inside = aa_rows();
  cand(inside[0], 0.5, 0.22);   // -0.3200 from the baseline's
  cand(inside[1], 0.18, 0.54);  // +0.3200, by the event time
  cand(inside[2], 0.5, 0.86);   // +0.3200, by the wall time
  expect_pass(inside);
  j = report_json();
  for (const auto& id : kIds) EXPECT_TRUE(scenario(j, id)["flags"].empty()) << id << scenario(j, id)["flags"];

  // The wall tolerance follows wall_slack_ms ...
  settings("  wall_slack_ms: \"0.2\"\n");
  j = expect_reason(inside, "CLOCK_DISAGREE", {"gate_a", "gate_b", "gate_c"},
                    "gate_a: (a) wall vs event: wall time minus event time is -0.2800 ms for the candidate, "
                    "+0.0400 ms for the baseline; they differ by 0.3200 ms > tolerance 0.2250 ms");
  EXPECT_EQ(j["policy"]["wall_slack_ms"], 0.2);
  EXPECT_EQ(j["policy"]["wall_slack_ms_source"], "gate.yaml settings.wall_slack_ms");
  EXPECT_EQ(j["policy"]["clock_slack_ms"], 0.03);
  EXPECT_EQ(j["policy"]["clock_slack_ms_source"], "default");
  // ... and not clock_slack_ms, in either direction.
  settings("  clock_slack_ms: \"1.0\"\n");
  j = expect_reason(rows, "CLOCK_DISAGREE", {"gate_b", "gate_c"}, "they differ by 0.3300 ms > tolerance 0.3250 ms");
  EXPECT_EQ(j["policy"]["wall_slack_ms"], 0.3);
  EXPECT_EQ(j["policy"]["wall_slack_ms_source"], "default");
  settings("  clock_slack_ms: \"0\"\n");
  expect_pass(inside);

  for (const char* bad : {"-0.1", "abc", "inf", "0.3ms"}) expect_bad_setting("wall_slack_ms", bad, "a non-negative number");
}

// (b) A kernel that behaves differently when traced: traced and untraced event times must agree.
// The traced calls' wall time carries the worker's CUPTI flush and is not compared.
TEST_F(ReportPolicy, ClockDisagreeTracedAgainstUntracedEitherWay) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  // The baseline's traced calls are 0.0015 ms slower on event time than its untraced ones.
  auto rows = aa_rows();
  rows[0].cand.traced_event = 0.5615;  // +0.0615: slower when traced (the untraced calls skip work)
  rows[1].cand.traced_event = 0.4415;  // -0.0585: faster when traced
  rows[2].cand.traced_event = 0.5515;  // +0.0515: 0.05 ms from the baseline's, inside 0.0550
  json j = expect_reason(rows, "CLOCK_DISAGREE", {"gate_a", "gate_b"},
                         "gate_a: (b) traced vs untraced: traced event time minus untraced event time is +0.0615 ms "
                         "for the candidate, +0.0015 ms for the baseline; they differ by 0.0600 ms > tolerance "
                         "0.0550 ms");
  EXPECT_EQ(codes(j), std::vector<std::string>{"CLOCK_DISAGREE"});
  EXPECT_TRUE(scenario(j, "gate_c")["flags"].empty()) << scenario(j, "gate_c")["flags"];
  const auto disagree = rows;

  rows = aa_rows();
  rows[1].cand.traced_event = 0.4415;
  expect_reason(rows, "CLOCK_DISAGREE", {"gate_b"},
                "gate_b: (b) traced vs untraced: traced event time minus untraced event time is -0.0585 ms for the "
                "candidate, +0.0015 ms for the baseline; they differ by 0.0600 ms > tolerance 0.0550 ms");

  // Only the traced calls' wall time differs, either way: not compared. And just inside on events
  // in the other direction.
  rows = aa_rows();
  rows[0].cand.traced_wall = rows[0].cand.wall + 2.0;  // a CUPTI flush 2 ms longer than the baseline's
  rows[1].cand.traced_wall = rows[1].cand.wall - 0.5;
  rows[2].cand.traced_event = 0.4515;  // -0.0485: 0.05 ms from the baseline's
  expect_pass(rows);
  j = report_json();
  for (const auto& id : kIds) EXPECT_TRUE(scenario(j, id)["flags"].empty()) << id << scenario(j, id)["flags"];
  EXPECT_NEAR(scenario(j, "gate_a")["candidate"]["traced_wall_ms"].get<double>(), 2.54, 1e-9);  // read, not judged

  // Event-time pairs take clock_slack_ms, not wall_slack_ms.
  settings("  wall_slack_ms: \"5\"\n");
  j = expect_reason(disagree, "CLOCK_DISAGREE", {"gate_a", "gate_b"}, "they differ by 0.0600 ms > tolerance 0.0550 ms");
  EXPECT_FALSE(has(detail(j, "CLOCK_DISAGREE"), "traced wall")) << detail(j, "CLOCK_DISAGREE");
  settings("  clock_slack_ms: \"0.04\"\n");  // 0.025 + 0.04 = 0.065 > 0.06
  expect_pass(disagree);
}

// (c) CUPTI's kernel time against the event time of the very same traced calls.
TEST_F(ReportPolicy, ClockDisagreeCuptiAgainstEventsEitherWay) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  // The baseline's CUPTI kernel time is 3 µs under the event time of its traced calls (0.5018 ms);
  // the candidate's traced calls take 0.5015 ms.
  auto cupti = [](PerfRow& row, double minus_us) {
    row.cand.cupti_minus_us = minus_us, row.cand.kernel = 0.5015 + minus_us * 1e-3;
  };
  auto rows = aa_rows();
  cupti(rows[0], -63.0);  // GPU time in the call that no kernel accounts for
  cupti(rows[1], +57.0);  // kernel time beyond the timed window
  cupti(rows[2], -53.0);  // 50 µs from the baseline's: inside 0.0550 ms
  json j = expect_reason(rows, "CLOCK_DISAGREE", {"gate_a", "gate_b"},
                         "gate_a: (c) CUPTI vs events: CUPTI kernel time minus the event time of the same traced "
                         "calls is -63.0 us for the candidate, -3.0 us for the baseline; they differ by 0.0600 ms > "
                         "tolerance 0.0550 ms");
  EXPECT_EQ(codes(j), std::vector<std::string>{"CLOCK_DISAGREE"});
  EXPECT_TRUE(scenario(j, "gate_c")["flags"].empty()) << scenario(j, "gate_c")["flags"];

  rows = aa_rows();
  cupti(rows[1], +57.0);
  expect_reason(rows, "CLOCK_DISAGREE", {"gate_b"},
                "gate_b: (c) CUPTI vs events: CUPTI kernel time minus the event time of the same traced calls is "
                "+57.0 us for the candidate, -3.0 us for the baseline; they differ by 0.0600 ms > tolerance 0.0550 ms");

  rows = aa_rows();
  cupti(rows[0], +47.0);  // 50 µs the other way: inside
  cupti(rows[2], -53.0);
  expect_pass(rows);

  rows = aa_rows();
  rows[2].cand.kernel = 0;
  expect_reason(rows, "CLOCK_DISAGREE", {"gate_c"},
                "gate_c: (c) CUPTI vs events: CUPTI saw no kernel time in the candidate's traced calls");
}

// (d) Calls right after the judge gave the inputs new contents against the rest: event time within
// the event tolerance, wall time within the wall tolerance plus twice the wall slack.
TEST_F(ReportPolicy, ClockDisagreeFreshInputsEitherWay) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  // The baseline's fresh calls are 0.008 ms slower than its others on both clocks.
  auto rows = aa_rows();
  // gate_a: replays a result cached by pointer unless the contents changed: fresh calls are slow.
  rows[0].cand.fresh_event = 0.568, rows[0].cand.fresh_wall = 0.608;  // +0.0680 on both clocks
  // gate_b: fresh calls faster than the rest (it slows down when it recognises a repeat).
  rows[1].cand.fresh_event = 0.448, rows[1].cand.fresh_wall = 0.488;  // -0.0520
  // gate_c: the candidate had no fresh calls: not compared, whatever the figures.
  rows[2].cand.fresh_calls = 0, rows[2].cand.fresh_event = 5.0, rows[2].cand.fresh_wall = 5.0;
  json j = expect_reason(rows, "CLOCK_DISAGREE", {"gate_a", "gate_b"},
                         "gate_a: (d) fresh inputs vs the rest: event time on fresh inputs minus event time is "
                         "+0.0680 ms for the candidate, +0.0080 ms for the baseline; they differ by 0.0600 ms > "
                         "tolerance 0.0550 ms");
  EXPECT_EQ(codes(j), std::vector<std::string>{"CLOCK_DISAGREE"});
  EXPECT_FALSE(has(detail(j, "CLOCK_DISAGREE"), "wall time on fresh inputs")) << detail(j, "CLOCK_DISAGREE");
  EXPECT_TRUE(scenario(j, "gate_c")["flags"].empty());
  const auto disagree = rows;

  rows = aa_rows();
  rows[1].cand.fresh_event = 0.448, rows[1].cand.fresh_wall = 0.488;
  expect_reason(rows, "CLOCK_DISAGREE", {"gate_b"},
                "gate_b: (d) fresh inputs vs the rest: event time on fresh inputs minus event time is -0.0520 ms "
                "for the candidate, +0.0080 ms for the baseline; they differ by 0.0600 ms > tolerance 0.0550 ms");

  // The wall time of the fresh calls: tolerance 0.9250 ms here; gate_b is a 2 ms shape (the slower
  // event time 2.0003 ms: 0.05 x 2.0003 + 0.3 + 2 x 0.3 = 1.0000 ms) to go below without a
  // negative time.
  auto two_ms = [&](PerfRow& row, double fresh_wall_minus_wall) {
    row.cand = worker(2.0, 2.04), row.cand.tree = tree_now();
    row.base = worker(2.0003, 2.0403), row.base.tree = std::string(64, 'b');
    row.cand.fresh_wall = 2.04 + fresh_wall_minus_wall;
  };
  rows = aa_rows();
  rows[0].cand.fresh_wall = 0.54 + 0.938;  // +0.9380
  two_ms(rows[1], 0.008 - 1.005);          // -0.9970
  rows[2].cand.fresh_wall = 0.54 + 0.928;  // +0.9280: 0.92 ms from the baseline's, inside
  j = expect_reason(rows, "CLOCK_DISAGREE", {"gate_a", "gate_b"},
                    "gate_a: (d) fresh inputs vs the rest: wall time on fresh inputs minus wall time is +0.9380 ms "
                    "for the candidate, +0.0080 ms for the baseline; they differ by 0.9300 ms > tolerance 0.9250 ms");
  EXPECT_EQ(codes(j), std::vector<std::string>{"CLOCK_DISAGREE"});
  EXPECT_FALSE(has(detail(j, "CLOCK_DISAGREE"), "event time on fresh inputs")) << detail(j, "CLOCK_DISAGREE");
  EXPECT_TRUE(scenario(j, "gate_c")["flags"].empty()) << scenario(j, "gate_c")["flags"];

  rows = aa_rows();
  two_ms(rows[1], 0.008 - 1.005);
  expect_reason(rows, "CLOCK_DISAGREE", {"gate_b"},
                "gate_b: (d) fresh inputs vs the rest: wall time on fresh inputs minus wall time is -0.9970 ms for "
                "the candidate, +0.0080 ms for the baseline; they differ by 1.0050 ms > tolerance 1.0000 ms");

  // Just inside on both clocks, either way.
  auto inside = aa_rows();
  inside[0].cand.fresh_event = 0.558, inside[0].cand.fresh_wall = 0.54 + 0.928;  // +0.05 and +0.92
  two_ms(inside[1], 0.008 - 0.995);                                             // -0.995
  inside[2].cand.fresh_event = 0.458;                                           // -0.05
  expect_pass(inside);

  // The fresh calls' wall tolerance takes the wall slack three times: 0.025 + 3 x 0.1.
  settings("  wall_slack_ms: \"0.1\"\n");
  expect_reason(inside, "CLOCK_DISAGREE", {"gate_a", "gate_b"},
                "gate_a: (d) fresh inputs vs the rest: wall time on fresh inputs minus wall time is +0.9280 ms for "
                "the candidate, +0.0080 ms for the baseline; they differ by 0.9200 ms > tolerance 0.3250 ms");

  // The tolerance of the event-time pairs is a policy: 0.1 x the event time + 0.03 ms lets these through.
  settings("  clock_tolerance: \"0.1\"\n");
  expect_pass(disagree);
  j = report_json();
  EXPECT_EQ(j["policy"]["clock_tolerance"], 0.1);
  EXPECT_EQ(j["policy"]["clock_tolerance_source"], "gate.yaml settings.clock_tolerance");
  EXPECT_EQ(j["policy"]["clock_slack_ms"], 0.03);
  EXPECT_EQ(j["policy"]["clock_slack_ms_source"], "default");
  EXPECT_EQ(j["policy"]["wall_slack_ms"], 0.3);
  EXPECT_EQ(j["policy"]["wall_slack_ms_source"], "default");
  settings("  clock_slack_ms: \"0.04\"\n");  // 0.025 + 0.04 > 0.06
  expect_pass(disagree);
  settings("  clock_slack_ms: \"0.02\"\n");  // 0.025 + 0.02 < 0.06
  expect_reason(disagree, "CLOCK_DISAGREE", {"gate_a", "gate_b"}, "tolerance 0.0450 ms");

  for (const char* bad : {"-1", "abc", "nan"}) expect_bad_setting("clock_tolerance", bad, "a non-negative number");
  expect_bad_setting("clock_slack_ms", "1ms", "a non-negative number");
}

TEST_F(ReportPolicy, ImplausibleBelowThePeakOrTheBandwidthFloor) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  // gate_c: only the wall clock, less the baseline's overhead and given the wall slack, is below
  // the floor 0.7000 ms (0.43 - 0.04 + 0.3 = 0.69); the event time (0.75) is above it. A wall clock
  // that far below the events also disagrees with them (CLOCK_DISAGREE (a)): the slack is the same.
  auto wall_below = [&](std::vector<PerfRow> rows) {
    rows[2].flops = 6.9265e11;
    rows[2].cand = worker(0.75, 0.43), rows[2].cand.tree = tree_now();
    rows[2].base = worker(0.75, 0.79);
    return rows;
  };
  auto rows = wall_below(aa_rows());
  // gate_a: 1.2 TFLOP in 0.5 ms is 2.4 PFLOPS, above the 989.5 TFLOPS peak (floor 1.2127 ms); every
  // clock agrees, so only the floor can tell.
  rows[0].flops = 1.2e12;
  // gate_b: 4.8 GB in 0.5 ms is above 4.8 TB/s (floor 1.0 ms).
  rows[1].min_bytes = 4.8e9;
  json j = expect_reason(rows, "IMPLAUSIBLE", {"gate_a", "gate_b", "gate_c"},
                         "gate_a: the candidate claims event time 0.5000 ms, CUPTI span 0.4970 ms, CUPTI kernel time "
                         "0.4970 ms, wall time less the baseline's overhead (0.0400 ms) plus the wall slack (0.30 ms) "
                         "0.8000 ms: below 1.2127 ms, which no call can beat (1.2e+12 FLOP at the dense peak 989.5 "
                         "TFLOPS take 1.2127 ms; 6.7e+07 bytes at 4.80 TB/s take 0.0140 ms)");
  EXPECT_EQ(codes(j), (std::vector<std::string>{"IMPLAUSIBLE", "CLOCK_DISAGREE"}));
  EXPECT_EQ(reason(j, "CLOCK_DISAGREE")["scenarios"], json::array({"gate_c"}));
  EXPECT_NEAR(scenario(j, "gate_b")["floor_ms"].get<double>(), 1.0, 1e-12);

  j = expect_reason(wall_below(aa_rows()), "IMPLAUSIBLE", {"gate_c"},
                    "gate_c: the candidate claims wall time less the baseline's overhead (0.0400 ms) plus the wall "
                    "slack (0.30 ms) 0.6900 ms: below 0.7000 ms");
  // Honest noise on a tiny shape: the wall clock 0.2 ms under the baseline's round trip (seen on
  // the H200 with a 77-query shape) is within the slack, so not a claim below the floor.
  rows = aa_rows();
  rows[2].flops = 2.3e6, rows[2].min_bytes = 4.5e5;
  rows[2].cand = worker(0.01, 0.45), rows[2].cand.tree = tree_now();
  rows[2].base = worker(0.01, 0.64);
  expect_pass(rows);

  // What cannot be bounded does not pass.
  json p = perf_json(aa_rows(), 1.0005, 0.999, 1.002);
  p.erase("hbm_tbps");
  p["scenarios"][1].erase("min_bytes");
  perf(p);
  EXPECT_EQ(report({{"ATTNGATE_GEOMEAN_TARGET", "0.95"}}).exit_code, 1);
  j = report_json();
  EXPECT_EQ(reason(j, "IMPLAUSIBLE")["scenarios"], json::array({"gate_a", "gate_b", "gate_c"}));
  EXPECT_TRUE(has(detail(j, "IMPLAUSIBLE"), "gate_a: cannot be judged: the comparison has no hbm_tbps;"))
      << detail(j, "IMPLAUSIBLE");
  p = perf_json(aa_rows(), 1.0005, 0.999, 1.002);
  p["peak_tflops"] = 0;  // the bench's "unknown"
  perf(p);
  EXPECT_EQ(report({{"ATTNGATE_GEOMEAN_TARGET", "0.95"}}).exit_code, 1);
  EXPECT_TRUE(has(detail(report_json(), "IMPLAUSIBLE"), "cannot be judged: the comparison has no peak_tflops"));
}

TEST_F(ReportPolicy, ForeignKernelsFailPerRolePolicy) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto rows = aa_rows();
  rows[0].cand.foreign_kernels = {"_Z20cublasLt_gemm_kernelv", "_Z6splitkv", "_Z4tailv", "_Z5extrav"};
  rows[1].base.foreign_kernels = {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop"};  // the cuDNN control
  json j = expect_reason(rows, "FOREIGN_KERNEL", {"gate_a"},
                         "gate_a: the candidate 'candidate' launched 4 kernel(s) its worker's build-time inventory "
                         "lacks: _Z20cublasLt_gemm_kernelv, _Z6splitkv, _Z4tailv, ... "
                         "(settings.candidate_foreign_kernels: fail)");
  EXPECT_EQ(codes(j), std::vector<std::string>{"FOREIGN_KERNEL"});
  EXPECT_EQ(scenario(j, "gate_a")["candidate"]["foreign_kernel_names"].size(), 4u);

  settings("  candidate_foreign_kernels: \"allow\"\n  baseline_foreign_kernels: \"fail\"\n");
  j = expect_reason(rows, "FOREIGN_KERNEL", {"gate_b"}, "gate_b: the baseline 'initial' launched 1 kernel(s)");
  EXPECT_EQ(j["policy"]["candidate_foreign_kernels"], "allow");
  EXPECT_EQ(j["policy"]["baseline_foreign_kernels_source"], "gate.yaml settings.baseline_foreign_kernels");

  rows[1].base.foreign_kernels.clear();
  settings("  baseline_foreign_kernels: \"fail\"\n");  // the candidate's default is fail
  expect_reason(rows, "FOREIGN_KERNEL", {"gate_a"}, "the candidate 'candidate' launched 4 kernel(s)");
  settings("  candidate_foreign_kernels: \"allow\"\n");
  expect_pass(rows);

  expect_bad_setting("candidate_foreign_kernels", "warn", "fail or allow");
  expect_bad_setting("baseline_foreign_kernels", "FAIL", "fail or allow");
}

TEST_F(ReportPolicy, AnyMemcpyOrMemsetInTheCandidatesCallFails) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto rows = aa_rows();
  rows[0].cand.memcpy = 0.5, rows[0].base.memcpy = 1;  // fewer than the baseline still fails
  rows[1].cand.memset = 1;
  rows[2].base.memcpy = 1, rows[2].base.memset = 1;  // the baseline's are not the candidate's
  json j = expect_reason(rows, "MEMCPY_IN_CALL", {"gate_a"},
                         "gate_a: 0.50 memcpy per traced call of the candidate (baseline: 1.00)");
  EXPECT_EQ(codes(j), (std::vector<std::string>{"MEMCPY_IN_CALL", "MEMSET_IN_CALL"}));
  EXPECT_EQ(reason(j, "MEMSET_IN_CALL")["scenarios"], json::array({"gate_b"}));
  EXPECT_TRUE(scenario(j, "gate_c")["flags"].empty());
}

TEST_F(ReportPolicy, NondeterminismHasItsOwnReasonAndPolicy) {
  ASSERT_EQ(prepare().exit_code, 0);
  const std::string differs =
      "not deterministic: a second call on the same inputs (output re-poisoned) differs from the first in 3 of 524288 "
      "elements of O and 0 of LSE; a kernel must reproduce its output bit for bit (a race, or a call that skips work "
      "it did before)";
  failed_with("gate_a", {differs});  // a race or an atomics-order reduction
  failed_with("gate_b", {"not deterministic: a second call on the same inputs (output re-poisoned) differs from the "
                         "first in 524288 of 524288 elements of O and 512 of LSE (524288 of them left unwritten: the "
                         "second call did not write them); a kernel must reproduce its output bit for bit"});
  failed_with("gate_c", {differs, "O: max abs error 0.41 > 0.0121"});
  json j = expect_reason(aa_rows(), "NONDETERMINISTIC", {"gate_a"}, "gate_a (outliers: not deterministic: a second call");
  EXPECT_TRUE(has(detail(j, "NONDETERMINISTIC"), "ATTNGATE_SEED=12345")) << detail(j, "NONDETERMINISTIC");
  // Skipped work (poison left unwritten) and real errors stay correctness failures.
  EXPECT_EQ(reason(j, "CORRECTNESS_FAILED")["scenarios"], json::array({"gate_b", "gate_c"}));
  EXPECT_EQ(scenario(j, "gate_a")["correct"], false);
  EXPECT_EQ(scenario(j, "gate_a")["nondeterministic"], true);
  EXPECT_EQ(scenario(j, "gate_a")["flags"], json::array({"NONDETERMINISTIC"}));

  settings("  nondeterminism: \"allow\"\n");
  EXPECT_EQ(judge(aa_rows()).exit_code, 1);
  j = report_json();
  EXPECT_EQ(codes(j), std::vector<std::string>{"CORRECTNESS_FAILED"});
  EXPECT_EQ(scenario(j, "gate_a")["correct"], true);
  EXPECT_EQ(scenario(j, "gate_a")["flags"], json::array({"NONDETERMINISTIC"}));  // still shown
  EXPECT_EQ(j["policy"]["nondeterminism"], "allow");
  result("gate_b", "passed");
  result("gate_c", "passed");
  expect_pass(aa_rows());

  expect_bad_setting("nondeterminism", "sometimes", "fail or allow");
}

TEST_F(ReportPolicy, CandidateChangedAfterTheWorkerWasBuilt) {
  ASSERT_EQ(prepare().exit_code, 0);
  all_passed();
  auto rows = aa_rows();
  expect_pass(rows);

  // An edit after the build: the folder no longer hashes to what the worker was built from.
  sb.set_candidate("// edited while the gate ran\n");
  json j = expect_reason(rows, "CANDIDATE_CHANGED", json::array(),
                         "the worker was built from kernels/candidate tree " + rows[0].cand.tree +
                             ", but kernels/candidate hashes to " + tree_now() +
                             " now: the candidate changed after it was built (build again before ctest -L gate; attngate "
                             "gate builds first)");
  EXPECT_EQ(codes(j), std::vector<std::string>{"CANDIDATE_CHANGED"});
  EXPECT_EQ(j["provenance"]["candidate_tree_sha256_built"], rows[0].cand.tree);
  EXPECT_EQ(j["provenance"]["candidate_tree_sha256"], tree_now());

  // Any file of the folder counts, not only candidate.cu.
  test::write_file(sb.candidate().parent_path() / "tile.cuh", "// helper\n");
  rows = aa_rows();  // built with it
  all_passed();      // and verified with it
  expect_pass(rows);
  test::write_file(sb.candidate().parent_path() / "tile.cuh", "// helper, edited\n");
  expect_reason(rows, "CANDIDATE_CHANGED", json::array(), "hashes to " + tree_now() + " now");

  // Scenarios measured with different builds.
  rows = aa_rows();
  rows[2].cand.tree = std::string(64, 'c');
  j = expect_reason(rows, "CANDIDATE_CHANGED", json::array(), "measured with 2 different builds of kernels/candidate");
  EXPECT_EQ(j["provenance"]["candidate_tree_sha256_built"], nullptr);
}

}  // namespace
}  // namespace attngate::hooks
