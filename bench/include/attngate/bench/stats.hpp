// Statistics for the benchmark harness: robust summaries of timing samples, the stopping rule, and
// the bootstrap interval of a suite's geometric-mean speedup. Pure CPU code, unit-tested on
// synthetic data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attngate::bench {

// Each throws std::invalid_argument on an empty sample.
double median(std::vector<double> v);
double min_of(const std::vector<double>& v);
double mean(const std::vector<double>& v);
double stddev(const std::vector<double>& v);  // sample (n - 1); 0 for a single value
double cv(const std::vector<double>& v);      // stddev / mean

struct Interval {
  double lo = 0;
  double hi = 0;
  bool contains(double x) const { return lo <= x && x <= hi; }
};

// Distribution-free 95% interval of the median from order statistics (ranks n/2 -+ 0.98*sqrt(n),
// clamped to the sample). Needs no model of the noise, so skewed or heavy-tailed timings (a
// late-arriving clock boost, one preempted call) neither shrink nor blow it up.
Interval median_ci95(std::vector<double> v);
// Half-width of median_ci95 divided by the median: how far the reported median could move if
// the measurement were repeated. The stopping rule's noise.
double relative_noise(const std::vector<double>& v);

enum class StopReason { none, noise_target, time_cap, max_samples };
std::string to_string(StopReason r);

struct StopRule {
  double noise_target = 0.005;
  int min_samples = 20;
  int max_samples = 20000;
  double time_cap_s = 1.0;
};

// Whether to stop measuring: every series has at least min_samples and relative_noise <=
// noise_target; or the time cap is reached; or a series reached max_samples. Series that must
// resolve together (the two kernels of an interleaved comparison) are passed together.
StopReason should_stop(const StopRule& rule, const std::vector<const std::vector<double>*>& series,
                       double elapsed_s);

double geomean(const std::vector<double>& v);  // throws on empty or non-positive values

// Calls of one scenario measured interleaved: base[i] and kernel[i] were taken next to each other.
struct PairedSamples {
  std::vector<double> kernel;  // times of the kernel under test
  std::vector<double> base;    // times of the base kernel
};

struct SpeedupEstimate {
  double speedup = 0;  // median(base) / median(kernel): > 1 means the kernel is faster
  Interval ci95;
};

struct SuiteSpeedup {
  std::vector<SpeedupEstimate> scenarios;
  double geomean = 0;
  Interval ci95;
  int resamples = 0;
  uint64_t seed = 0;
};

// Per-scenario speedups, their geometric mean, and percentile-bootstrap 95% intervals. Each
// resample draws call indices with replacement within each scenario; kernel and base samples of
// one index are drawn together (they were measured side by side, so drift shared by both stays
// paired), the per-scenario medians and speedups are recomputed, then their geometric mean.
// Deterministic for a given seed. Requires kernel.size() == base.size() > 0 in every scenario.
SuiteSpeedup bootstrap_speedup(const std::vector<PairedSamples>& scenarios, int resamples,
                               uint64_t seed);

// The geometric mean of per-scenario speedups with a 95% interval made from their own intervals,
// for results whose calls are gone (merged shards): log(geomean) is a mean of logs, so its
// standard error is sqrt(sum(se_i^2)) / n, se_i being each interval's log half-width / 1.96.
// Throws std::invalid_argument on no scenarios, a non-positive speedup or a malformed interval.
SpeedupEstimate geomean_from_intervals(const std::vector<SpeedupEstimate>& scenarios);

// One scenario's speedup in a run against the same scenario's recorded speedup: r = current /
// recorded, with a 95% interval combining both intervals in quadrature in log space.
enum class RunVerdict {
  same,       // the interval contains 1 and lies within [1 - threshold, 1 + threshold]
  faster,     // the whole interval is above 1
  slower,     // the whole interval is below 1
  ambiguous,  // the interval contains 1 but is wider than the threshold: too noisy to tell
};
std::string to_string(RunVerdict v);  // "SAME", "FASTER", "SLOWER", "AMBIGUOUS"

struct RunJudgement {
  RunVerdict verdict = RunVerdict::ambiguous;
  double ratio = 0;
  Interval ci95;
  bool confirmed_slowdown = false;  // slower, and by more than the threshold: a failure of the run
};
// Throws std::invalid_argument on a non-positive speedup or a malformed interval.
RunJudgement judge_run(const SpeedupEstimate& current, const SpeedupEstimate& recorded, double threshold);

// FLOPs over seconds, in TFLOP/s.
double tflops(double flops, double seconds);

}  // namespace attngate::bench
