// Device half of the input generator: fills Q, K, V through arbitrary strides and re-checks them
// after a kernel ran.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "attngate/cuda_check.hpp"
#include "attngate/inputs.hpp"

namespace attngate {
namespace {

struct TensorDesc {
  uint16_t* data;  // bf16 and fp16 are both handled as raw 16-bit patterns
  int64_t batch_stride, row_stride, head_stride;
  int64_t rows, heads;
};

struct InputsDesc {
  TensorDesc t[3];
  int64_t batch, head_dim;
};

__device__ uint16_t rounded_bits(float x, DType dtype) {
  return dtype == DType::bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(x))
                              : __half_as_ushort(__float2half_rn(x));
}

// blockIdx.y selects the tensor; a grid-stride loop walks its logical BSHD index space, so the
// hash input is the logical index whatever the memory layout.
template <bool kCheck>
__global__ void inputs_kernel(InputsDesc desc, uint64_t seed, Distribution dist, DType dtype,
                              unsigned long long* mismatches) {
  const int tensor = static_cast<int>(blockIdx.y);
  const TensorDesc& t = desc.t[tensor];
  const int64_t n = desc.batch * t.rows * t.heads * desc.head_dim;
  unsigned long long local = 0;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t r = i;
    const int64_t d = r % desc.head_dim;
    r /= desc.head_dim;
    const int64_t h = r % t.heads;
    r /= t.heads;
    const int64_t s = r % t.rows;
    const int64_t b = r / t.rows;
    uint16_t* ptr = t.data + b * t.batch_stride + s * t.row_stride + h * t.head_stride + d;
    const uint16_t want =
        rounded_bits(input_value_fp32(seed, tensor, static_cast<uint64_t>(i), dist), dtype);
    if constexpr (kCheck) {
      local += (*ptr != want) ? 1u : 0u;
    } else {
      *ptr = want;
    }
  }
  if constexpr (kCheck) {
    for (int offset = 16; offset > 0; offset /= 2)
      local += __shfl_down_sync(0xffffffffu, local, offset);
    if ((threadIdx.x % 32) == 0 && local != 0) atomicAdd(mismatches, local);
  }
}

InputsDesc describe(const AttnParams& p) {
  if (p.dtype != DType::bf16 && p.dtype != DType::fp16)
    throw std::invalid_argument("inputs: unsupported dtype " +
                                std::to_string(static_cast<int>(p.dtype)));
  InputsDesc desc{};
  desc.batch = p.batch;
  desc.head_dim = p.head_dim;
  const void* ptrs[3] = {p.q, p.k, p.v};
  const int64_t strides[3][3] = {{p.q_batch_stride, p.q_row_stride, p.q_head_stride},
                                 {p.k_batch_stride, p.k_row_stride, p.k_head_stride},
                                 {p.v_batch_stride, p.v_row_stride, p.v_head_stride}};
  for (int t = 0; t < 3; ++t) {
    const int64_t n = input_numel(p, t);  // validates the sizes
    if (n > 0 && ptrs[t] == nullptr)
      throw std::invalid_argument(std::string("inputs: ") + "QKV"[t] + " pointer is null");
    // The generator owns the buffers it fills, hence the const_cast.
    desc.t[t] = TensorDesc{static_cast<uint16_t*>(const_cast<void*>(ptrs[t])),
                           strides[t][0],
                           strides[t][1],
                           strides[t][2],
                           t == kTensorQ ? p.seqlen_q : p.seqlen_k,
                           t == kTensorQ ? p.heads_q : p.heads_kv};
  }
  return desc;
}

dim3 grid_for(const AttnParams& p) {
  constexpr int64_t kThreads = 256;
  const int64_t n = std::max({input_numel(p, kTensorQ), input_numel(p, kTensorK),
                              input_numel(p, kTensorV), int64_t{1}});
  // Enough blocks to fill any current GPU; the grid-stride loop covers the rest.
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 16384);
  return dim3(static_cast<unsigned>(blocks), 3);
}

}  // namespace

void fill_inputs(const AttnParams& p, uint64_t seed, Distribution d, cudaStream_t s) {
  const InputsDesc desc = describe(p);
  inputs_kernel<false><<<grid_for(p), 256, 0, s>>>(desc, seed, d, p.dtype, nullptr);
  ATTNGATE_CUDA_CHECK(cudaGetLastError());
}

uint64_t count_input_mismatches(const AttnParams& p, uint64_t seed, Distribution d,
                                cudaStream_t s) {
  const InputsDesc desc = describe(p);
  unsigned long long* counter = nullptr;
  // Plain cudaMalloc: the call synchronizes anyway, and it needs no stream-ordered memory pool.
  ATTNGATE_CUDA_CHECK(cudaMalloc(&counter, sizeof(*counter)));
  struct FreeOnExit {
    unsigned long long* ptr;
    ~FreeOnExit() { cudaFree(ptr); }
  } guard{counter};
  ATTNGATE_CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof(*counter), s));
  inputs_kernel<true><<<grid_for(p), 256, 0, s>>>(desc, seed, d, p.dtype, counter);
  ATTNGATE_CUDA_CHECK(cudaGetLastError());
  unsigned long long host = 0;
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(&host, counter, sizeof(host), cudaMemcpyDeviceToHost, s));
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(s));
  return host;
}

}  // namespace attngate
