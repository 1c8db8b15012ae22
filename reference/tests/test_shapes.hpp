// Shape helper shared by the reference unit tests.
#pragma once

#include <cmath>

#include "attngate/params.hpp"

namespace attngate::test {

// A shape-only AttnParams (null pointers): what host_input and cpu_reference read.
inline AttnParams make_shape(int batch, int seqlen_q, int seqlen_k, int heads_q, int heads_kv,
                             int head_dim, bool causal, DType dtype = DType::bf16) {
  AttnParams p{};
  p.batch = batch;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_k;
  p.heads_q = heads_q;
  p.heads_kv = heads_kv;
  p.head_dim = head_dim;
  p.causal = causal;
  p.dtype = dtype;
  p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return p;
}

}  // namespace attngate::test
