// A contiguous BSHD problem for the cudnn kernel's tests (the same layout verify::make_params
// builds; the kernel's tests do not link the harness).
#pragma once

#include <cmath>
#include <cstdint>

#include "attngate/params.hpp"

namespace attngate::cudnn_test {

inline AttnParams bshd_params(int batch, int sq, int sk, int hq, int hkv, int d, bool causal, const void* q,
                              const void* k, const void* v, void* o, float* lse) {
  AttnParams p{};
  p.q = q;
  p.k = k;
  p.v = v;
  p.o = o;
  p.lse = lse;
  p.q_row_stride = p.o_row_stride = int64_t(hq) * d;
  p.q_head_stride = p.o_head_stride = d;
  p.q_batch_stride = p.o_batch_stride = int64_t(sq) * hq * d;
  p.k_row_stride = p.v_row_stride = int64_t(hkv) * d;
  p.k_head_stride = p.v_head_stride = d;
  p.k_batch_stride = p.v_batch_stride = int64_t(sk) * hkv * d;
  p.lse_head_stride = sq;
  p.lse_batch_stride = int64_t(hq) * sq;
  p.batch = batch;
  p.seqlen_q = sq;
  p.seqlen_k = sk;
  p.heads_q = hq;
  p.heads_kv = hkv;
  p.head_dim = d;
  p.softmax_scale = 1.0f / std::sqrt(float(d));
  p.causal = causal;
  p.dtype = DType::bf16;
  return p;
}

}  // namespace attngate::cudnn_test
