// The suite-level result of an interleaved comparison (--compare=KERNEL,BASE): per-scenario
// speedups, their geometric mean with a bootstrap interval, a console table and a JSON file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attngate/bench/stats.hpp"

namespace attngate::bench {

struct ComparisonRow {
  std::string scenario;
  std::string summary;  // scenario_summary()
  double flops = 0;
  PairedSamples samples;  // untraced event times (ms), kernel[i] and base[i] measured side by side
  std::string stop;       // why measuring stopped
  double loop_s = 0;
  double tracing_overhead_us = 0;  // kernel's traced minus untraced event time
  double cupti_minus_event_us = 0;
};

struct ComparisonReport {
  std::string kernel, base, suite, device;
  double peak_tflops = 0;
  double noise_target = 0;
  std::vector<ComparisonRow> rows;
  std::vector<std::pair<std::string, std::string>> failed;  // scenario, error
  int resamples = 2000;
  uint64_t seed = 20261129;
  double wall_s = 0;  // whole run, process start to report
};

// Speedup of the kernel over the base per scenario and over the suite (bootstrap_speedup).
SuiteSpeedup suite_speedup(const ComparisonReport& r);

std::string format_table(const ComparisonReport& r, const SuiteSpeedup& s);
std::string to_json(const ComparisonReport& r, const SuiteSpeedup& s);

std::string json_escape(const std::string& s);

}  // namespace attngate::bench
