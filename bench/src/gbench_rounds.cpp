// Google Benchmark's JSON with every timed call as a repetition (gbench_rounds.hpp).
#include "attngate/bench/gbench_rounds.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attngate::bench {
namespace {

nlohmann::json record(const RoundSeries& s, double real_ms, double cpu_ms) {
  return {{"name", s.name},       {"run_name", s.name},       {"run_type", "iteration"},
          {"repetitions", int(s.real_ms.size())},             {"threads", 1},
          {"iterations", 1},      {"real_time", real_ms * 1e3}, {"cpu_time", cpu_ms * 1e3},
          {"time_unit", "us"}};
}

double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double stddev_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / double(v.size() - 1));
}

// The medians of `points` consecutive, near-equal blocks of v (v itself when it is shorter), in order.
std::vector<double> block_medians(const std::vector<double>& v, size_t points) {
  if (v.size() <= points) return v;
  std::vector<double> out;
  for (size_t b = 0; b < points; ++b) {
    const size_t lo = b * v.size() / points, hi = (b + 1) * v.size() / points;
    out.push_back(median_of(std::vector<double>(v.begin() + long(lo), v.begin() + long(hi))));
  }
  return out;
}

}  // namespace

nlohmann::json gbench_rounds_document(const std::vector<RoundSeries>& series, const nlohmann::json& context) {
  nlohmann::json benchmarks = nlohmann::json::array();
  for (const RoundSeries& s : series) {
    const size_t calls = std::min(s.real_ms.size(), s.cpu_ms.size());
    if (calls == 0) continue;
    const std::vector<double> real = block_medians({s.real_ms.begin(), s.real_ms.begin() + long(calls)}, kRoundPoints),
                              cpu = block_medians({s.cpu_ms.begin(), s.cpu_ms.begin() + long(calls)}, kRoundPoints);
    const size_t n = real.size();
    for (size_t i = 0; i < n; ++i) {
      nlohmann::json r = record(s, real[i], cpu[i]);
      r["repetitions"] = int(n);
      r["repetition_index"] = int(i);
      benchmarks.push_back(std::move(r));
    }
    for (const auto& [agg, fn] : {std::pair{"mean", &mean_of}, std::pair{"stddev", &stddev_of}}) {
      nlohmann::json r = record(s, fn(real), fn(cpu));
      r["name"] = s.name + "_" + agg;
      r["run_type"] = "aggregate";
      r["aggregate_name"] = agg;
      r["repetitions"] = int(n);
      benchmarks.push_back(std::move(r));
    }
    nlohmann::json r = record(s, median_of(real), median_of(cpu));
    r["name"] = s.name + "_median";
    r["run_type"] = "aggregate";
    r["aggregate_name"] = "median";
    r["repetitions"] = int(n);
    benchmarks.push_back(std::move(r));
  }
  return {{"context", context}, {"benchmarks", benchmarks}};
}

}  // namespace attngate::bench
