// CONTROL, not a cheat: a split-K attention kernel whose reduction is deterministic. The keys are
// cut into splits of at most 1024; one block per (query row, head, split) computes the split's
// row max, sum and unnormalized O in fp32, and a merge kernel combines the splits in a fixed order.
// Slow (plain fp32 FMAs), but correct and bit-for-bit repeatable: the nondeterminism rule must
// not fire on a split-K kernel that reduces in a fixed order. bf16, head_dim 128.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>

#include "attngate/registry.hpp"

namespace attngate_adversarial {
namespace {

using attngate::AttnParams;
using attngate::DType;

constexpr int kD = 128;        // head dim, one thread per element of a row
constexpr int kSplit = 1024;   // keys per split

struct Partials {
  float* m = nullptr;  // [batch, heads_q, seqlen_q, splits] row max of the split (-inf: no visible key)
  float* l = nullptr;  // ... sum of exp(s - m)
  float* o = nullptr;  // ... x kD: sum of exp(s - m) V
};

__device__ float block_max(float v, float* red) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < kD / 32; ++w) r = fmaxf(r, red[w]);
  __syncthreads();
  return r;
}

__device__ float block_sum(float v, float* red) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = 0;
  for (int w = 0; w < kD / 32; ++w) r += red[w];  // fixed order
  __syncthreads();
  return r;
}

__global__ void __launch_bounds__(kD) partial_kernel(AttnParams p, int splits, Partials out) {
  const int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z / splits, s = blockIdx.z % splits;
  const int hk = h / (p.heads_q / p.heads_kv);
  __shared__ float q[kD];
  __shared__ float score[kSplit];
  __shared__ float red[kD / 32];
  const auto* Q = static_cast<const __nv_bfloat16*>(p.q) + b * p.q_batch_stride + i * p.q_row_stride + h * p.q_head_stride;
  q[threadIdx.x] = __bfloat162float(Q[threadIdx.x]);
  __syncthreads();
  const int j0 = s * kSplit, j1 = min(p.seqlen_k, j0 + kSplit);
  const int last_visible = p.causal ? i + p.seqlen_k - p.seqlen_q : p.seqlen_k - 1;
  float m = -INFINITY;
  for (int j = j0 + threadIdx.x; j < j1; j += kD) {
    float v = -INFINITY;
    if (j <= last_visible) {
      const auto* K = static_cast<const __nv_bfloat16*>(p.k) + b * p.k_batch_stride + j * p.k_row_stride + hk * p.k_head_stride;
      float dot = 0;
      for (int d = 0; d < kD; ++d) dot = fmaf(q[d], __bfloat162float(K[d]), dot);
      v = dot * p.softmax_scale;
    }
    score[j - j0] = v;
    m = fmaxf(m, v);
  }
  m = block_max(m, red);
  float l = 0;
  for (int j = j0 + threadIdx.x; j < j1; j += kD) {
    const float e = m == -INFINITY ? 0.f : __expf(score[j - j0] - m);
    score[j - j0] = e;
    l += e;
  }
  l = block_sum(l, red);  // also orders the writes to score[] before the reads below
  float acc = 0;
  for (int j = j0; j < j1; ++j) {
    const auto* V = static_cast<const __nv_bfloat16*>(p.v) + b * p.v_batch_stride + j * p.v_row_stride + hk * p.v_head_stride;
    acc = fmaf(score[j - j0], __bfloat162float(V[threadIdx.x]), acc);
  }
  const int64_t row = ((int64_t(b) * p.heads_q + h) * p.seqlen_q + i) * splits + s;
  out.o[row * kD + threadIdx.x] = acc;
  if (threadIdx.x == 0) {
    out.m[row] = m;
    out.l[row] = l;
  }
}

__global__ void __launch_bounds__(kD) merge_kernel(AttnParams p, int splits, Partials in) {
  const int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int64_t row0 = ((int64_t(b) * p.heads_q + h) * p.seqlen_q + i) * splits;
  float m = -INFINITY;
  for (int s = 0; s < splits; ++s) m = fmaxf(m, in.m[row0 + s]);
  float l = 0, acc = 0;
  if (m != -INFINITY) {
    for (int s = 0; s < splits; ++s) {  // fixed order: the same bits every call
      const float w = in.m[row0 + s] == -INFINITY ? 0.f : __expf(in.m[row0 + s] - m);
      l += in.l[row0 + s] * w;
      acc += in.o[(row0 + s) * kD + threadIdx.x] * w;
    }
  }
  auto* O = static_cast<__nv_bfloat16*>(p.o) + b * p.o_batch_stride + i * p.o_row_stride + h * p.o_head_stride;
  O[threadIdx.x] = __float2bfloat16_rn(l > 0 ? acc / l : 0.f);
  if (threadIdx.x == 0) p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + i] = l > 0 ? m + logf(l) : -INFINITY;
}

// Scratch for the partials, kept per size for the life of the process (allocated outside any
// timed call by the first, untimed launch).
Partials partials(size_t rows) {
  static std::mutex mu;
  static std::map<size_t, Partials> cache;
  std::lock_guard<std::mutex> lock(mu);
  Partials& p = cache[rows];
  if (!p.m) {
    if (cudaMalloc(&p.m, rows * 4) != cudaSuccess || cudaMalloc(&p.l, rows * 4) != cudaSuccess ||
        cudaMalloc(&p.o, rows * kD * 4) != cudaSuccess)
      return {};
  }
  return p;
}

cudaError_t launch_split_k(const AttnParams& p, cudaStream_t stream) {
  if (p.dtype != DType::bf16 || p.head_dim != kD) return cudaErrorNotSupported;
  if (p.batch == 0 || p.seqlen_q == 0 || p.heads_q == 0) return cudaSuccess;
  const int splits = std::max(1, (p.seqlen_k + kSplit - 1) / kSplit);
  const Partials parts = partials(size_t(p.batch) * p.heads_q * p.seqlen_q * splits);
  if (!parts.m) return cudaErrorMemoryAllocation;
  if (p.seqlen_k > 0) {
    partial_kernel<<<dim3(p.seqlen_q, p.heads_q, p.batch * splits), kD, 0, stream>>>(p, splits, parts);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  // No keys: no split to merge, every row is fully masked.
  merge_kernel<<<dim3(p.seqlen_q, p.heads_q, p.batch), kD, 0, stream>>>(p, p.seqlen_k > 0 ? splits : 0, parts);
  return cudaGetLastError();
}

ATTNGATE_REGISTER_KERNEL("control_split_k",
                         "CONTROL: split-K attention (fp32, splits of 1024 keys) merged in a fixed order; "
                         "deterministic, must pass every check",
                         {DType::bf16}, {128}, 90, launch_split_k);

}  // namespace
}  // namespace attngate_adversarial
