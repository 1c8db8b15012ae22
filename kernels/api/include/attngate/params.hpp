// The one flat struct a launch receives, passed by value. It is the only thing the kernels share
// with the references and the harness.
#pragma once

#include <cstdint>

namespace attngate {

enum class DType : int32_t { bf16 = 0, fp16 = 1 };

inline const char* dtype_name(DType t) { return t == DType::bf16 ? "bf16" : "fp16"; }

// Attention forward, BSHD layout: Q is [batch, seqlen_q, heads_q, head_dim], K and V are
// [batch, seqlen_k, heads_kv, head_dim], O is like Q. Strides are in elements; the last dimension
// is contiguous. LSE is fp32 [batch, heads_q, seqlen_q] with its own strides.
//
// Semantics every kernel must implement:
//   S[i][j] = softmax_scale * dot(Q[i], K[j]); query head h reads kv head h / (heads_q / heads_kv).
//   causal: key j is visible to query i iff j <= i + (seqlen_k - seqlen_q)  (bottom-right aligned,
//           as FlashAttention 2.1+ and 3). Rows with no visible key (i < seqlen_q - seqlen_k) are
//           fully masked: O = 0 and LSE = -inf.
//   LSE[i] = log(sum_j exp(S[i][j])) in natural log over visible keys; O[i] = sum_j P[i][j] V[j].
struct AttnParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;

  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t lse_batch_stride, lse_head_stride;

  int32_t batch;
  int32_t seqlen_q;
  int32_t seqlen_k;
  int32_t heads_q;
  int32_t heads_kv;
  int32_t head_dim;

  float softmax_scale;
  bool causal;
  DType dtype;
};

}  // namespace attngate
