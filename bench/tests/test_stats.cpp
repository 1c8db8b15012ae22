#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "attngate/bench/stats.hpp"
#include "attngate/scenario.hpp"

namespace attngate::bench {
namespace {

std::vector<double> lognormal(size_t n, double median_value, double sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, sigma);
  std::vector<double> v(n);
  for (auto& x : v) x = median_value * std::exp(z(rng));
  return v;
}

TEST(Stats, MedianOddEvenAndUnsorted) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
  EXPECT_DOUBLE_EQ(median({5, 5, 1, 100, 5}), 5);  // an outlier does not move it
  EXPECT_THROW(median({}), std::invalid_argument);
}

TEST(Stats, MinMeanStddevCv) {
  const std::vector<double> v = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(min_of(v), 1);
  EXPECT_DOUBLE_EQ(mean(v), 3);
  EXPECT_NEAR(stddev(v), std::sqrt(2.5), 1e-12);  // sample standard deviation (n - 1)
  EXPECT_NEAR(cv(v), std::sqrt(2.5) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(stddev({4.0}), 0);
  EXPECT_DOUBLE_EQ(cv({2, 2, 2}), 0);
}

TEST(Stats, MedianIntervalUsesOrderStatistics) {
  // n = 100: ranks floor(50 - 9.8) = 40 and ceil(1 + 50 + 9.8) = 61 (1-based) of 1..100.
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  const Interval ci = median_ci95(v);
  EXPECT_DOUBLE_EQ(ci.lo, 40);
  EXPECT_DOUBLE_EQ(ci.hi, 61);
  EXPECT_NEAR(relative_noise(v), (61.0 - 40.0) / 2 / 50.5, 1e-12);
  // Tiny samples: the interval is the whole range.
  const Interval small = median_ci95({1, 2, 3});
  EXPECT_DOUBLE_EQ(small.lo, 1);
  EXPECT_DOUBLE_EQ(small.hi, 3);
  EXPECT_DOUBLE_EQ(relative_noise({2, 2, 2, 2}), 0);
}

TEST(Stats, MedianIntervalCoversTheTrueMedian) {
  // 95% nominal coverage: over 400 samples of 60 lognormal values, between 90% and 99% cover 1.
  int covered = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) covered += median_ci95(lognormal(60, 1.0, 0.02, seed)).contains(1.0);
  EXPECT_GE(covered, 360);
  EXPECT_LE(covered, 396);
}

TEST(Stats, RelativeNoiseShrinksWithSamples) {
  const double n50 = relative_noise(lognormal(50, 1.0, 0.01, 7));
  const double n5000 = relative_noise(lognormal(5000, 1.0, 0.01, 7));
  EXPECT_GT(n50, 3 * n5000);  // ~ 1/sqrt(n): 10x fewer samples, ~10x wider
  // For lognormal noise of 1% the half-width is about 1.96 * 1.2533 * 0.01 / sqrt(n).
  EXPECT_NEAR(n5000, 1.96 * 1.2533 * 0.01 / std::sqrt(5000.0), 0.25 * n5000);
}

TEST(Stats, StoppingRule) {
  StopRule rule;
  rule.noise_target = 0.005;
  rule.min_samples = 20;
  rule.max_samples = 1000;
  rule.time_cap_s = 2.0;
  const std::vector<double> quiet(30, 1.0), few(10, 1.0);
  const std::vector<double> noisy = lognormal(30, 1.0, 0.2, 3);
  EXPECT_EQ(should_stop(rule, {&quiet}, 0.1), StopReason::noise_target);
  EXPECT_EQ(should_stop(rule, {&few}, 0.1), StopReason::none);  // quiet but below min_samples
  EXPECT_EQ(should_stop(rule, {&noisy}, 0.1), StopReason::none);
  EXPECT_EQ(should_stop(rule, {&noisy}, 2.5), StopReason::time_cap);
  EXPECT_EQ(should_stop(rule, {&quiet, &noisy}, 0.1), StopReason::none);  // all series must resolve
  const std::vector<double> many = lognormal(1000, 1.0, 0.2, 4);
  EXPECT_EQ(should_stop(rule, {&many}, 0.1), StopReason::max_samples);
  // The rule stops a noisy series once enough samples pull the interval in.
  const std::vector<double> settled = lognormal(4000, 1.0, 0.05, 5);
  rule.max_samples = 100000;
  EXPECT_EQ(should_stop(rule, {&settled}, 0.1), StopReason::noise_target);
}

TEST(Stats, Geomean) {
  EXPECT_NEAR(geomean({2, 8}), 4, 1e-12);
  EXPECT_NEAR(geomean({1.1, 1.1, 1.1}), 1.1, 1e-12);
  EXPECT_NEAR(geomean({0.5, 2}), 1, 1e-12);
  EXPECT_THROW(geomean({1, 0}), std::invalid_argument);
  EXPECT_THROW(geomean({}), std::invalid_argument);
}

TEST(Stats, BootstrapOfAKnownSpeedup) {
  // Kernel exactly 5% faster than base on every call of three scenarios: the ratio is exact.
  std::vector<PairedSamples> s;
  for (int i = 0; i < 3; ++i) {
    PairedSamples p;
    p.base = lognormal(50, 1.0 + i, 0.01, 10 + i);
    for (double b : p.base) p.kernel.push_back(b / 1.05);
    s.push_back(p);
  }
  const SuiteSpeedup r = bootstrap_speedup(s, 500, 1);
  EXPECT_NEAR(r.geomean, 1.05, 1e-9);
  EXPECT_NEAR(r.ci95.lo, 1.05, 1e-9);
  EXPECT_NEAR(r.ci95.hi, 1.05, 1e-9);
  ASSERT_EQ(r.scenarios.size(), 3u);
  EXPECT_NEAR(r.scenarios[1].speedup, 1.05, 1e-9);
}

TEST(Stats, BootstrapAAIntervalContainsOne) {
  // A/A: both series drawn from the same distribution, independently.
  std::vector<PairedSamples> s;
  for (uint64_t i = 0; i < 28; ++i) s.push_back({lognormal(80, 1.0 + double(i), 0.01, 100 + i),
                                                 lognormal(80, 1.0 + double(i), 0.01, 200 + i)});
  const SuiteSpeedup r = bootstrap_speedup(s, 2000, 20261129);
  EXPECT_TRUE(r.ci95.contains(1.0)) << r.ci95.lo << " " << r.ci95.hi;
  EXPECT_NEAR(r.geomean, 1.0, 0.003);
  EXPECT_LT(r.ci95.hi - r.ci95.lo, 0.01);
  EXPECT_LE(r.ci95.lo, r.geomean);
  EXPECT_GE(r.ci95.hi, r.geomean);
  for (const auto& e : r.scenarios) EXPECT_LE(e.ci95.lo, e.ci95.hi);
  // Deterministic for a seed, different for another.
  const SuiteSpeedup again = bootstrap_speedup(s, 2000, 20261129);
  EXPECT_EQ(r.ci95.lo, again.ci95.lo);
  EXPECT_EQ(r.ci95.hi, again.ci95.hi);
  EXPECT_NE(r.ci95.lo, bootstrap_speedup(s, 2000, 7).ci95.lo);
}

TEST(Stats, BootstrapIntervalCoversATrueShift) {
  // A 2% gain under 1% noise, 28 scenarios of 60 calls: the interval holds 1.02 and excludes 1.
  std::vector<PairedSamples> s;
  for (uint64_t i = 0; i < 28; ++i)
    s.push_back({lognormal(60, 1.0 / 1.02, 0.01, 300 + i), lognormal(60, 1.0, 0.01, 400 + i)});
  const SuiteSpeedup r = bootstrap_speedup(s, 2000, 3);
  EXPECT_TRUE(r.ci95.contains(1.02)) << r.ci95.lo << " " << r.ci95.hi;
  EXPECT_GT(r.ci95.lo, 1.0);
}

// Ten discrete call times whose resampled median is biased: the bare 2.5-97.5 % percentiles of
// the geomean were [1.96674, 2.08764] around a point of 1.96602 (found by search, 500 resamples,
// seed 7); the intervals must contain their points.
TEST(Stats, BootstrapIntervalsContainTheirPointEstimates) {
  PairedSamples s;
  s.kernel = {1.03, 1.03, 1.03, 1.03, 1.00, 1.00, 1.03, 1.03, 1.00, 1.02};
  s.base = {2.20, 2.22, 2.02, 2.23, 2.02, 2.02, 2.21, 2.03, 2.02, 2.02};
  const SuiteSpeedup r = bootstrap_speedup({s, s, s}, 500, 7);
  EXPECT_NEAR(r.geomean, 2.025 / 1.03, 1e-12);
  EXPECT_TRUE(r.ci95.contains(r.geomean)) << r.ci95.lo << " " << r.ci95.hi;
  EXPECT_DOUBLE_EQ(r.ci95.lo, r.geomean);  // the percentile bound lay above the point
  EXPECT_GT(r.ci95.hi, r.geomean);
  for (const auto& e : r.scenarios) EXPECT_TRUE(e.ci95.contains(e.speedup));
}

TEST(Stats, BootstrapRejectsUnpairedInput) {
  EXPECT_THROW(bootstrap_speedup({}, 10, 1), std::invalid_argument);
  EXPECT_THROW(bootstrap_speedup({{{1, 2}, {1}}}, 10, 1), std::invalid_argument);
}

TEST(Stats, FlopsToTflops) {
  EXPECT_DOUBLE_EQ(tflops(1e12, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(tflops(2e12, 4e-3), 500.0);
  EXPECT_DOUBLE_EQ(tflops(1e12, 0.0), 0.0);

  // FlashAttention's formula through Scenario::flops(): 4 * B * Hq * Sq * Sk * D, non-causal.
  Scenario s;
  s.batch = 1;
  s.seqlen_q = s.seqlen_k = 16384;
  s.heads_q = s.heads_kv = 16;
  s.head_dim = 128;
  const double dense = 4.0 * 16 * 16384.0 * 16384.0 * 128;
  EXPECT_NEAR(s.flops(), dense, dense * 1e-12);
  EXPECT_NEAR(tflops(s.flops(), 7.2e-3), dense / 7.2e-3 / 1e12, 1e-6);
  // Causal with Sq == Sk: row i sees i + 1 keys, mean (Sk + 1) / 2, about half.
  s.causal = true;
  EXPECT_NEAR(s.flops(), dense * (16384.0 + 1) / 2 / 16384.0, dense * 1e-9);
}

// The judge clock's refusal, on the figures of the H200 (2026-12-02): a round trip of 287.5 us
// subtracted, the shortest seen 286.0 us here (279.2 us in a whole gate run); a 3.55 ms median round
// trip when eight gate runs shared the GPU (adversarial.cheat_persisting_l2), the shortest assumed
// near the one alone.
TEST(Stats, JudgeClockRefusesCallsNoRoundTripCouldGive) {
  const RoundTrip alone{0.2875, 0.2860};
  EXPECT_FALSE(judge_clock_refusal({}, alone).refused);
  EXPECT_FALSE(judge_clock_refusal({0.020, 0.021, 0.0195}, alone).refused);       // honest 20 us calls
  EXPECT_FALSE(judge_clock_refusal({0.0001, -0.0015, 0.0002}, alone).refused);   // a few-ns call, in the noise
  // A worker that records its done event without waiting for the go event: 3.9 us of judge time.
  const ClockRefusal skip = judge_clock_refusal({0.0039 - 0.2875, 0.1, 0.1}, alone);
  EXPECT_TRUE(skip.refused);
  EXPECT_EQ(skip.calls_at_or_below_zero, 1);
  EXPECT_NEAR(skip.shortest_judge_ms, 0.0039, 1e-12);
  // More than 2 us below the shortest round trip seen (286.0 us): refused; less: kept.
  EXPECT_TRUE(judge_clock_refusal({-0.0036, 0.1, 0.1}, alone).refused);
  EXPECT_FALSE(judge_clock_refusal({-0.0034, 0.1, 0.1}, alone).refused);
  // A median not above the shortest round trip: refused whatever the margin.
  EXPECT_TRUE(judge_clock_refusal({-0.0016, -0.0016, 0.1}, alone).refused);
  EXPECT_FALSE(judge_clock_refusal({-0.0014, -0.0014, 0.1}, alone).refused);

  const RoundTrip shared{3.548, 0.29};
  // A 1 ms call that got its time slice at once, beside calls that waited for others': kept.
  EXPECT_FALSE(judge_clock_refusal({1.942 - 3.548, 2.0}, shared).refused);
  // The skipped wait is refused there too.
  EXPECT_TRUE(judge_clock_refusal({0.0039 - 3.548, 2.0}, shared).refused);
  EXPECT_TRUE(judge_clock_refusal({0.25 - 3.548, 0.28 - 3.548, 2.0}, shared).refused);
}

// The second worker's round trip, corrected within the trust the suite's policy gives its word.
TEST(Stats, RoundTripCorrectionIsBounded) {
  const std::vector<double> judge = {0.5885, 0.5887, 0.5886}, worker = {0.3000, 0.3002, 0.3001};
  // Its round trip 288.5 us against the reference's 287.5: 1 us, within a trust of 1.5 us.
  EXPECT_NEAR(round_trip_correction(judge, worker, 0.2875, 0.0015), 0.0010, 1e-9);
  EXPECT_NEAR(round_trip_correction(judge, worker, 0.2895, 0.0015), -0.0010, 1e-9);  // either way
  // A worker that reports half its time (interposed timers) gains at most the trust.
  const std::vector<double> halved = {0.1500, 0.1501, 0.1500};
  EXPECT_NEAR(round_trip_correction(judge, halved, 0.2875, 0.0015), 0.0015, 1e-12);
  // A worker time that is no time earns nothing: not finite, not positive, longer than the judge's.
  EXPECT_EQ(round_trip_correction(judge, {std::nan(""), 0.3002, 0.3001}, 0.2875, 0.0015), 0);
  EXPECT_EQ(round_trip_correction(judge, {0.0, 0.3002, 0.3001}, 0.2875, 0.0015), 0);
  EXPECT_EQ(round_trip_correction(judge, {0.3000, 0.6, 0.3001}, 0.2875, 0.0015), 0);
  EXPECT_EQ(round_trip_correction(judge, worker, 0.2875, 0), 0);  // no trust: never moved
  EXPECT_EQ(round_trip_correction({}, {}, 0.2875, 0.0015), 0);
  EXPECT_EQ(round_trip_correction(judge, {0.3}, 0.2875, 0.0015), 0);
}

}  // namespace
}  // namespace attngate::bench
