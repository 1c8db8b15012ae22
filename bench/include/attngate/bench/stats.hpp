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
// paired), the per-scenario medians and speedups are recomputed, then their geometric mean. Each
// interval is widened where needed to contain its point estimate (the resampled median is biased
// on few discrete call times, and the bare percentile interval can miss the point). Deterministic
// for a given seed. Requires kernel.size() == base.size() > 0 in every scenario.
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

// The judge's clock around a worker's call reads the call plus a round trip, and the verdict rests
// on judge time less `subtracted_ms` (the baseline's round trip, Harness::settle_handoff). A judge
// time shorter than any round trip can be is no call at all: the worker did not wait for the judge's
// go event, or the round trip moved. The judge's evidence is the shortest round trip it saw
// (`lowest_ms`, the baseline's or alone: while other contexts share the GPU, round trips spread
// upwards and their median is far above what a call lucky with its time slice takes). A series is
// refused when a call is more than 2 us below it, or its median is not above it.
struct RoundTrip {
  double subtracted_ms = 0;
  double lowest_ms = 0;
};
struct ClockRefusal {
  bool refused = false;
  long calls_at_or_below_zero = 0;  // of the call times (judge less subtracted)
  double shortest_judge_ms = 0;
};
// `call_ms`: judge times with `subtracted_ms` already taken off. Empty: never refused.
ClockRefusal judge_clock_refusal(const std::vector<double>& call_ms, const RoundTrip& rt);

// The round trip to the worker spawned second is not the first's: on the H200 it was 0.07 to 1.1 us
// longer in 8 of 8 gate runs (which worker ran which kernel did not matter), 0.05-0.17 % of the gate's
// geomean against whichever kernel ran there. The judge cannot time that worker's round trip without
// the worker's word, so the word is taken within a bound: the worker's median round trip by its own
// events (judge less worker event time) less the reference's, clamped to [-cap_ms, cap_ms]. A worker
// that lies gains at most cap_ms a call. Empty or unequal series, a worker time that is not finite,
// not positive or longer than the judge's, or cap_ms <= 0: 0.
double round_trip_correction(const std::vector<double>& judge_ms, const std::vector<double>& worker_event_ms,
                             double reference_round_trip_ms, double cap_ms);

}  // namespace attngate::bench
