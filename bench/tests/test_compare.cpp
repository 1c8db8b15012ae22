// The comparison JSON that the gate's report reads: per-scenario clocks and cross-checks of both
// kernels, speedups on the three clocks, suite geomeans, versions and the SM clock summary.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "attngate/bench/compare.hpp"
#include "attngate/verify/schema_check.hpp"

namespace attngate::bench {
namespace {

using nlohmann::json;

// event_ms per untraced call, kernel time per traced call (CUPTI), wall time per call.
KernelSeries series(const std::string& name, double event, double kernel, double wall, std::vector<int> kernels,
                    uint32_t stream = 7, int memcpys = 0) {
  KernelSeries k;
  k.kernel = name;
  for (int i = 0; i < 21; ++i) {
    k.event_ms.push_back(event * (1 + 0.001 * (i - 10)));
    k.wall_ms.push_back(wall);
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    k.traced_event_ms.push_back(event);
    k.traced_wall_ms.push_back(wall);
    k.traced_after.push_back(10 * (i + 1));
    CallTrace t;
    t.call_id = i;
    t.kernels = kernels[i];
    t.kernel_sum_ns = kernel * 1e6;
    t.span_ns = kernel * 1e6;
    t.streams = {stream};
    t.memcpys = memcpys;
    t.kernel_names = {"_ZN8attngate3fwdILi128EEEvv"};
    k.traces.push_back(t);
  }
  return k;
}

Scenario scenario(const std::string& id) {
  Scenario s;
  s.id = id;
  s.batch = 1;
  s.seqlen_q = s.seqlen_k = 4096;
  s.heads_q = s.heads_kv = 16;
  s.head_dim = 128;
  return s;
}

Measurement measurement(KernelSeries kernel, KernelSeries base) {
  Measurement m;
  m.clock.available = true;
  m.clock.before_mhz = 1980;
  m.clock.after_mhz = 1900;
  m.clock.median_mhz = 1950;
  m.clock.min_mhz = 1890;
  m.clock.device_max_mhz = 1980;
  m.clock.event_reasons = 0x4;
  m.series = {std::move(kernel), std::move(base)};
  return m;
}

TEST(Compare, RowCarriesBothKernelsOnAllClocks) {
  const Scenario s = scenario("gate_a");
  const Measurement m = measurement(series("candidate", 1.0, 0.99, 1.05, {1, 1, 2, 1}, 7, 1),
                                    series("initial", 1.2, 1.19, 1.25, {1, 1, 1, 1}));
  const ComparisonRow row = comparison_row(s, m, {s.flops(), 989.5});
  EXPECT_EQ(row.kernel.name, "candidate");
  EXPECT_EQ(row.base.name, "initial");
  EXPECT_EQ(row.kernel.kernel_count_min, 1);
  EXPECT_EQ(row.kernel.kernel_count_max, 2);
  EXPECT_EQ(row.base.kernel_count_min, row.base.kernel_count_max);
  EXPECT_NEAR(row.kernel.get("kernel_ms"), 0.99, 1e-12);
  EXPECT_NEAR(clock_speedup(row, "kernel_ms"), 1.19 / 0.99, 1e-12);
  EXPECT_NEAR(clock_speedup(row, "wall_ms"), 1.25 / 1.05, 1e-12);
  EXPECT_TRUE(std::isnan(row.kernel.get("no_such_field")));
  ASSERT_EQ(row.kernel.kernel_names.size(), 1u);
  EXPECT_EQ(row.kernel.kernel_names[0], "attngate::fwd");
  EXPECT_THROW(comparison_row(s, Measurement{}, {}), std::invalid_argument);
}

// Every counter of the benchmark JSON is a named figure of the comparison's KernelTiming, and every
// figure is a counter the bench produces: a new counter without its member would be dropped from
// the document, a member without its counter would always be null. `kernel_names` is the one
// exception: the document's key holds the list of names, not their count.
TEST(Compare, EveryCounterIsANamedFigure) {
  std::set<std::string> counters(kernel_field_names().begin(), kernel_field_names().end());
  counters.erase("kernel_names");
  counters.insert({"alone_event_ms", "alone_rel_noise"});  // the base's, timed alone (bench_main.cpp)
  std::set<std::string> figures;
  for (const auto& f : timing_figures()) {
    EXPECT_TRUE(figures.insert(f.key).second) << f.key << " twice";
    for (const auto& g : timing_figures()) {
      if (&f == &g) continue;
      EXPECT_NE(f.member, g.member) << f.key << " and " << g.key << " are one member";
    }
  }
  EXPECT_EQ(figures, counters);
}

TEST(Compare, JsonHasWhatTheGateReads) {
  ComparisonReport r;
  r.kernel = "candidate";
  r.base = "initial";
  r.suite = "gate";
  r.device = "NVIDIA H200";
  r.device_sm = 90;
  r.driver_version = "580.159.04";
  r.cuda_driver_version = 13000;
  r.cuda_runtime_version = 12080;
  r.resamples = 200;
  for (const char* id : {"gate_a", "gate_b"}) {
    const Scenario s = scenario(id);
    r.rows.push_back(comparison_row(s, measurement(series("candidate", 1.0, 0.98, 1.05, {1, 1, 1, 1}),
                                                   series("initial", 1.1, 1.078, 1.155, {1, 1, 1, 1})),
                                    {s.flops(), 989.5}));
  }
  r.failed.push_back({"gate_c", failure_kind::kError, "out of memory"});
  const SuiteSpeedup sp = suite_speedup(r);
  const json j = json::parse(to_json(r, sp));

  // The document follows its schema, which the gate report and the Python tools check it against.
  std::ifstream schema_file(ATTNGATE_COMPARISON_SCHEMA);
  ASSERT_TRUE(schema_file) << ATTNGATE_COMPARISON_SCHEMA;
  EXPECT_EQ(verify::schema_problems(json::parse(schema_file), j), std::vector<std::string>{});
  EXPECT_EQ(j["schema"], kComparisonSchema);
  EXPECT_EQ(j["driver_version"], "580.159.04");
  EXPECT_EQ(j["cuda_driver_version"], "13.0");
  EXPECT_EQ(j["cuda_runtime_version"], "12.8");
  EXPECT_EQ(j["device_sm"], 90);
  EXPECT_NEAR(j["geomean_speedup"].get<double>(), 1.1, 1e-9);
  EXPECT_LE(j["geomean_ci95"][0].get<double>(), 1.1 + 1e-9);
  EXPECT_GE(j["geomean_ci95"][1].get<double>(), 1.1 - 1e-9);
  EXPECT_NEAR(j["geomean_kernel_speedup"].get<double>(), 1.1, 1e-9);
  EXPECT_NEAR(j["geomean_wall_speedup"].get<double>(), 1.1, 1e-9);
  EXPECT_EQ(j["sm_clock"]["available"], true);
  EXPECT_EQ(j["sm_clock"]["median_mhz"], 1950.0);
  EXPECT_EQ(j["sm_clock"]["min_mhz"], 1890.0);
  EXPECT_EQ(j["sm_clock"]["device_max_mhz"], 1980.0);
  EXPECT_EQ(j["sm_clock"]["event_reasons"], 4);
  EXPECT_EQ(j["sm_clock"]["scenarios_below_max"], 2);

  ASSERT_EQ(j["scenarios"].size(), 2u);
  const json& a = j["scenarios"][0];
  EXPECT_EQ(a["id"], "gate_a");
  // The flat fields of earlier versions keep their meaning: untraced event medians.
  EXPECT_NEAR(a["kernel_ms"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(a["base_ms"].get<double>(), 1.1, 1e-9);
  EXPECT_NEAR(a["kernel_speedup"].get<double>(), 1.1, 1e-9);
  EXPECT_NEAR(a["wall_speedup"].get<double>(), 1.1, 1e-9);
  for (const char* side : {"kernel_timing", "base_timing"}) {
    const json& t = a[side];
    for (const char* f : {"event_ms", "kernel_ms", "span_ms", "wall_ms", "cycles", "kernel_cycles", "kernels_per_call",
                          "kernel_count_min", "kernel_count_max", "kernel_count_changed", "kernel_count_changes",
                          "streams", "foreign_stream_kernels", "memcpy_per_call", "memset_per_call", "tflops",
                          "pct_peak", "sm_clock_mhz"})
      EXPECT_TRUE(t.contains(f)) << side << " lacks " << f;
  }
  EXPECT_EQ(a["kernel_timing"]["name"], "candidate");
  EXPECT_EQ(a["base_timing"]["name"], "initial");
  EXPECT_NEAR(a["kernel_timing"]["kernel_ms"].get<double>(), 0.98, 1e-9);
  EXPECT_NEAR(a["base_timing"]["wall_ms"].get<double>(), 1.155, 1e-9);
  EXPECT_NEAR(a["kernel_timing"]["cycles"].get<double>(), 1.0e-3 * 1950e6, 1e-3);
  EXPECT_EQ(a["kernel_timing"]["kernel_count_changed"], false);
  ASSERT_EQ(j["failed"].size(), 1u);
  EXPECT_EQ(j["failed"][0]["id"], "gate_c");
}

TEST(Compare, MissingClocksAreNull) {
  ComparisonReport r;
  ComparisonRow row;  // built by hand: no figures, as older callers do
  row.scenario = "gate_a";
  row.samples = {{1.0, 1.0}, {1.0, 1.0}};
  r.rows.push_back(row);
  const json j = json::parse(to_json(r, suite_speedup(r)));
  EXPECT_TRUE(j["geomean_kernel_speedup"].is_null());
  EXPECT_TRUE(j["scenarios"][0]["kernel_speedup"].is_null());
  EXPECT_EQ(j["sm_clock"]["available"], false);
  EXPECT_TRUE(j["sm_clock"]["median_mhz"].is_null());
  EXPECT_EQ(cuda_version_string(0), "");
  EXPECT_EQ(cuda_version_string(12040), "12.4");
}

}  // namespace
}  // namespace attngate::bench
