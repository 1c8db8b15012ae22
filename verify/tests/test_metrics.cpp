#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attngate/verify/metrics.hpp"
#include "attngate/verify/problem.hpp"

using namespace attngate;
using namespace attngate::verify;

namespace {
const float kNegInf = -std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST(compare, max_abs_rel_l2_and_worst_element) {
  const std::vector<float> want = {1.0f, -2.0f, 3.0f, 0.5f};
  const std::vector<float> got = {1.0f, -2.5f, 3.1f, 0.5f};
  const ErrorStats s = compare(got.data(), want.data(), 4);
  EXPECT_EQ(s.count, 4);
  EXPECT_TRUE(s.clean());
  EXPECT_NEAR(s.max_abs, 0.5, 1e-7);
  EXPECT_EQ(s.worst_index, 1);
  EXPECT_FLOAT_EQ(s.worst_got, -2.5f);
  EXPECT_FLOAT_EQ(s.worst_want, -2.0f);
  const double diff = std::sqrt(0.25 + 0.01), ref = std::sqrt(1 + 4 + 9 + 0.25);
  EXPECT_NEAR(s.rel_l2, diff / ref, 1e-6);
}

TEST(compare, scaled_error_is_relative_above_one) {
  const std::vector<float> want = {150.0f, 0.5f};
  const std::vector<float> got = {150.015f, 0.502f};
  const ErrorStats s = compare(got.data(), want.data(), 2);
  EXPECT_NEAR(s.max_abs, 0.015, 1e-4);
  EXPECT_NEAR(s.max_scaled, 0.002, 1e-6);  // 0.015/150 = 1e-4 < 0.002/1
}

TEST(compare, identical_is_zero_error) {
  const std::vector<float> v = {0.25f, -7.0f, 1e-3f};
  const ErrorStats s = compare(v.data(), v.data(), 3);
  EXPECT_EQ(s.max_abs, 0.0);
  EXPECT_EQ(s.rel_l2, 0.0);
  EXPECT_TRUE(s.clean());
}

TEST(compare, nan_and_inf_never_pass) {
  const std::vector<float> want = {1.0f, 2.0f, 3.0f};
  const std::vector<float> got = {kNaN, std::numeric_limits<float>::infinity(), 3.0f};
  const ErrorStats s = compare(got.data(), want.data(), 3);
  EXPECT_EQ(s.nonfinite, 2);
  EXPECT_FALSE(s.clean());
  const DtypeTolerance loose{1e9, 1e9, 1e9, 1e9};
  EXPECT_FALSE(judge_absolute(s, compare(want.data(), want.data(), 3), loose).pass);
}

TEST(compare, fully_masked_rows_need_exact_minus_inf) {
  const std::vector<float> want = {kNegInf, 1.0f};
  const std::vector<float> match = {kNegInf, 1.0f};
  EXPECT_TRUE(compare(match.data(), want.data(), 2).clean());
  const std::vector<float> finite = {-1e30f, 1.0f};
  EXPECT_EQ(compare(finite.data(), want.data(), 2).masked_mismatch, 1);
  const std::vector<float> spurious = {kNegInf, kNegInf};
  const std::vector<float> want2 = {kNegInf, 1.0f};
  EXPECT_EQ(compare(spurious.data(), want2.data(), 2).masked_mismatch, 1);
  const std::vector<float> nan = {kNaN, 1.0f};
  EXPECT_EQ(compare(nan.data(), want.data(), 2).nonfinite, 1);
}

TEST(location, bshd_and_lse_indices) {
  // seqlen 5, heads 3, head_dim 4: index = ((b*5 + s)*3 + h)*4 + d
  EXPECT_EQ(bshd_location(((1 * 5 + 2) * 3 + 1) * 4 + 3, 5, 3, 4), "b=1 s=2 h=1 d=3");
  EXPECT_EQ(lse_location((1 * 3 + 2) * 5 + 4, 5, 3), "b=1 h=2 s=4");
  EXPECT_EQ(bshd_location(-1, 5, 3, 4), "-");
}

namespace {
ErrorStats with_max(double m) {
  ErrorStats s;
  s.count = 1;
  s.max_abs = m;
  s.max_scaled = m;
  return s;
}
}  // namespace

TEST(pass_rule, absolute_bound_for_the_initial_kernel) {
  const DtypeTolerance tol{1e-3, 2e-2, 1e-3, 5e-3};
  EXPECT_TRUE(judge_absolute(with_max(0.019), with_max(0.004), tol).pass);
  const Judgement o_bad = judge_absolute(with_max(0.021), with_max(0.004), tol);
  EXPECT_FALSE(o_bad.pass);
  ASSERT_EQ(o_bad.reasons.size(), 1u);
  EXPECT_NE(o_bad.reasons[0].find("O: max abs error"), std::string::npos);
  EXPECT_FALSE(judge_absolute(with_max(0.001), with_max(0.006), tol).pass);
}

// The ceiling every kernel meets: the bounds alone, so NaN is judge_absolute's and the ratio rule's
// own reason, not a second "ceiling" line.
TEST(pass_rule, the_bounds_alone_are_the_ceiling) {
  const DtypeTolerance tol{1e-3, 2e-2, 1e-3, 5e-3};
  ErrorStats nan_o = with_max(0.001);
  nan_o.nonfinite = 3;
  EXPECT_TRUE(judge_bounds(nan_o, with_max(0.004), tol).pass);
  EXPECT_FALSE(judge_absolute(nan_o, with_max(0.004), tol).pass);
  const Judgement both = judge_bounds(with_max(0.021), with_max(0.006), tol);
  ASSERT_EQ(both.reasons.size(), 2u);
  EXPECT_NE(both.reasons[0].find("O: max abs error"), std::string::npos);
  EXPECT_NE(both.reasons[1].find("LSE: max error"), std::string::npos);
  // judge_absolute: the NaN rule first, then the same bounds, in the same words.
  const Judgement all = judge_absolute(nan_o, with_max(0.006), tol);
  ASSERT_EQ(all.reasons.size(), 2u);
  EXPECT_NE(all.reasons[0].find("NaN/Inf"), std::string::npos);
  EXPECT_EQ(all.reasons[1], judge_bounds(nan_o, with_max(0.006), tol).reasons[0]);
}

TEST(pass_rule, candidate_within_ratio_of_initial_plus_atol) {
  const DtypeTolerance tol{1e-3, 2e-2, 1e-3, 5e-3};
  const ErrorStats init_o = with_max(4e-3), init_lse = with_max(1e-4);
  // limit O: 2 * 4e-3 + 1e-3 = 9e-3; LSE: 2 * 1e-4 + 1e-3 = 1.2e-3
  EXPECT_TRUE(judge_against_initial(with_max(8.9e-3), with_max(1.1e-3), init_o, init_lse, 2.0, tol).pass);
  EXPECT_FALSE(judge_against_initial(with_max(9.1e-3), with_max(1e-4), init_o, init_lse, 2.0, tol).pass);
  EXPECT_FALSE(judge_against_initial(with_max(1e-3), with_max(1.3e-3), init_o, init_lse, 2.0, tol).pass);
  // A tighter ratio is honoured.
  EXPECT_FALSE(judge_against_initial(with_max(6e-3), with_max(1e-4), init_o, init_lse, 1.0, tol).pass);
}

TEST(problem, contiguous_bshd_strides) {
  Scenario s;
  s.id = "x";
  s.batch = 2; s.seqlen_q = 5; s.seqlen_k = 7; s.heads_q = 6; s.heads_kv = 2; s.head_dim = 64;
  s.causal = true;
  s.dtype = DType::fp16;
  const AttnParams p = make_params(s, nullptr, nullptr, nullptr, nullptr, nullptr);
  EXPECT_EQ(p.q_head_stride, 64);
  EXPECT_EQ(p.q_row_stride, 6 * 64);
  EXPECT_EQ(p.q_batch_stride, 5 * 6 * 64);
  EXPECT_EQ(p.k_row_stride, 2 * 64);
  EXPECT_EQ(p.v_batch_stride, 7 * 2 * 64);
  EXPECT_EQ(p.lse_head_stride, 5);
  EXPECT_EQ(p.lse_batch_stride, 6 * 5);
  EXPECT_FLOAT_EQ(p.softmax_scale, 0.125f);
  EXPECT_TRUE(p.causal);
  EXPECT_EQ(p.dtype, DType::fp16);
}

TEST(problem, seeds_differ_per_scenario_and_distribution_and_replay) {
  EXPECT_EQ(scenario_seed(7, "a", 0), scenario_seed(7, "a", 0));
  EXPECT_NE(scenario_seed(7, "a", 0), scenario_seed(7, "b", 0));
  EXPECT_NE(scenario_seed(7, "a", 0), scenario_seed(7, "a", 1));
  EXPECT_NE(scenario_seed(7, "a", 0), scenario_seed(8, "a", 0));
}

#include "attngate/verify/gpu_pinning.hpp"

TEST(gpu_pinning, follows_the_ctest_resource_allocation) {
  unsetenv("CTEST_RESOURCE_GROUP_COUNT");
  EXPECT_EQ(pin_to_ctest_gpu(), "");
  setenv("CTEST_RESOURCE_GROUP_COUNT", "1", 1);
  setenv("CTEST_RESOURCE_GROUP_0", "gpus", 1);
  setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:3,slots:1", 1);
  EXPECT_EQ(pin_to_ctest_gpu(), "3");
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "3");
  setenv("CTEST_RESOURCE_GROUP_0_GPUS", "slots:1", 1);
  EXPECT_THROW(pin_to_ctest_gpu(), std::runtime_error);
  unsetenv("CTEST_RESOURCE_GROUP_COUNT");
  unsetenv("CTEST_RESOURCE_GROUP_0");
  unsetenv("CTEST_RESOURCE_GROUP_0_GPUS");
  unsetenv("CUDA_VISIBLE_DEVICES");
}
