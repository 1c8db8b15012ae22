// A run's timed calls as repetitions, in Google Benchmark's JSON format, so that its own
// tools/compare.py compares two attngate_bench runs with meaningful columns and its U-test
// (bench/README.md, "Google Benchmark's compare.py"). Each repetition is the median of a block of
// consecutive calls (kRoundPoints per series): `real_time` of the judge's clock (event_ms, the
// verdict's figure) and `cpu_time` of the judge's host clock around the same calls, launch to
// synchronize (wall_ms): per call, in microseconds. attngate_bench's own
// --benchmark_out has one iteration per (kernel, scenario) whose cpu_time is the host time of the
// whole adaptive measurement, which is why compare.py's CPU column is meaningless there.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attngate::bench {

// At most this many points per series: the medians of as many consecutive blocks of its calls
// (every call when there are fewer). compare.py's OVERALL_GEOMEAN averages every point of every
// series, so equal counts keep an adaptive run's many short calls from outweighing the rest.
inline constexpr size_t kRoundPoints = 30;

struct RoundSeries {
  std::string name;              // "<kernel>/<scenario>", the same in every run
  std::vector<double> real_ms;   // per call: the judge's clock
  std::vector<double> cpu_ms;    // per call: the judge's host clock (launch to synchronize)
};

// Google Benchmark's document: context, then per series its calls (run_type "iteration",
// repetition_index 0..n-1, iterations 1) and the aggregates mean, median and stddev.
nlohmann::json gbench_rounds_document(const std::vector<RoundSeries>& series, const nlohmann::json& context);

}  // namespace attngate::bench
