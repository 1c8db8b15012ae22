// attngate's example plugin: a deliberately simple attention forward behind the plugin ABI
// (kernels/plugin/include/attngate/plugin_abi.h), built as libattngate_plugin_example.so and
// registered as "plugin_example" when loaded (ATTNGATE_PLUGINS=... or --plugin=...).
//
// One warp per query row: each lane holds head_dim/32 elements of q and of the output, the scores
// are warp-reduced dot products, and the softmax is the online (running max) form in fp32, so it
// is exact up to fp32 rounding and the final rounding of O to bf16/fp16. It is a correctness
// example, not a fast kernel. Includes only CUDA and the plugin ABI header, as an outside kernel
// would.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "attngate/plugin_abi.h"

namespace {

thread_local std::string t_last_error;

__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }

constexpr int kWarpsPerBlock = 4;

template <typename T, int D>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) naive_attention(attngate_plugin_params p) {
  constexpr int kPerLane = D / 32;
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  if (row >= p.seqlen_q) return;
  const int hk = h / (p.heads_q / p.heads_kv);

  const T* q = static_cast<const T*>(p.q) + b * p.q_batch_stride + int64_t(row) * p.q_row_stride + h * p.q_head_stride;
  const T* k = static_cast<const T*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const T* v = static_cast<const T*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  T* o = static_cast<T*>(p.o) + b * p.o_batch_stride + int64_t(row) * p.o_row_stride + h * p.o_head_stride;

  // Keys 0..last are visible (bottom-right causal: j <= row + seqlen_k - seqlen_q).
  const int last = p.causal ? min(p.seqlen_k - 1, row + p.seqlen_k - p.seqlen_q) : p.seqlen_k - 1;

  float qf[kPerLane], acc[kPerLane];
#pragma unroll
  for (int t = 0; t < kPerLane; ++t) {
    qf[t] = to_float(q[lane + 32 * t]) * p.softmax_scale;
    acc[t] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int j = 0; j <= last; ++j) {
    const T* kj = k + int64_t(j) * p.k_row_stride;
    float s = 0.f;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) s += qf[t] * to_float(kj[lane + 32 * t]);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
    const float m_new = fmaxf(m, s);
    const float corr = expf(m - m_new);  // 0 on the first key (m = -inf)
    const float pj = expf(s - m_new);
    l = l * corr + pj;
    const T* vj = v + int64_t(j) * p.v_row_stride;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) acc[t] = acc[t] * corr + pj * to_float(vj[lane + 32 * t]);
    m = m_new;
  }
  // A row with no visible key: O = 0, LSE = -inf (attngate's definition).
  const float inv = last >= 0 ? 1.f / l : 0.f;
#pragma unroll
  for (int t = 0; t < kPerLane; ++t) o[lane + 32 * t] = from_float<T>(acc[t] * inv);
  if (lane == 0 && p.lse != nullptr)
    p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + row] = last >= 0 ? m + logf(l) : -INFINITY;
}

int32_t decline(const std::string& why) {
  t_last_error = why;
  return ATTNGATE_PLUGIN_LAUNCH_NOT_SUPPORTED;
}

template <typename T>
cudaError_t launch_dtype(const attngate_plugin_params& p, cudaStream_t stream) {
  const dim3 grid((p.seqlen_q + kWarpsPerBlock - 1) / kWarpsPerBlock, p.heads_q, p.batch);
  const dim3 block(kWarpsPerBlock * 32);
  switch (p.head_dim) {
    case 64: naive_attention<T, 64><<<grid, block, 0, stream>>>(p); break;
    case 128: naive_attention<T, 128><<<grid, block, 0, stream>>>(p); break;
    default: naive_attention<T, 256><<<grid, block, 0, stream>>>(p); break;
  }
  return cudaGetLastError();
}

int32_t launch(const attngate_plugin_params* p, void* stream) {
  t_last_error.clear();
  if (p == nullptr || p->struct_size != sizeof(attngate_plugin_params)) {
    t_last_error = "params struct of another ABI";
    return static_cast<int32_t>(cudaErrorInvalidValue);
  }
  if (p->head_dim != 64 && p->head_dim != 128 && p->head_dim != 256)
    return decline("head_dim " + std::to_string(p->head_dim) + " (supports 64, 128, 256)");
  if (p->heads_kv <= 0 || p->heads_q % p->heads_kv != 0)
    return decline("heads_q " + std::to_string(p->heads_q) + " is not a multiple of heads_kv " +
                   std::to_string(p->heads_kv));
  if (p->heads_q > 65535 || p->batch > 65535) return decline("more than 65535 heads or batches (grid limit)");
  cudaError_t err;
  if (p->dtype == ATTNGATE_PLUGIN_BF16)
    err = launch_dtype<__nv_bfloat16>(*p, static_cast<cudaStream_t>(stream));
  else if (p->dtype == ATTNGATE_PLUGIN_FP16)
    err = launch_dtype<__half>(*p, static_cast<cudaStream_t>(stream));
  else
    return decline("dtype " + std::to_string(p->dtype));
  if (err != cudaSuccess) t_last_error = std::string("kernel launch: ") + cudaGetErrorString(err);
  return static_cast<int32_t>(err);
}

const char* last_error() { return t_last_error.empty() ? nullptr : t_last_error.c_str(); }

const int32_t kDtypes[] = {ATTNGATE_PLUGIN_BF16, ATTNGATE_PLUGIN_FP16};
const int32_t kHeadDims[] = {64, 128, 256};

const attngate_plugin_info kKernels[] = {{
    ATTNGATE_PLUGIN_ABI_VERSION,
    "example",
    "naive attention forward, one warp per query row, fp32 online softmax (attngate's example plugin)",
    kDtypes,
    2,
    kHeadDims,
    3,
    80,
    &launch,
    &last_error,
}};

}  // namespace

extern "C" ATTNGATE_PLUGIN_EXPORT int32_t attngate_plugin_get(uint32_t host_abi_version,
                                                              const attngate_plugin_info** kernels, uint32_t* count) {
  if (host_abi_version != ATTNGATE_PLUGIN_ABI_VERSION) return ATTNGATE_PLUGIN_ERR_ABI_VERSION;
  *kernels = kKernels;
  *count = 1;
  return ATTNGATE_PLUGIN_OK;
}
