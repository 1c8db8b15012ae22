// The initial kernel: a FlashAttention-2-style forward on tensor cores (mma.sync m16n8k16), the
// baseline every candidate is timed against. Its body, and how it works, is in
// include/attngate/initial/fa2_kernel.cuh; this file checks a call's parameters, picks the
// instantiation and registers the kernel as `initial`.

#include <cuda_runtime.h>

#include <cstdint>

#include "attngate/initial/fa2_kernel.cuh"
#include "attngate/params.hpp"
#include "attngate/registry.hpp"

namespace initial_fa2 {

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0; }

cudaError_t launch(const AttnParams& p, cudaStream_t stream) {
  if (p.batch < 0 || p.seqlen_q < 0 || p.seqlen_k < 0 || p.heads_q <= 0 || p.heads_kv <= 0 ||
      p.heads_q % p.heads_kv != 0)
    return cudaErrorInvalidValue;
  if (p.batch == 0 || p.seqlen_q == 0) return cudaSuccess;
  const int64_t strides[] = {p.q_batch_stride, p.q_row_stride, p.q_head_stride,
                             p.k_batch_stride, p.k_row_stride, p.k_head_stride,
                             p.v_batch_stride, p.v_row_stride, p.v_head_stride,
                             p.o_batch_stride, p.o_row_stride, p.o_head_stride};
  for (const int64_t s : strides)
    if (s % 8 != 0) return cudaErrorInvalidValue;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.o))
    return cudaErrorInvalidValue;
  switch (p.head_dim) {
    case 64: return dispatch<64>(p, stream);
    case 128: return dispatch<128>(p, stream);
    case 256: return dispatch<256>(p, stream);
    default: return cudaErrorInvalidValue;
  }
}

ATTNGATE_REGISTER_KERNEL("initial",
                         "FA2-style mma.sync forward: 16 query rows per warp, cp.async "
                         "double-buffered K/V, swizzled smem, register-resident online softmax",
                         {DType::bf16, DType::fp16}, {64, 128, 256}, 80, launch);

}  // namespace initial_fa2
