// The input generator's definition (pinned by golden values), its determinism, range, statistics
// and rounding, all on the host.
#include <gtest/gtest.h>

#include <Eigen/Core>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "attngate/inputs.hpp"
#include "test_shapes.hpp"

namespace attngate {
namespace {

using test::make_shape;

// Computed independently (Python, from README.md's definition). A change here changes every
// recorded failure's inputs: update README.md with it.
TEST(Generator, GoldenValues) {
  EXPECT_EQ(input_value_fp32(0, kTensorQ, 0, Distribution::standard), 0x1.3836e8p-2f);
  EXPECT_EQ(input_value_fp32(0, kTensorK, 0, Distribution::standard), -0x1.ca461p-2f);
  EXPECT_EQ(input_value_fp32(0, kTensorV, 0, Distribution::standard), 0x1.b89d44p-1f);
  EXPECT_EQ(input_value_fp32(12345, kTensorQ, 7, Distribution::large_scores), 0x1.646ec2p+2f);
  EXPECT_EQ(input_value_fp32(12345, kTensorK, 1000003, Distribution::large_scores),
            -0x1.2e21aap+3f);
  EXPECT_EQ(input_value_fp32(12345, kTensorV, 1000003, Distribution::large_scores),
            -0x1.b84c4p-4f);
  EXPECT_EQ(input_value_fp32(UINT64_MAX, kTensorQ, uint64_t{1} << 40, Distribution::standard),
            0x1.687b4p-4f);

  EXPECT_EQ(input_value(0, kTensorQ, 0, Distribution::standard, DType::bf16), 0x1.38p-2f);
  EXPECT_EQ(input_value(0, kTensorQ, 0, Distribution::standard, DType::fp16), 0x1.384p-2f);
  EXPECT_EQ(input_value(12345, kTensorK, 1000003, Distribution::large_scores, DType::bf16),
            -0x1.2ep+3f);
  EXPECT_EQ(input_value(12345, kTensorK, 1000003, Distribution::large_scores, DType::fp16),
            -0x1.2e4p+3f);
}

TEST(Generator, Deterministic) {
  const AttnParams p = make_shape(2, 33, 17, 4, 2, 64, false);
  for (int t = kTensorQ; t <= kTensorV; ++t)
    EXPECT_EQ(host_input(p, t, 42, Distribution::standard),
              host_input(p, t, 42, Distribution::standard));
}

TEST(Generator, ValueIsAFunctionOfTheLogicalIndexOnly) {
  AttnParams p = make_shape(2, 9, 11, 4, 2, 64, true, DType::fp16);
  const std::vector<float> k = host_input(p, kTensorK, 7, Distribution::large_scores);
  ASSERT_EQ(k.size(), size_t{2} * 11 * 2 * 64);
  for (size_t i = 0; i < k.size(); ++i)
    ASSERT_EQ(k[i], input_value(7, kTensorK, i, Distribution::large_scores, DType::fp16)) << i;

  // Strides, pointers, scale and causality are not part of the definition.
  p.k_row_stride = 12345;
  p.k_batch_stride = 3;
  p.softmax_scale = 2.0f;
  p.causal = false;
  EXPECT_EQ(host_input(p, kTensorK, 7, Distribution::large_scores), k);

  // A larger batch extends the tensor without changing its prefix.
  AttnParams wider = p;
  wider.batch = 3;
  const std::vector<float> k3 = host_input(wider, kTensorK, 7, Distribution::large_scores);
  EXPECT_TRUE(std::equal(k.begin(), k.end(), k3.begin()));
}

TEST(Generator, SeedsAndTensorsGiveDifferentValues) {
  const AttnParams p = make_shape(1, 64, 64, 4, 4, 128, false);
  const auto fraction_equal = [](const std::vector<float>& a, const std::vector<float>& b) {
    size_t same = 0;
    for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
    return static_cast<double>(same) / static_cast<double>(a.size());
  };
  const auto q1 = host_input(p, kTensorQ, 1, Distribution::standard);
  const auto q2 = host_input(p, kTensorQ, 2, Distribution::standard);
  const auto k1 = host_input(p, kTensorK, 1, Distribution::standard);
  const auto v1 = host_input(p, kTensorV, 1, Distribution::standard);
  // Independent bf16 values in [-1, 1) coincide with probability ~0.3%.
  EXPECT_LT(fraction_equal(q1, q2), 0.02);
  EXPECT_LT(fraction_equal(q1, k1), 0.02);
  EXPECT_LT(fraction_equal(k1, v1), 0.02);
}

TEST(Generator, StandardRangeAndMoments) {
  const AttnParams p = make_shape(2, 128, 128, 4, 4, 128, false, DType::fp16);
  for (int t = kTensorQ; t <= kTensorV; ++t) {
    const auto x = host_input(p, t, 99, Distribution::standard);
    double sum = 0.0, sum_sq = 0.0;
    float lo = 2.0f, hi = -2.0f;
    for (float v : x) {
      sum += v;
      sum_sq += double{v} * v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const double n = static_cast<double>(x.size());
    // RNE can round values just below 1 up to 1.0, so the closed interval is the honest bound.
    EXPECT_GE(lo, -1.0f);
    EXPECT_LE(hi, 1.0f);
    EXPECT_LT(lo, -0.999f);
    EXPECT_GT(hi, 0.999f);
    EXPECT_NEAR(sum / n, 0.0, 0.01);          // U[-1,1): mean 0, sd of the mean ~0.002
    EXPECT_NEAR(sum_sq / n, 1.0 / 3.0, 0.01);  // second moment 1/3
  }
}

TEST(Generator, LargeScoresScalesQAndKOnly) {
  const AttnParams p = make_shape(1, 256, 256, 2, 2, 128, false);
  for (int t = kTensorQ; t <= kTensorV; ++t) {
    const auto x = host_input(p, t, 5, Distribution::large_scores);
    const float amplitude = t == kTensorV ? 1.0f : 10.0f;
    float max_abs = 0.0f;
    for (float v : x) max_abs = std::max(max_abs, std::abs(v));
    EXPECT_LE(max_abs, amplitude);
    EXPECT_GT(max_abs, 0.99f * amplitude);
    for (uint64_t i = 0; i < 1000; ++i)
      ASSERT_EQ(input_value_fp32(5, t, i, Distribution::large_scores),
                amplitude * input_value_fp32(5, t, i, Distribution::standard));
  }
}

// Reference roundings written from the formats' definitions, independent of Eigen.
float round_bf16_rne(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  return std::bit_cast<float>(bits);
}

float round_fp16_rne(float x) {
  // |x| <= 10 here: no overflow. Below 2^-14 fp16 is subnormal with a fixed spacing of 2^-24.
  int exponent = 0;
  std::frexp(x, &exponent);  // x = m * 2^exponent, 0.5 <= |m| < 1
  const double ulp = std::ldexp(1.0, std::max(exponent - 11, -24));
  return static_cast<float>(std::nearbyint(static_cast<double>(x) / ulp) * ulp);
}

TEST(Generator, RoundsToNearestEvenInTheKernelDtype) {
  for (Distribution d : {Distribution::standard, Distribution::large_scores}) {
    size_t bf16_differs_from_fp16 = 0;
    for (uint64_t i = 0; i < 200000; ++i) {
      const float x = input_value_fp32(3, kTensorQ, i, d);
      const float b = input_value(3, kTensorQ, i, d, DType::bf16);
      const float h = input_value(3, kTensorQ, i, d, DType::fp16);
      ASSERT_EQ(b, round_bf16_rne(x)) << i;
      ASSERT_EQ(h, round_fp16_rne(x)) << i;
      ASSERT_EQ(b, static_cast<float>(Eigen::bfloat16(b))) << "not representable in bf16";
      ASSERT_EQ(h, static_cast<float>(Eigen::half(h))) << "not representable in fp16";
      bf16_differs_from_fp16 += b != h;
    }
    // They agree only when the fp16 rounding ends in three zero bits (~1 in 8).
    EXPECT_GT(bf16_differs_from_fp16, 160000u);
  }
}

TEST(Generator, NumelAndBadArguments) {
  const AttnParams p = make_shape(3, 5, 7, 8, 2, 64, false);
  EXPECT_EQ(input_numel(p, kTensorQ), 3 * 5 * 8 * 64);
  EXPECT_EQ(input_numel(p, kTensorK), 3 * 7 * 2 * 64);
  EXPECT_EQ(input_numel(p, kTensorV), 3 * 7 * 2 * 64);
  EXPECT_THROW(input_numel(p, 3), std::invalid_argument);
  EXPECT_THROW(host_input(p, -1, 0, Distribution::standard), std::invalid_argument);
  AttnParams negative = p;
  negative.seqlen_k = -1;
  EXPECT_THROW(host_input(negative, kTensorK, 0, Distribution::standard), std::invalid_argument);
  AttnParams bad_dtype = p;
  bad_dtype.dtype = static_cast<DType>(7);
  EXPECT_THROW(host_input(bad_dtype, kTensorQ, 0, Distribution::standard), std::invalid_argument);
}

TEST(Generator, DistributionNames) {
  for (Distribution d : {Distribution::standard, Distribution::large_scores})
    EXPECT_EQ(parse_distribution(distribution_name(d)), d);
  EXPECT_EQ(distribution_name(Distribution::standard), "standard");
  EXPECT_EQ(distribution_name(Distribution::large_scores), "large_scores");
  EXPECT_THROW(parse_distribution("uniform"), std::invalid_argument);
}

}  // namespace
}  // namespace attngate
