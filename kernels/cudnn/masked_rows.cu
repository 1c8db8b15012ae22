// The rows cuDNN is not asked for (cudnn_plan.hpp): with causal and seqlen_q > seqlen_k, query rows
// 0 .. seqlen_q - seqlen_k - 1 see no key, and attngate defines their output as O = 0 and
// LSE = -inf. One element per thread; it runs only on such problems (no gate or prod scenario).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "attngate/params.hpp"

namespace attngate::cudnn_sdpa {

namespace {

__global__ void fill_masked_rows_kernel(AttnParams p, int rows) {
  const int64_t per_head = int64_t(rows) * p.head_dim;
  const int64_t total = int64_t(p.batch) * p.heads_q * per_head;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int d = int(i % p.head_dim);
    const int row = int((i / p.head_dim) % rows);
    const int64_t bh = i / per_head;
    const int h = int(bh % p.heads_q);
    const int b = int(bh / p.heads_q);
    // Zero bits are +0.0 in bf16 and fp16 alike.
    static_cast<uint16_t*>(p.o)[b * p.o_batch_stride + int64_t(row) * p.o_row_stride + h * p.o_head_stride + d] = 0;
    if (d == 0 && p.lse != nullptr) p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + row] = -INFINITY;
  }
}

}  // namespace

cudaError_t fill_masked_rows(const AttnParams& p, int rows, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  const int64_t total = int64_t(p.batch) * p.heads_q * rows * p.head_dim;
  const int threads = 256;
  const int blocks = int((total + threads - 1) / threads < 4096 ? (total + threads - 1) / threads : 4096);
  fill_masked_rows_kernel<<<blocks, threads, 0, stream>>>(p, rows);
  return cudaGetLastError();
}

}  // namespace attngate::cudnn_sdpa
