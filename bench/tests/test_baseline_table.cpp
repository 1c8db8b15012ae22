// The candidate against every baseline (attngate_stats table): reading attngate_bench's and the
// Python baselines' results, the per-scenario speedups, which of them the geomean averages, and the
// in-process cuDNN against PyTorch's cuDNN. Synthetic documents: those of attngate_compare.py's
// self-test, which exercises the same table end to end through the binary.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/bench/baseline_table.hpp"
#include "attngate/verify/schema_check.hpp"

namespace attngate::bench {
namespace {

using Json = nlohmann::ordered_json;

const std::string kBenchPath = "/runs/gate_attngate.json";
const std::string kBasePath = "/runs/gate_baselines.json";

// One Google Benchmark iteration of attngate_bench: "kernel/scenario" and its counters.
Json iteration(const std::string& name, const Json& counters) {
  Json b = {{"name", name + "/iterations:1/manual_time"}, {"run_type", "iteration"}};
  for (const auto& [key, value] : counters.items()) b[key] = value;
  return b;
}

Json failed(const std::string& name, const std::string& message) {
  return {{"name", name + "/iterations:1/manual_time"}, {"run_type", "iteration"}, {"error_occurred", true},
          {"error_message", message}};
}

// initial and cudnn timed apart on s1 and s2 (cudnn declines s2), initial interleaved on s3.
Json bench_doc() {
  Json benchmarks = Json::array();
  benchmarks.push_back(iteration("candidate/s1", {{"event_ms", 1.0}, {"kernel_ms", 0.99}, {"tflops", 500.0}, {"sm_clock_mhz", 1980}}));
  benchmarks.push_back(iteration("initial/s1", {{"event_ms", 1.2}, {"kernel_ms", 1.19}, {"tflops", 416.7}, {"sm_clock_mhz", 1980}}));
  benchmarks.push_back(iteration("cudnn/s1", {{"event_ms", 0.8}, {"kernel_ms", 0.79}, {"tflops", 625.0}, {"sm_clock_mhz", 1980}}));
  benchmarks.push_back(iteration("candidate/s2", {{"event_ms", 2.0}, {"kernel_ms", 1.99}, {"tflops", 400.0}, {"sm_clock_mhz", 1900}}));
  benchmarks.push_back(iteration("initial/s2", {{"event_ms", 4.0}, {"kernel_ms", 3.99}, {"tflops", 200.0}, {"sm_clock_mhz", 1900}}));
  benchmarks.push_back(failed("cudnn/s2", "unsupported: cudnn: cuDNN 9.14.0 declines it: ..."));
  benchmarks.push_back(iteration("candidate_vs_initial/s3",
                                 {{"event_ms", 1.0}, {"base_event_ms", 1.5}, {"tflops", 300.0}, {"base_tflops", 200.0},
                                  {"speedup", 1.5}, {"speedup_lo", 1.45}, {"speedup_hi", 1.55}}));
  benchmarks.push_back({{"name", "candidate/s1"}, {"run_type", "aggregate"}, {"event_ms", 99.0}});
  return {{"context", {{"attngate_device", "NVIDIA H200"}}}, {"benchmarks", benchmarks}};
}

Json result(const std::string& scenario, const std::string& baseline, const std::string& status, double event_ms) {
  return {{"scenario", scenario}, {"suite", "gate"},     {"baseline", baseline},       {"status", status},
          {"reason", ""},         {"event_ms", event_ms}, {"kernel_ms", event_ms * 0.99}, {"tflops", 100.0}};
}

// PyTorch's cuDNN on s1 and (on the math fallback) s2; FlashAttention-4 not installed.
Json baselines_doc() {
  Json results = Json::array({result("s1", "torch_cudnn", "ok", 0.81), result("s2", "torch_cudnn", "fallback", 8.0),
                              result("s1", "fa4", "not installed", 0.0)});
  return {{"schema", "attngate.baseline_results/1"}, {"results", results}};
}

Json table(const Json& bench, const Json& baselines, const std::string& metric = "event_ms") {
  std::vector<NamedDocument> b, base;
  if (!bench.is_null()) b.push_back({kBenchPath, bench});
  if (!baselines.is_null()) base.push_back({kBasePath, baselines});
  return make_baseline_table(b, base, "candidate", metric);
}

Json self_test_table() { return table(bench_doc(), baselines_doc()); }

const Json& row(const Json& t, const std::string& scenario) {
  for (const auto& r : t.at("rows"))
    if (r.at("scenario") == scenario) return r;
  throw std::out_of_range("no row " + scenario);
}

const Json& cell(const Json& t, const std::string& scenario, const std::string& baseline) {
  return row(t, scenario).at("cells").at(baseline);
}

std::vector<std::string> scenarios(const Json& t) {
  std::vector<std::string> out;
  for (const auto& r : t.at("rows")) out.push_back(r.at("scenario"));
  return out;
}

TEST(BaselineTable, AggregatesAreIgnoredAndIterationsTaken) {
  const Json t = self_test_table();
  EXPECT_EQ(row(t, "s1").at("candidate").at("event_ms"), 1.0);
  EXPECT_EQ(row(t, "s1").at("candidate").at("repetitions"), 1);
  EXPECT_EQ(row(t, "s1").at("candidate").at("source"), kBenchPath);
}

TEST(BaselineTable, UnsupportedBenchmarkIsASkipOtherFailuresAreErrors) {
  Json bench = bench_doc();
  bench["benchmarks"].push_back(failed("candidate_vs_cudnn/s4", "CUDA error: an illegal memory access"));
  bench["benchmarks"].push_back(failed("initial/s4", "cuda: cudaErrorNotSupported on this device"));
  const Json t = table(bench, nullptr);
  EXPECT_EQ(cell(t, "s2", "cudnn").at("entry").at("status"), "unsupported");
  EXPECT_TRUE(cell(t, "s2", "cudnn").at("speedup").is_null());
  // A failed comparison fails both of its kernels.
  EXPECT_EQ(row(t, "s4").at("candidate").at("status"), "error");
  EXPECT_EQ(cell(t, "s4", "cudnn").at("entry").at("status"), "error");
  EXPECT_EQ(cell(t, "s4", "cudnn").at("entry").at("reason"), "CUDA error: an illegal memory access");
  EXPECT_EQ(cell(t, "s4", "initial").at("entry").at("status"), "unsupported");
}

TEST(BaselineTable, ComparisonModeGivesBothKernelsAndTheInterleavedSpeedup) {
  const Json t = self_test_table();
  const Json& c = cell(t, "s3", "initial");
  EXPECT_EQ(c.at("entry").at("event_ms"), 1.5);
  EXPECT_EQ(c.at("entry").at("tflops"), 200.0);
  EXPECT_TRUE(c.at("interleaved").get<bool>());
  EXPECT_EQ(c.at("speedup"), 1.5);
  EXPECT_EQ(c.at("ci"), Json::array({1.45, 1.55}));
  EXPECT_EQ(row(t, "s3").at("candidate").at("event_ms"), 1.0);
}

TEST(BaselineTable, RepetitionsAreSummarizedByTheirMedian) {
  Json bench = {{"benchmarks", Json::array()}};
  for (double ms : {1.0, 3.0, 2.0}) bench["benchmarks"].push_back(iteration("candidate/s1", {{"event_ms", ms}, {"cv", ms}}));
  for (double ms : {1.0, 4.0}) bench["benchmarks"].push_back(iteration("initial/s1", {{"event_ms", ms}}));
  bench["benchmarks"].push_back(failed("initial/s1", "error: timed out"));  // one failed repetition: not counted
  const Json t = table(bench, nullptr);
  const Json& candidate = row(t, "s1").at("candidate");
  EXPECT_EQ(candidate.at("event_ms"), 2.0);
  EXPECT_EQ(candidate.at("repetitions"), 3);
  EXPECT_EQ(candidate.at("cv"), 1.0);  // the other fields are the first repetition's
  const Json& initial = cell(t, "s1", "initial").at("entry");
  EXPECT_EQ(initial.at("event_ms"), 2.5);
  EXPECT_EQ(initial.at("status"), "ok");
  EXPECT_EQ(initial.at("repetitions"), 2);
  EXPECT_DOUBLE_EQ(cell(t, "s1", "initial").at("speedup").get<double>(), 1.25);
}

TEST(BaselineTable, BaselinesInPreferredOrderThenAlphabetical) {
  Json base = baselines_doc();
  for (const char* name : {"zeta", "fa3", "alpha", "torch_flash"}) base["results"].push_back(result("s1", name, "ok", 1.0));
  const Json t = table(bench_doc(), base);
  EXPECT_EQ(t.at("baselines"), Json::array({"initial", "cudnn", "torch_cudnn", "torch_flash", "fa3", "fa4", "alpha", "zeta"}));
}

TEST(BaselineTable, SpeedupIsBaselineTimeOverCandidateTime) {
  const Json t = self_test_table();
  EXPECT_NEAR(cell(t, "s1", "initial").at("speedup").get<double>(), 1.2, 1e-12);
  EXPECT_NEAR(cell(t, "s1", "cudnn").at("speedup").get<double>(), 0.8, 1e-12);  // a slower candidate: below 1
  EXPECT_FALSE(cell(t, "s1", "initial").at("interleaved").get<bool>());
  EXPECT_TRUE(cell(t, "s1", "initial").at("ci").is_null());
  EXPECT_TRUE(cell(t, "s1", "fa4").at("speedup").is_null());
}

TEST(BaselineTable, KernelMsMetricComparesKernelTimes) {
  const Json t = table(bench_doc(), baselines_doc(), "kernel_ms");
  EXPECT_EQ(t.at("metric"), "kernel_ms");
  EXPECT_NEAR(cell(t, "s1", "initial").at("speedup").get<double>(), 1.19 / 0.99, 1e-12);
  EXPECT_THROW(table(bench_doc(), baselines_doc(), "wall_ms"), std::runtime_error);
}

TEST(BaselineTable, GeomeanIsTheCubeRootOfTheProduct) {
  const Json g = self_test_table().at("geomean").at("initial");
  EXPECT_EQ(g.at("n"), 3);  // s1, s2 apart and s3 interleaved
  EXPECT_EQ(g.at("n_shown"), 3);
  EXPECT_NEAR(g.at("geomean").get<double>(), std::cbrt(1.2 * 2.0 * 1.5), 1e-12);
}

TEST(BaselineTable, WrongOrFallbackBaselineIsShownNotAveraged) {
  Json base = baselines_doc();
  base["results"].push_back(result("s1", "fa3", "ok", 2.0));
  base["results"].push_back(result("s2", "fa3", "wrong", 1.0));
  const Json t = table(bench_doc(), base);
  EXPECT_NEAR(cell(t, "s2", "torch_cudnn").at("speedup").get<double>(), 4.0, 1e-12);
  const Json& torch = t.at("geomean").at("torch_cudnn");
  EXPECT_EQ(torch.at("n"), 1);
  EXPECT_EQ(torch.at("n_shown"), 2);
  EXPECT_NEAR(torch.at("geomean").get<double>(), 0.81, 1e-12);  // s1 alone
  EXPECT_NEAR(cell(t, "s2", "fa3").at("speedup").get<double>(), 0.5, 1e-12);
  const Json& fa3 = t.at("geomean").at("fa3");
  EXPECT_EQ(fa3.at("n"), 1);
  EXPECT_EQ(fa3.at("n_shown"), 2);
  EXPECT_NEAR(fa3.at("geomean").get<double>(), 2.0, 1e-12);
}

TEST(BaselineTable, NotInstalledBaselineAveragesNothing) {
  const Json t = self_test_table();
  EXPECT_EQ(t.at("geomean").at("fa4"), (Json{{"geomean", 0.0}, {"n", 0}, {"n_shown", 0}}));
  EXPECT_EQ(cell(t, "s1", "fa4").at("entry").at("status"), "not installed");
  EXPECT_EQ(cell(t, "s1", "fa4").at("entry").at("source"), kBasePath);
}

TEST(BaselineTable, AgreementOfInProcessCudnnWithPyTorchCudnn) {
  Json bench = bench_doc();
  bench["benchmarks"].push_back(iteration("candidate/s5", {{"event_ms", 1.0}}));
  bench["benchmarks"].push_back(iteration("cudnn/s5", {{"event_ms", 1.1}}));
  Json base = baselines_doc();
  base["results"].push_back(result("s5", "torch_cudnn", "ok", 1.0));
  const Json agreement = table(bench, base).at("agreement");
  ASSERT_EQ(agreement.size(), 2u);  // s2: cudnn unsupported, no ratio
  EXPECT_EQ(agreement[0].at("scenario"), "s1");
  EXPECT_NEAR(agreement[0].at("ratio").get<double>(), 0.8 / 0.81, 1e-12);
  EXPECT_TRUE(agreement[0].at("within").get<bool>());
  EXPECT_EQ(agreement[1].at("scenario"), "s5");
  EXPECT_FALSE(agreement[1].at("within").get<bool>());  // 10% apart
}

TEST(BaselineTable, BenchFilesLimitRowsToTheScenariosTheyTimed) {
  Json base = baselines_doc();
  base["results"].push_back(result("prod_s9", "torch_cudnn", "ok", 1.0));  // another suite's scenario
  base["results"].push_back(result("prod_s9", "candidate", "ok", 1.0));
  EXPECT_EQ(scenarios(table(bench_doc(), base)), (std::vector<std::string>{"s1", "s2", "s3"}));
  // Without bench files the baselines' scenarios are the table.
  EXPECT_EQ(scenarios(table(nullptr, base)), (std::vector<std::string>{"s1", "s2", "prod_s9"}));
}

TEST(BaselineTable, BaselinesDoNotOverrideBenchEntries) {
  Json base = baselines_doc();
  base["results"].push_back(result("s1", "cudnn", "ok", 5.0));
  const Json t = table(bench_doc(), base);
  EXPECT_EQ(cell(t, "s1", "cudnn").at("entry").at("event_ms"), 0.8);
  EXPECT_EQ(cell(t, "s1", "cudnn").at("entry").at("source"), kBenchPath);
}

TEST(BaselineTable, LaterBenchFileReplacesEarlierResult) {
  Json later = {{"benchmarks", Json::array({iteration("candidate/s1", {{"event_ms", 0.5}})})}};
  const Json t = make_baseline_table({{kBenchPath, bench_doc()}, {"/runs/rerun.json", later}}, {}, "candidate", "event_ms");
  EXPECT_EQ(row(t, "s1").at("candidate").at("event_ms"), 0.5);
  EXPECT_EQ(scenarios(t), (std::vector<std::string>{"s1", "s2", "s3"}));
}

TEST(BaselineTable, EntriesKeepTheReportsFieldOrder) {
  const Json t = self_test_table();
  std::vector<std::string> keys;
  for (const auto& [key, value] : row(t, "s1").at("candidate").items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"kernel", "scenario", "source", "status", "reason", "event_ms", "kernel_ms",
                                            "tflops", "sm_clock_mhz", "cv", "samples", "label", "repetitions"}));
  EXPECT_EQ(row(t, "s1").at("candidate").at("sm_clock_mhz"), 1980);  // an integer clock stays an integer
}

TEST(BaselineTable, RejectsABaselinesFileOfAnotherSchemaNamingIt) {
  Json base = baselines_doc();
  base["schema"] = "attngate.baseline_results/0";
  try {
    table(bench_doc(), base);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(kBasePath), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("attngate.baseline_results/1"), std::string::npos) << e.what();
  }
}

TEST(BaselineTable, MalformedBenchmarkIsReportedWithItsFile) {
  Json bench = {{"benchmarks", Json::array({iteration("candidate/s1", {{"kernel_ms", 1.0}})})}};  // no event_ms
  try {
    table(bench, nullptr);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(kBenchPath), std::string::npos) << e.what();
  }
}

TEST(BaselineTable, MissingCandidateOrNothingToCompareIsAnError) {
  try {
    make_baseline_table({}, {{kBasePath, baselines_doc()}}, "candidate", "event_ms");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "no results of the candidate 'candidate' (have: fa4, torch_cudnn)");
  }
  EXPECT_THROW(make_baseline_table({}, {}, "candidate", "event_ms"), std::runtime_error);
}

TEST(BaselineTable, FollowsItsSchema) {
  std::ifstream schema_file(ATTNGATE_BASELINE_JOIN_SCHEMA);
  ASSERT_TRUE(schema_file) << ATTNGATE_BASELINE_JOIN_SCHEMA;
  const nlohmann::json schema = nlohmann::json::parse(schema_file);
  const nlohmann::json doc = self_test_table();
  EXPECT_EQ(verify::schema_problems(schema, doc), std::vector<std::string>{});
  // The schema holds: a row without its candidate field breaks it.
  nlohmann::json broken = doc;
  broken["rows"][0].erase("candidate");
  EXPECT_EQ(verify::schema_problems(schema, broken), std::vector<std::string>{"$.rows[0]: Missing required property 'candidate'."});
}

}  // namespace
}  // namespace attngate::bench
