// The host reference: fp32 Eigen, independent of every CUDA code path, so that the GPU reference
// itself can be verified against it on small shapes.
#pragma once

#include "attngate/params.hpp"

namespace attngate {

// Attention forward with params.hpp's exact semantics (bottom-right causal alignment, GQA head
// mapping, fully masked rows give O = 0 and LSE = -inf, natural-log LSE).
//   q: [batch, seqlen_q, heads_q, head_dim], k and v: [batch, seqlen_k, heads_kv, head_dim],
//   o: like q, lse: [batch, heads_q, seqlen_q]; all contiguous fp32 host arrays.
// Only the sizes, softmax_scale and causal of `shape` are read (not its pointers, strides or
// dtype). Throws std::invalid_argument on an inconsistent shape.
void cpu_reference(const AttnParams& shape, const float* q, const float* k, const float* v,
                   float* o, float* lse);

}  // namespace attngate
