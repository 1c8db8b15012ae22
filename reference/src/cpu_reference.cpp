#include "attngate/cpu_reference.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace attngate {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// One head of a BSHD tensor is a [seqlen, head_dim] matrix whose rows are heads*head_dim apart.
using ConstHeadView = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using HeadView = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

// Query rows per chunk: bounds the score matrix to kChunk x seqlen_k floats for long sequences.
constexpr int64_t kChunk = 256;

void validate(const AttnParams& s) {
  if (s.batch < 0 || s.seqlen_q < 0 || s.seqlen_k < 0)
    throw std::invalid_argument("cpu_reference: negative batch or sequence length");
  if (s.head_dim <= 0 || s.heads_q <= 0 || s.heads_kv <= 0 || s.heads_q % s.heads_kv != 0)
    throw std::invalid_argument("cpu_reference: need head_dim > 0 and heads_q (" +
                                std::to_string(s.heads_q) + ") a positive multiple of heads_kv (" +
                                std::to_string(s.heads_kv) + ")");
}

}  // namespace

void cpu_reference(const AttnParams& shape, const float* q, const float* k, const float* v,
                   float* o, float* lse) {
  validate(shape);
  const int64_t batch = shape.batch, sq = shape.seqlen_q, sk = shape.seqlen_k;
  const int64_t hq = shape.heads_q, hkv = shape.heads_kv, d = shape.head_dim;
  const int64_t group = hq / hkv;
  // causal: key j is visible to query i iff j <= i + (sk - sq).
  const int64_t diagonal = sk - sq;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  // Keys visible to query row i: a prefix [0, visible(i)) of the keys.
  const auto visible = [&](int64_t i) {
    return shape.causal ? std::clamp<int64_t>(i + diagonal + 1, 0, sk) : sk;
  };

  RowMatrix scores, probs;
  Eigen::VectorXf row_sum;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kvh = h / group;
      const int64_t kv_offset = (b * sk * hkv + kvh) * d;
      const ConstHeadView kmat(k + kv_offset, sk, d, Eigen::OuterStride<>(hkv * d));
      const ConstHeadView vmat(v + kv_offset, sk, d, Eigen::OuterStride<>(hkv * d));
      float* lse_head = lse + (b * hq + h) * sq;

      for (int64_t i0 = 0; i0 < sq; i0 += kChunk) {
        const int64_t rows = std::min(kChunk, sq - i0);
        const int64_t q_offset = ((b * sq + i0) * hq + h) * d;
        const ConstHeadView qmat(q + q_offset, rows, d, Eigen::OuterStride<>(hq * d));
        HeadView omat(o + q_offset, rows, d, Eigen::OuterStride<>(hq * d));
        // Visible prefixes grow with the row, so the last row's bounds the chunk's keys.
        const int64_t cols = visible(i0 + rows - 1);
        if (cols == 0) {
          omat.setZero();
          std::fill(lse_head + i0, lse_head + i0 + rows, neg_inf);
          continue;
        }
        scores.noalias() = qmat * kmat.topRows(cols).transpose();
        scores *= shape.softmax_scale;
        probs.resize(rows, cols);
        row_sum.resize(rows);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t n = visible(i0 + r);
          probs.row(r).tail(cols - n).setZero();
          if (n == 0) {
            row_sum[r] = 0.0f;
            lse_head[i0 + r] = neg_inf;
            continue;
          }
          // Subtracting the row max keeps exp in range for any score magnitude.
          const float row_max = scores.row(r).head(n).maxCoeff();
          probs.row(r).head(n) = (scores.row(r).head(n).array() - row_max).exp().matrix();
          row_sum[r] = probs.row(r).head(n).sum();
          lse_head[i0 + r] = row_max + std::log(row_sum[r]);
        }
        omat.noalias() = probs * vmat.topRows(cols);
        for (int64_t r = 0; r < rows; ++r) {
          if (row_sum[r] > 0.0f)
            omat.row(r) /= row_sum[r];
          else
            omat.row(r).setZero();
        }
      }
    }
  }
}

}  // namespace attngate
