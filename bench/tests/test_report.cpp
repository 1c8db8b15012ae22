#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "attngate/bench/compare.hpp"
#include "attngate/bench/device_peak.hpp"
#include "attngate/bench/report.hpp"

namespace attngate::bench {
namespace {

KernelSeries series(double ms) {
  KernelSeries k;
  k.kernel = "initial";
  for (int i = 0; i < 21; ++i) {
    k.event_ms.push_back(ms * (1 + 0.001 * (i - 10)));
    k.wall_ms.push_back(ms + 0.02);
  }
  for (int i = 0; i < 4; ++i) {
    k.traced_event_ms.push_back(ms + 0.004);
    k.traced_wall_ms.push_back(ms + 0.1);
    CallTrace t;
    t.call_id = uint64_t(i);
    t.kernels = 1;
    t.kernel_sum_ns = ms * 1e6 + 3000;
    t.span_ns = t.kernel_sum_ns;
    t.streams = {7};
    t.kernel_names = {"_ZN8attngate3fwdILi128EEEvv"};
    k.traces.push_back(t);
  }
  return k;
}

double field(const Fields& f, const std::string& name) {
  for (const auto& [n, v] : f)
    if (n == name) return v;
  ADD_FAILURE() << "no field " << name;
  return 0;
}

TEST(Report, KernelFieldsMatchTheDeclaredNames) {
  Measurement m;
  m.clock.available = true;
  m.clock.before_mhz = 1980;
  m.clock.after_mhz = 1950;
  m.clock.median_mhz = 1950;
  m.clock.min_mhz = 1900;
  m.clock.device_max_mhz = 1980;
  m.input_sets = 3;
  m.stop = StopReason::noise_target;
  const KernelSeries k = series(2.0);
  const Fields f = kernel_fields(k, m, {4e12, 989.5});
  std::vector<std::string> names;
  for (const auto& [n, v] : f) names.push_back(n);
  EXPECT_EQ(names, kernel_field_names());
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());  // no duplicates
  // Names Google Benchmark's JSON already uses for its own keys would collide.
  for (const char* reserved : {"name", "iterations", "real_time", "cpu_time", "time_unit", "repetitions", "label"})
    EXPECT_EQ(std::count(names.begin(), names.end(), reserved), 0) << reserved;

  EXPECT_DOUBLE_EQ(field(f, "event_ms"), 2.0);
  EXPECT_NEAR(field(f, "tflops"), 4e12 / 2e-3 / 1e12, 1e-9);
  EXPECT_NEAR(field(f, "pct_peak"), 100 * 2000 / 989.5, 1e-9);
  EXPECT_NEAR(field(f, "kernel_ms"), 2.003, 1e-12);
  EXPECT_NEAR(field(f, "cupti_minus_event_us"), 3.0, 1e-9);
  EXPECT_NEAR(field(f, "tracing_overhead_us"), 4.0, 1e-9);
  EXPECT_NEAR(field(f, "host_tracing_overhead_us"), 80.0, 1e-9);
  EXPECT_NEAR(field(f, "wall_over_event"), 2.02 / 2.0, 1e-12);
  EXPECT_NEAR(field(f, "cycles"), 2e-3 * 1950e6, 1e-3);
  EXPECT_DOUBLE_EQ(field(f, "clock_dropped"), 0);  // after / before = 0.985

  EXPECT_DOUBLE_EQ(field(f, "clock_below_max"), 1);
  EXPECT_DOUBLE_EQ(field(f, "kernels_per_call"), 1);
  EXPECT_DOUBLE_EQ(field(f, "streams"), 1);
  EXPECT_DOUBLE_EQ(field(f, "samples"), 21);
  EXPECT_DOUBLE_EQ(field(f, "traced_samples"), 4);
  EXPECT_DOUBLE_EQ(field(f, "noise_target_met"), 1);
  EXPECT_EQ(kernel_label(k), "attngate::fwd");
}

TEST(Report, TracingOverheadIsPairedWithNeighbouringCalls) {
  // The clock drifts: untraced calls slow down by 1% per block of 10. Each block is followed by
  // one traced call that takes 3 µs more than its block, and whose CUPTI kernel time is 2 µs less
  // than its own event time. Subtracting whole-series medians would report the drift instead.
  KernelSeries k;
  Measurement m;
  m.untraced_block = 10;
  for (int block = 0; block < 8; ++block) {
    const double t = 1.0 * (1 + 0.01 * block);
    for (int i = 0; i < 10; ++i) {
      k.event_ms.push_back(t);
      k.wall_ms.push_back(t + 0.010);
    }
    k.traced_event_ms.push_back(t + 0.003);
    k.traced_wall_ms.push_back(t + 0.010 + 0.050);
    k.traced_after.push_back(k.event_ms.size());
    CallTrace c;
    c.kernels = 1;
    c.kernel_sum_ns = (t + 0.001) * 1e6;
    k.traces.push_back(c);
  }
  const Fields f = kernel_fields(k, m, {});
  EXPECT_NEAR(field(f, "tracing_overhead_us"), 3.0, 1e-6);
  EXPECT_NEAR(field(f, "host_tracing_overhead_us"), 50.0, 1e-6);
  EXPECT_NEAR(field(f, "cupti_minus_event_us"), 1.0, 1e-6);
  EXPECT_NEAR(field(f, "cupti_minus_traced_event_us"), -2.0, 1e-6);
}

TEST(Report, ClockDropIsAfterOverBefore) {
  Measurement m;
  m.clock.available = true;
  m.clock.device_max_mhz = m.clock.before_mhz = m.clock.median_mhz = m.clock.min_mhz = 1980;
  m.clock.after_mhz = 1980 * 0.96;
  EXPECT_DOUBLE_EQ(field(kernel_fields(series(1.0), m, {}), "clock_dropped"), 1);
  m.clock.after_mhz = 1980 * 0.98;
  EXPECT_DOUBLE_EQ(field(kernel_fields(series(1.0), m, {}), "clock_dropped"), 0);
  EXPECT_DOUBLE_EQ(field(kernel_fields(series(1.0), m, {}), "clock_below_max"), 0);
}

TEST(Report, UntracedSeriesReportsZerosNotGarbage) {
  KernelSeries k = series(1.0);
  k.traces.clear();
  k.traced_event_ms.clear();
  k.traced_wall_ms.clear();
  const Fields f = kernel_fields(k, Measurement{}, {});
  EXPECT_DOUBLE_EQ(field(f, "kernel_ms"), 0);
  EXPECT_DOUBLE_EQ(field(f, "tracing_overhead_us"), 0);
  EXPECT_DOUBLE_EQ(field(f, "event_over_kernel"), 0);
  EXPECT_DOUBLE_EQ(field(f, "nvml"), 0);
}

TEST(Report, ComparisonFields) {
  const KernelSeries a = series(1.0), b = series(1.1);
  const Fields f = comparison_fields(a, b, {1e12, 989.5}, 200, 1);
  std::vector<std::string> names;
  for (const auto& [n, v] : f) names.push_back(n);
  EXPECT_EQ(names, comparison_field_names());
  EXPECT_NEAR(field(f, "speedup"), 1.1, 1e-9);
  EXPECT_LE(field(f, "speedup_lo"), field(f, "speedup"));
  EXPECT_GE(field(f, "speedup_hi"), field(f, "speedup"));
  EXPECT_NEAR(field(f, "base_event_ms"), 1.1, 1e-12);
}

TEST(Report, ComparisonJsonAndTable) {
  ComparisonReport r;
  r.kernel = r.base = "initial";
  r.suite = "gate";
  r.device = "NVIDIA \"H200\"";
  ComparisonRow row;
  row.scenario = "gate_mha_d128_s4096";
  row.flops = 1e12;
  row.samples = {series(1.0).event_ms, series(1.0).event_ms};
  r.rows.push_back(row);
  r.failed.push_back({"gate_x", failure_kind::kError, "boom\n"});
  const SuiteSpeedup s = suite_speedup(r);
  EXPECT_NEAR(s.geomean, 1.0, 1e-12);
  const std::string json = to_json(r, s);
  EXPECT_NE(json.find("\"geomean_speedup\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("NVIDIA \\\"H200\\\""), std::string::npos);
  EXPECT_NE(json.find("boom\\n"), std::string::npos);
  // The console table's columns, byte for byte (written with snprintf until the table moved to
  // {fmt}; this pins that the move changed nothing).
  const std::string table = format_table(r, s);
  EXPECT_NE(table.find("gate_mha_d128_s4096"), std::string::npos);
  EXPECT_NE(table.find("scenario                                  kernel_ms    base_ms k_TFLOPS b_TFLOPS   speedup"
                       "              95% CI   k_spd   w_spd     k_cv     b_cv  calls\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("gate_mha_d128_s4096                          1.0000     1.0000   1000.0   1000.0    1.0000"
                       "   [ 1.0000,  1.0000]     nan     nan    0.62%    0.62%     21\n"),
            std::string::npos)
      << table;
}

TEST(Report, PeakLookup) {
  EXPECT_DOUBLE_EQ(lookup_peak("NVIDIA H200").bf16_dense_tflops, 989.5);
  EXPECT_DOUBLE_EQ(lookup_peak("NVIDIA H100 80GB HBM3").bf16_dense_tflops, 989.5);
  EXPECT_DOUBLE_EQ(lookup_peak("NVIDIA H100 PCIe").bf16_dense_tflops, 756.5);
  EXPECT_DOUBLE_EQ(lookup_peak("NVIDIA H20").bf16_dense_tflops, 148.0);
  EXPECT_DOUBLE_EQ(lookup_peak("Some GPU").bf16_dense_tflops, 0.0);
}

}  // namespace
}  // namespace attngate::bench
