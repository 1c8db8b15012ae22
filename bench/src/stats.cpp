#include "attngate/bench/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

namespace attngate::bench {

namespace {

void require_nonempty(const std::vector<double>& v, const char* what) {
  if (v.empty()) throw std::invalid_argument(std::string(what) + " of an empty sample");
}

// Linear-interpolation quantile of a sorted sample (the "type 7" definition of R and NumPy).
double sorted_quantile(const std::vector<double>& s, double q) {
  const double pos = q * double(s.size() - 1);
  const size_t i = size_t(std::floor(pos));
  const double frac = pos - double(i);
  return i + 1 < s.size() ? s[i] + frac * (s[i + 1] - s[i]) : s[i];
}

}  // namespace

double median(std::vector<double> v) {
  require_nonempty(v, "median");
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + mid);
  return 0.5 * (lo + hi);
}

double min_of(const std::vector<double>& v) {
  require_nonempty(v, "min");
  return *std::min_element(v.begin(), v.end());
}

double mean(const std::vector<double>& v) {
  require_nonempty(v, "mean");
  return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

double stddev(const std::vector<double>& v) {
  require_nonempty(v, "stddev");
  if (v.size() < 2) return 0.0;
  const double m = mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / double(v.size() - 1));
}

double cv(const std::vector<double>& v) {
  const double m = mean(v);
  return m != 0 ? stddev(v) / m : 0.0;
}

Interval median_ci95(std::vector<double> v) {
  require_nonempty(v, "median interval");
  std::sort(v.begin(), v.end());
  const double n = double(v.size());
  const double half = 1.959963984540054 * std::sqrt(n) / 2.0;
  // 1-based ranks of the order statistics bracketing the median.
  const double lo_rank = std::floor(n / 2.0 - half);
  const double hi_rank = std::ceil(1.0 + n / 2.0 + half);
  const size_t lo = size_t(std::clamp(lo_rank, 1.0, n)) - 1;
  const size_t hi = size_t(std::clamp(hi_rank, 1.0, n)) - 1;
  return {v[lo], v[hi]};
}

double relative_noise(const std::vector<double>& v) {
  const double m = median(v);
  const Interval ci = median_ci95(v);
  return m != 0 ? (ci.hi - ci.lo) / (2.0 * std::abs(m)) : 0.0;
}

std::string to_string(StopReason r) {
  switch (r) {
    case StopReason::none: return "none";
    case StopReason::noise_target: return "noise_target";
    case StopReason::time_cap: return "time_cap";
    case StopReason::max_samples: return "max_samples";
  }
  return "unknown";
}

StopReason should_stop(const StopRule& rule, const std::vector<const std::vector<double>*>& series,
                       double elapsed_s) {
  bool all_resolved = !series.empty();
  for (const auto* s : series) {
    if (int(s->size()) >= rule.max_samples) return StopReason::max_samples;
    if (int(s->size()) < std::max(rule.min_samples, 1) || relative_noise(*s) > rule.noise_target)
      all_resolved = false;
  }
  if (all_resolved) return StopReason::noise_target;
  if (elapsed_s >= rule.time_cap_s) return StopReason::time_cap;
  return StopReason::none;
}

double geomean(const std::vector<double>& v) {
  require_nonempty(v, "geomean");
  double log_sum = 0;
  for (double x : v) {
    if (!(x > 0)) throw std::invalid_argument("geomean of a non-positive value");
    log_sum += std::log(x);
  }
  return std::exp(log_sum / double(v.size()));
}

// The 2.5 % and 97.5 % quantiles of sorted bootstrap replicates, widened to contain the point
// estimate. The median of a few discrete call times resamples with a bias, and on the H200 the
// percentile interval of a geomean over 23 such scenarios lay wholly above its point (1.9893x,
// [1.9900, 2.0040]); a gate passing on the lower bound must never pass a point below its target.
Interval percentile_interval_around(const std::vector<double>& sorted, double point) {
  return {std::min(point, sorted_quantile(sorted, 0.025)), std::max(point, sorted_quantile(sorted, 0.975))};
}

SuiteSpeedup bootstrap_speedup(const std::vector<PairedSamples>& scenarios, int resamples,
                               uint64_t seed) {
  if (scenarios.empty()) throw std::invalid_argument("bootstrap over an empty suite");
  if (resamples < 1) throw std::invalid_argument("bootstrap needs at least one resample");
  for (const auto& s : scenarios)
    if (s.kernel.empty() || s.kernel.size() != s.base.size())
      throw std::invalid_argument("bootstrap: every scenario needs as many kernel as base samples");

  SuiteSpeedup out;
  out.resamples = resamples;
  out.seed = seed;
  std::vector<double> point(scenarios.size());
  for (size_t i = 0; i < scenarios.size(); ++i) {
    point[i] = median(scenarios[i].base) / median(scenarios[i].kernel);
    out.scenarios.push_back({point[i], {}});
  }
  out.geomean = geomean(point);

  // mt19937_64 is specified bit for bit by the standard; the modulo reduction (not
  // uniform_int_distribution, whose algorithm is left to the library) keeps resamples identical
  // across standard libraries. Its bias is below n / 2^64.
  std::mt19937_64 rng(seed);
  std::vector<std::vector<double>> per_scenario(scenarios.size());
  std::vector<double> geo(static_cast<size_t>(resamples));
  std::vector<double> ka, ba, ratios(scenarios.size());
  for (int r = 0; r < resamples; ++r) {
    for (size_t i = 0; i < scenarios.size(); ++i) {
      const auto& s = scenarios[i];
      const size_t n = s.kernel.size();
      ka.resize(n);
      ba.resize(n);
      for (size_t j = 0; j < n; ++j) {
        const size_t idx = size_t(rng() % n);
        ka[j] = s.kernel[idx];
        ba[j] = s.base[idx];
      }
      ratios[i] = median(ba) / median(ka);
      per_scenario[i].push_back(ratios[i]);
    }
    geo[size_t(r)] = geomean(ratios);
  }
  std::sort(geo.begin(), geo.end());
  out.ci95 = percentile_interval_around(geo, out.geomean);
  for (size_t i = 0; i < scenarios.size(); ++i) {
    std::sort(per_scenario[i].begin(), per_scenario[i].end());
    out.scenarios[i].ci95 = percentile_interval_around(per_scenario[i], point[i]);
  }
  return out;
}

double tflops(double flops, double seconds) {
  if (!(seconds > 0)) return 0.0;
  return flops / seconds / 1e12;
}

ClockRefusal judge_clock_refusal(const std::vector<double>& call_ms, const RoundTrip& rt) {
  ClockRefusal r;
  if (call_ms.empty()) return r;
  constexpr double kMarginMs = 0.002;
  // In call time (judge time less subtracted_ms). The shortest round trip alone, not the spread of
  // the baseline's, which another context can widen by keeping the GPU busy during its calls.
  const double floor = std::min(rt.lowest_ms, rt.subtracted_ms) - rt.subtracted_ms;
  const double shortest = min_of(call_ms);
  r.shortest_judge_ms = shortest + rt.subtracted_ms;
  r.calls_at_or_below_zero = std::count_if(call_ms.begin(), call_ms.end(), [](double t) { return t <= 0; });
  r.refused = shortest < floor - kMarginMs || median(call_ms) <= floor;
  return r;
}

double round_trip_correction(const std::vector<double>& judge_ms, const std::vector<double>& worker_event_ms,
                             double reference_round_trip_ms, double cap_ms) {
  if (!(cap_ms > 0) || judge_ms.empty() || judge_ms.size() != worker_event_ms.size()) return 0;
  std::vector<double> round_trips(judge_ms.size());
  for (size_t i = 0; i < judge_ms.size(); ++i) {
    // A worker time that is no time (not finite, not positive, longer than the judge's) earns nothing.
    if (!std::isfinite(worker_event_ms[i]) || !(worker_event_ms[i] > 0) || worker_event_ms[i] > judge_ms[i]) return 0;
    round_trips[i] = judge_ms[i] - worker_event_ms[i];
  }
  return std::clamp(median(round_trips) - reference_round_trip_ms, -cap_ms, cap_ms);
}

namespace {

constexpr double kZ95 = 1.959963984540054;

// Half-width of a ratio's 95% interval in log space, where it is symmetric.
double log_halfwidth(const Interval& ci) {
  if (!(ci.lo > 0 && ci.hi >= ci.lo)) throw std::invalid_argument("malformed interval");
  return (std::log(ci.hi) - std::log(ci.lo)) / 2.0;
}

}  // namespace

SpeedupEstimate geomean_from_intervals(const std::vector<SpeedupEstimate>& scenarios) {
  if (scenarios.empty()) throw std::invalid_argument("geomean_from_intervals of no scenarios");
  double log_sum = 0, var_sum = 0;
  for (const auto& s : scenarios) {
    if (!(s.speedup > 0)) throw std::invalid_argument("geomean_from_intervals of a non-positive speedup");
    log_sum += std::log(s.speedup);
    const double se = log_halfwidth(s.ci95) / kZ95;
    var_sum += se * se;
  }
  const double n = double(scenarios.size());
  const double mean = log_sum / n, se = std::sqrt(var_sum) / n;
  return {std::exp(mean), {std::exp(mean - kZ95 * se), std::exp(mean + kZ95 * se)}};
}

std::string to_string(RunVerdict v) {
  switch (v) {
    case RunVerdict::same: return "SAME";
    case RunVerdict::faster: return "FASTER";
    case RunVerdict::slower: return "SLOWER";
    case RunVerdict::ambiguous: return "AMBIGUOUS";
  }
  return "AMBIGUOUS";
}

RunJudgement judge_run(const SpeedupEstimate& current, const SpeedupEstimate& recorded, double threshold) {
  if (!(current.speedup > 0) || !(recorded.speedup > 0))
    throw std::invalid_argument("judge_run: speedups must be positive");
  RunJudgement j;
  j.ratio = current.speedup / recorded.speedup;
  const double h = std::hypot(log_halfwidth(current.ci95), log_halfwidth(recorded.ci95));
  j.ci95 = {j.ratio * std::exp(-h), j.ratio * std::exp(h)};
  if (j.ci95.lo > 1.0) j.verdict = RunVerdict::faster;
  else if (j.ci95.hi < 1.0) j.verdict = RunVerdict::slower;
  else if (j.ci95.lo >= 1.0 - threshold && j.ci95.hi <= 1.0 + threshold) j.verdict = RunVerdict::same;
  else j.verdict = RunVerdict::ambiguous;
  j.confirmed_slowdown = j.verdict == RunVerdict::slower && j.ratio < 1.0 - threshold;
  return j;
}

}  // namespace attngate::bench
