// The Eigen reference against a plain double-precision loop, and against closed-form outputs that
// pin the semantics (bottom-right causal alignment, GQA mapping, fully masked rows).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attngate/cpu_reference.hpp"
#include "attngate/inputs.hpp"
#include "test_shapes.hpp"

namespace attngate {

// Readable parameter values in test output.
void PrintTo(Distribution d, std::ostream* os) { *os << distribution_name(d); }

namespace {

using test::make_shape;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Outputs {
  std::vector<float> o, lse;
};

// Params.hpp's semantics written as directly as possible, in double.
Outputs double_loop(const AttnParams& s, const std::vector<float>& q, const std::vector<float>& k,
                    const std::vector<float>& v) {
  const int64_t B = s.batch, Sq = s.seqlen_q, Sk = s.seqlen_k, Hq = s.heads_q, Hkv = s.heads_kv,
                D = s.head_dim;
  Outputs out{std::vector<float>(B * Sq * Hq * D), std::vector<float>(B * Hq * Sq)};
  std::vector<double> p(Sk);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kvh = h / (Hq / Hkv);
      for (int64_t i = 0; i < Sq; ++i) {
        const float* qi = &q[((b * Sq + i) * Hq + h) * D];
        double max_score = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < Sk; ++j) {
          const bool visible = !s.causal || j <= i + (Sk - Sq);
          if (!visible) {
            p[j] = -std::numeric_limits<double>::infinity();
            continue;
          }
          const float* kj = &k[((b * Sk + j) * Hkv + kvh) * D];
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += double{qi[d]} * kj[d];
          p[j] = double{s.softmax_scale} * dot;
          max_score = std::max(max_score, p[j]);
        }
        float* oi = &out.o[((b * Sq + i) * Hq + h) * D];
        float& lse = out.lse[(b * Hq + h) * Sq + i];
        if (max_score == -std::numeric_limits<double>::infinity()) {
          std::fill(oi, oi + D, 0.0f);
          lse = kNegInf;
          continue;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < Sk; ++j) {
          p[j] = std::exp(p[j] - max_score);
          sum += p[j];
        }
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j < Sk; ++j) acc += p[j] * v[((b * Sk + j) * Hkv + kvh) * D + d];
          oi[d] = static_cast<float>(acc / sum);
        }
        lse = static_cast<float>(max_score + std::log(sum));
      }
    }
  return out;
}

Outputs run_cpu_reference(const AttnParams& s, const std::vector<float>& q,
                          const std::vector<float>& k, const std::vector<float>& v) {
  Outputs out{std::vector<float>(size_t(s.batch) * s.seqlen_q * s.heads_q * s.head_dim, -7.0f),
              std::vector<float>(size_t(s.batch) * s.heads_q * s.seqlen_q, -7.0f)};
  cpu_reference(s, q.data(), k.data(), v.data(), out.o.data(), out.lse.data());
  return out;
}

struct Case {
  std::string name;
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
  bool causal;
  DType dtype;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

class CpuReferenceVsDoubleLoop
    : public ::testing::TestWithParam<std::tuple<Case, Distribution>> {};

TEST_P(CpuReferenceVsDoubleLoop, Matches) {
  const auto& [c, dist] = GetParam();
  const AttnParams s = make_shape(c.batch, c.seqlen_q, c.seqlen_k, c.heads_q, c.heads_kv,
                                  c.head_dim, c.causal, c.dtype);
  const uint64_t seed = 1000 + c.head_dim + c.seqlen_q;
  const auto q = host_input(s, kTensorQ, seed, dist);
  const auto k = host_input(s, kTensorK, seed, dist);
  const auto v = host_input(s, kTensorV, seed, dist);
  const Outputs want = double_loop(s, q, k, v);
  const Outputs got = run_cpu_reference(s, q, k, v);

  // fp32 scores carry ~|score| * 2^-24 * sqrt(d) of rounding; large_scores' ~100x larger scores
  // scale the probability error, and hence O's, by as much.
  const bool large = dist == Distribution::large_scores;
  const double o_tol = large ? 2e-4 : 1e-5;
  const double lse_rel_tol = 2e-6;
  const double lse_abs_tol = large ? 1e-4 : 1e-5;
  int64_t masked_rows = 0;
  double max_o_err = 0.0, max_lse_err = 0.0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads_q; ++h)
      for (int64_t i = 0; i < c.seqlen_q; ++i) {
        const size_t li = (b * c.heads_q + h) * c.seqlen_q + i;
        const size_t oi = ((b * c.seqlen_q + i) * c.heads_q + h) * c.head_dim;
        const bool fully_masked = c.seqlen_k == 0 || (c.causal && i < c.seqlen_q - c.seqlen_k);
        if (fully_masked) {
          ++masked_rows;
          ASSERT_EQ(got.lse[li], kNegInf) << "row " << i;
          for (int d = 0; d < c.head_dim; ++d) ASSERT_EQ(got.o[oi + d], 0.0f) << "row " << i;
          continue;
        }
        ASSERT_TRUE(std::isfinite(got.lse[li])) << "row " << i;
        const double lse_err = std::abs(double{got.lse[li]} - want.lse[li]);
        max_lse_err = std::max(max_lse_err, lse_err);
        ASSERT_LE(lse_err, lse_abs_tol + lse_rel_tol * std::abs(want.lse[li])) << "row " << i;
        for (int d = 0; d < c.head_dim; ++d) {
          const double err = std::abs(double{got.o[oi + d]} - want.o[oi + d]);
          max_o_err = std::max(max_o_err, err);
          ASSERT_LE(err, o_tol) << "row " << i << " col " << d;
        }
      }
  const int64_t expected_masked =
      c.seqlen_k == 0 ? int64_t{c.seqlen_q}
                      : (c.causal ? std::max(0, c.seqlen_q - c.seqlen_k) : 0);
  EXPECT_EQ(masked_rows, expected_masked * c.batch * c.heads_q);
  char errors[96];
  std::snprintf(errors, sizeof(errors), "max |O err| %.3e, max |LSE err| %.3e", max_o_err,
                max_lse_err);
  RecordProperty("errors", errors);
}

const Case kCases[] = {
    {"mha_d64", 2, 37, 37, 4, 4, 64, false, DType::bf16},
    {"mha_d64_causal", 2, 37, 37, 4, 4, 64, true, DType::fp16},
    {"gqa_d128", 1, 45, 70, 8, 2, 128, false, DType::bf16},
    {"gqa_d128_causal_sq_lt_sk", 1, 45, 70, 8, 2, 128, true, DType::bf16},
    {"mqa_d256", 2, 20, 33, 4, 1, 256, false, DType::fp16},
    {"mqa_d256_causal_sq_gt_sk", 1, 50, 20, 4, 1, 256, true, DType::bf16},
    {"sq_gt_sk_noncausal_d128", 1, 50, 20, 2, 2, 128, false, DType::fp16},
    {"seqlen1_causal", 1, 1, 1, 2, 2, 64, true, DType::bf16},
    {"sq1_causal_sees_all_keys", 1, 1, 300, 2, 1, 128, true, DType::bf16},
    {"sk1_causal_masks_all_but_last", 2, 9, 1, 2, 2, 64, true, DType::fp16},
    {"gqa_d64_causal_crosses_chunks", 1, 600, 600, 2, 1, 64, true, DType::bf16},
    {"sk0_all_rows_masked", 1, 5, 0, 2, 2, 64, false, DType::bf16},
};

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuReferenceVsDoubleLoop,
    ::testing::Combine(::testing::ValuesIn(kCases),
                       ::testing::Values(Distribution::standard, Distribution::large_scores)),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + distribution_name(std::get<1>(info.param));
    });

// Q = 0 makes every visible score 0, so row i averages the V rows it sees: with V[j] = j the
// output is (n_i - 1) / 2 and LSE = log(n_i), where n_i = i + sk - sq + 1 keys are visible.
TEST(CpuReference, CausalIsBottomRightAligned) {
  for (const auto& [sq, sk] : {std::pair{6, 6}, std::pair{3, 8}, std::pair{8, 3}}) {
    const AttnParams s = make_shape(1, sq, sk, 1, 1, 64, true);
    std::vector<float> q(size_t(sq) * 64, 0.0f), k(size_t(sk) * 64, 0.5f), v(size_t(sk) * 64);
    for (int j = 0; j < sk; ++j) std::fill_n(&v[size_t(j) * 64], 64, static_cast<float>(j));
    const Outputs got = run_cpu_reference(s, q, k, v);
    for (int i = 0; i < sq; ++i) {
      const int n = std::clamp(i + sk - sq + 1, 0, sk);
      SCOPED_TRACE("sq=" + std::to_string(sq) + " sk=" + std::to_string(sk) +
                   " row=" + std::to_string(i));
      if (n == 0) {
        EXPECT_EQ(got.lse[i], kNegInf);
        EXPECT_EQ(got.o[size_t(i) * 64], 0.0f);
      } else {
        EXPECT_FLOAT_EQ(got.lse[i], std::log(static_cast<float>(n)));
        EXPECT_FLOAT_EQ(got.o[size_t(i) * 64 + 17], (n - 1) / 2.0f);
      }
    }
  }
}

// Each KV head's V is its own constant, so O names the KV head every query head read.
TEST(CpuReference, GqaMapsQueryHeadToKvHeadByIntegerDivision) {
  const int hq = 8, hkv = 2, sk = 5, d = 64;
  const AttnParams s = make_shape(2, 3, sk, hq, hkv, d, false);
  const auto q = host_input(s, kTensorQ, 1, Distribution::standard);
  const auto k = host_input(s, kTensorK, 1, Distribution::standard);
  std::vector<float> v(k.size());
  for (size_t idx = 0; idx < v.size(); ++idx)
    v[idx] = static_cast<float>((idx / d) % hkv + 1);  // BSHD: the head is (idx / d) % hkv
  const Outputs got = run_cpu_reference(s, q, k, v);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int h = 0; h < hq; ++h)
        EXPECT_NEAR(got.o[((size_t(b) * 3 + i) * hq + h) * d], h / (hq / hkv) + 1, 1e-6)
            << "query head " << h;
}

TEST(CpuReference, SoftmaxScaleIsApplied) {
  AttnParams s = make_shape(1, 4, 9, 1, 1, 64, false);
  const auto q = host_input(s, kTensorQ, 3, Distribution::standard);
  const auto k = host_input(s, kTensorK, 3, Distribution::standard);
  const auto v = host_input(s, kTensorV, 3, Distribution::standard);
  s.softmax_scale = 0.0f;  // uniform weights: O is the column mean of V and LSE = log(9)
  const Outputs got = run_cpu_reference(s, q, k, v);
  for (int d = 0; d < 64; ++d) {
    double mean = 0.0;
    for (int j = 0; j < 9; ++j) mean += v[size_t(j) * 64 + d] / 9.0;
    EXPECT_NEAR(got.o[size_t(2) * 64 + d], mean, 1e-6);
  }
  EXPECT_NEAR(got.lse[0], std::log(9.0), 1e-6);
}

TEST(CpuReference, EmptyQueryIsANoOp) {
  const AttnParams s = make_shape(2, 0, 4, 2, 2, 64, true);
  const auto k = host_input(s, kTensorK, 1, Distribution::standard);
  cpu_reference(s, nullptr, k.data(), k.data(), nullptr, nullptr);
}

TEST(CpuReference, RejectsInconsistentShapes) {
  std::vector<float> buf(4096);
  const auto call = [&](const AttnParams& s) {
    cpu_reference(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data());
  };
  EXPECT_THROW(call(make_shape(1, 2, 2, 3, 2, 64, false)), std::invalid_argument);
  EXPECT_THROW(call(make_shape(1, 2, 2, 2, 0, 64, false)), std::invalid_argument);
  EXPECT_THROW(call(make_shape(1, 2, 2, 2, 2, 0, false)), std::invalid_argument);
  EXPECT_THROW(call(make_shape(1, -1, 2, 2, 2, 64, false)), std::invalid_argument);
}

}  // namespace
}  // namespace attngate
