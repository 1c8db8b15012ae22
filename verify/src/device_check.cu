#include "attngate/verify/device_check.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "attngate/cuda_check.hpp"
#include "attngate/gpu_reference.hpp"

namespace attngate::verify {
namespace {

struct Sums {
  unsigned long long nonfinite, masked_mismatch, nan;
  unsigned int max_abs_bits, max_scaled_bits;  // non-negative floats order like their bits
  double diff2, ref2;
};

__device__ float as_float(float x) { return x; }
__device__ float as_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ float as_float(__half x) { return __half2float(x); }

// One pass with verify::compare's rules: -inf on either side must match; any other non-finite
// value of `got` counts; max abs, max scaled (|d| / max(1,|want|)) and the L2 sums over the rest.
template <typename T>
__global__ void compare_kernel(const T* got, const float* want, int64_t n, Sums* out) {
  unsigned long long nonfinite = 0, masked = 0;
  float max_abs = 0, max_scaled = 0;
  double diff2 = 0, ref2 = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = as_float(got[i]), w = want[i];
    const bool w_masked = isinf(w) && w < 0, g_masked = isinf(g) && g < 0;
    if (w_masked || g_masked) {
      if (w_masked != g_masked) (isfinite(g) || g_masked) ? ++masked : ++nonfinite;
      continue;
    }
    if (!isfinite(g)) {
      ++nonfinite;
      continue;
    }
    const double d = fabs(double(g) - double(w));
    max_abs = fmaxf(max_abs, float(d));
    max_scaled = fmaxf(max_scaled, float(d / fmax(1.0, fabs(double(w)))));
    diff2 += d * d;
    ref2 += double(w) * w;
  }
  for (int off = 16; off > 0; off >>= 1) {
    nonfinite += __shfl_down_sync(0xffffffffu, nonfinite, off);
    masked += __shfl_down_sync(0xffffffffu, masked, off);
    max_abs = fmaxf(max_abs, __shfl_down_sync(0xffffffffu, max_abs, off));
    max_scaled = fmaxf(max_scaled, __shfl_down_sync(0xffffffffu, max_scaled, off));
    diff2 += __shfl_down_sync(0xffffffffu, diff2, off);
    ref2 += __shfl_down_sync(0xffffffffu, ref2, off);
  }
  if ((threadIdx.x & 31) != 0) return;
  if (nonfinite) atomicAdd(&out->nonfinite, nonfinite);
  if (masked) atomicAdd(&out->masked_mismatch, masked);
  atomicMax(&out->max_abs_bits, __float_as_uint(max_abs));
  atomicMax(&out->max_scaled_bits, __float_as_uint(max_scaled));
  atomicAdd(&out->diff2, diff2);
  atomicAdd(&out->ref2, ref2);
}

template <typename T>
__global__ void nan_kernel(const T* x, int64_t n, Sums* out) {
  unsigned long long nan = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    nan += isnan(as_float(x[i]));
  for (int off = 16; off > 0; off >>= 1) nan += __shfl_down_sync(0xffffffffu, nan, off);
  if ((threadIdx.x & 31) == 0 && nan) atomicAdd(&out->nan, nan);
}

// The first element (lowest index) whose |got - want|, rounded to float as compare_kernel rounds
// it, equals the maximum: where the worst error is. Masked and non-finite elements are skipped.
template <typename T>
__global__ void locate_kernel(const T* got, const float* want, int64_t n, unsigned int max_abs_bits,
                              unsigned long long* index) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = as_float(got[i]), w = want[i];
    if ((isinf(w) && w < 0) || (isinf(g) && g < 0) || !isfinite(g)) continue;
    if (__float_as_uint(float(fabs(double(g) - double(w)))) == max_abs_bits) atomicMin(index, (unsigned long long)i);
  }
}

// Elements whose bits differ between a and b; of them, those where b holds the all-ones poison.
template <typename W>
__global__ void diff_kernel(const W* a, const W* b, int64_t n, unsigned long long* diff, unsigned long long* poison) {
  unsigned long long d = 0, p = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const bool differs = a[i] != b[i];
    d += differs;
    p += differs && b[i] == W(~W(0));
  }
  for (int off = 16; off > 0; off >>= 1) {
    d += __shfl_down_sync(0xffffffffu, d, off);
    p += __shfl_down_sync(0xffffffffu, p, off);
  }
  if ((threadIdx.x & 31) != 0) return;
  if (d) atomicAdd(diff, d);
  if (p) atomicAdd(poison, p);
}

int blocks_for(int64_t n) { return int(std::clamp<int64_t>((n + 255) / 256, 1, 4096)); }

ErrorStats to_stats(const Sums& s, int64_t n) {
  ErrorStats e;
  e.count = n;
  e.nonfinite = int64_t(s.nonfinite);
  e.masked_mismatch = int64_t(s.masked_mismatch);
  float a, b;
  std::memcpy(&a, &s.max_abs_bits, 4);
  std::memcpy(&b, &s.max_scaled_bits, 4);
  e.max_abs = a;
  e.max_scaled = b;
  e.rel_l2 = s.ref2 > 0 ? std::sqrt(s.diff2 / s.ref2) : std::sqrt(s.diff2);
  return e;
}

// Per-process scratch for the reductions, never freed: a cudaFree per check would synchronize the
// device inside the timed path's post-call probe.
struct Scratch {
  Sums sums[2];
  unsigned long long words[4];
};
Scratch* scratch() {
  static Scratch* d = [] {
    void* ptr = nullptr;
    ATTNGATE_CUDA_CHECK(cudaMalloc(&ptr, sizeof(Scratch)));
    return static_cast<Scratch*>(ptr);
  }();
  return d;
}

// Runs `enqueue(scratch)` on zeroed device scratch (words set to `words_init`) and returns it.
template <typename F>
Scratch reduce(cudaStream_t st, F enqueue, unsigned char words_init = 0) {
  Scratch* d = scratch();
  ATTNGATE_CUDA_CHECK(cudaMemsetAsync(d->sums, 0, sizeof d->sums, st));
  ATTNGATE_CUDA_CHECK(cudaMemsetAsync(d->words, words_init, sizeof d->words, st));
  enqueue(d);
  ATTNGATE_CUDA_CHECK(cudaGetLastError());
  Scratch h{};
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(&h, d, sizeof(Scratch), cudaMemcpyDeviceToHost, st));
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
  return h;
}

// O (16-bit, in the scenario's dtype) and LSE at `o`, `lse` against the truth: one reduction for
// both, then, when asked, one pass to locate each tensor's worst element.
DeviceErrors errors_of(DType dtype, const void* o, const float* lse, int64_t n, int64_t nl, const DeviceTruth& t,
                       cudaStream_t st, bool locate) {
  const auto* ref = static_cast<const float*>(t.o.get());
  const auto* ref_lse = static_cast<const float*>(t.lse.get());
  const Scratch s = reduce(st, [&](Scratch* d) {
    if (dtype == DType::bf16)
      compare_kernel<<<blocks_for(n), 256, 0, st>>>(static_cast<const __nv_bfloat16*>(o), ref, n, &d->sums[0]);
    else
      compare_kernel<<<blocks_for(n), 256, 0, st>>>(static_cast<const __half*>(o), ref, n, &d->sums[0]);
    compare_kernel<<<blocks_for(nl), 256, 0, st>>>(lse, ref_lse, nl, &d->sums[1]);
  });
  DeviceErrors e{to_stats(s.sums[0], n), to_stats(s.sums[1], nl)};
  if (!locate) return e;
  const Scratch w = reduce(st, [&](Scratch* d) {
    if (dtype == DType::bf16)
      locate_kernel<<<blocks_for(n), 256, 0, st>>>(static_cast<const __nv_bfloat16*>(o), ref, n,
                                                   s.sums[0].max_abs_bits, &d->words[0]);
    else
      locate_kernel<<<blocks_for(n), 256, 0, st>>>(static_cast<const __half*>(o), ref, n, s.sums[0].max_abs_bits,
                                                   &d->words[0]);
    locate_kernel<<<blocks_for(nl), 256, 0, st>>>(lse, ref_lse, nl, s.sums[1].max_abs_bits, &d->words[1]);
  }, 0xFF);
  auto fill = [&](ErrorStats& stats, unsigned long long index, auto read_got, const float* want) {
    if (index == ~0ull) return;
    stats.worst_index = int64_t(index);
    float wv = 0;
    ATTNGATE_CUDA_CHECK(cudaMemcpy(&wv, want + index, sizeof wv, cudaMemcpyDeviceToHost));
    stats.worst_want = wv;
    stats.worst_got = read_got(index);
  };
  fill(e.o, w.words[0], [&](unsigned long long i) {
    uint16_t bits = 0;
    ATTNGATE_CUDA_CHECK(cudaMemcpy(&bits, static_cast<const uint16_t*>(o) + i, 2, cudaMemcpyDeviceToHost));
    float f;
    if (dtype == DType::bf16) {
      const uint32_t wide = uint32_t(bits) << 16;
      std::memcpy(&f, &wide, 4);
    } else {
      __half_raw raw;
      raw.x = bits;
      f = __half2float(__half(raw));
    }
    return double(f);
  }, ref);
  fill(e.lse, w.words[1], [&](unsigned long long i) {
    float f = 0;
    ATTNGATE_CUDA_CHECK(cudaMemcpy(&f, lse + i, sizeof f, cudaMemcpyDeviceToHost));
    return double(f);
  }, ref_lse);
  return e;
}

}  // namespace

DeviceTruth device_ground_truth(Problem& p, cudaStream_t st) {
  DeviceTruth t{DeviceBuffer(size_t(p.q_elems()) * sizeof(float)), DeviceBuffer(size_t(p.lse_elems()) * sizeof(float))};
  AttnParams params = p.params;
  params.lse = static_cast<float*>(t.lse.get());
  ATTNGATE_CUDA_CHECK(gpu_reference_fp32(params, static_cast<float*>(t.o.get()), st));
  return t;
}

DeviceErrors device_errors(const Problem& p, const DeviceTruth& t, cudaStream_t st) {
  return errors_of(p.scenario.dtype, p.o.data(), static_cast<const float*>(p.lse.data()), p.q_elems(), p.lse_elems(),
                   t, st, /*locate=*/false);
}

int64_t count_nan_outputs(const Problem& p, cudaStream_t st) {
  const int64_t n = p.q_elems(), nl = p.lse_elems();
  const Scratch s = reduce(st, [&](Scratch* d) {
    if (p.scenario.dtype == DType::bf16)
      nan_kernel<<<blocks_for(n), 256, 0, st>>>(static_cast<const __nv_bfloat16*>(p.o.data()), n, &d->sums[0]);
    else
      nan_kernel<<<blocks_for(n), 256, 0, st>>>(static_cast<const __half*>(p.o.data()), n, &d->sums[0]);
    nan_kernel<<<blocks_for(nl), 256, 0, st>>>(static_cast<const float*>(p.lse.data()), nl, &d->sums[0]);
  });
  return int64_t(s.sums[0].nan);
}

DeviceSnapshot make_snapshot(const Problem& p) {
  return {DeviceBuffer(p.o.bytes()), DeviceBuffer(p.lse.bytes())};
}

void take_snapshot(const Problem& p, DeviceSnapshot& s, cudaStream_t st) {
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(s.o.get(), p.o.data(), p.o.bytes(), cudaMemcpyDeviceToDevice, st));
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(s.lse.get(), p.lse.data(), p.lse.bytes(), cudaMemcpyDeviceToDevice, st));
}

DeviceErrors snapshot_errors(const Problem& p, const DeviceSnapshot& s, const DeviceTruth& t, cudaStream_t st,
                             bool locate) {
  return errors_of(p.scenario.dtype, s.o.get(), static_cast<const float*>(s.lse.get()), p.q_elems(), p.lse_elems(),
                   t, st, locate);
}

namespace {

// Bits that differ between outputs a and b (O as 16-bit elements, LSE as 32-bit ones), and how
// many differing O elements hold the poison in b.
DeviceDiff diff_outputs(const Problem& p, const void* a_o, const void* a_lse, const void* b_o, const void* b_lse,
                        cudaStream_t st) {
  const int64_t n = p.q_elems(), nl = p.lse_elems();
  const Scratch r = reduce(st, [&](Scratch* d) {
    diff_kernel<<<blocks_for(n), 256, 0, st>>>(static_cast<const uint16_t*>(a_o), static_cast<const uint16_t*>(b_o), n,
                                               &d->words[0], &d->words[1]);
    diff_kernel<<<blocks_for(nl), 256, 0, st>>>(static_cast<const uint32_t*>(a_lse),
                                                static_cast<const uint32_t*>(b_lse), nl, &d->words[2], &d->words[3]);
  });
  return {int64_t(r.words[0]), int64_t(r.words[2]), int64_t(r.words[1])};
}

}  // namespace

DeviceDiff diff_from_snapshot(const Problem& p, const DeviceSnapshot& s, cudaStream_t st) {
  return diff_outputs(p, s.o.get(), s.lse.get(), p.o.data(), p.lse.data(), st);
}

DeviceDiff diff_snapshots(const Problem& p, const DeviceSnapshot& a, const DeviceSnapshot& b, cudaStream_t st) {
  return diff_outputs(p, a.o.get(), a.lse.get(), b.o.get(), b.lse.get(), st);
}

size_t verify_device_bytes(const Scenario& s, int problems) {
  const size_t q = size_t(s.batch) * s.seqlen_q * s.heads_q * s.head_dim;
  const size_t lse = size_t(s.batch) * s.heads_q * s.seqlen_q;
  const size_t e = element_bytes(s.dtype);
  // the kernels' problems, the fp32 truth of O and LSE, two snapshots of both
  return size_t(problems) * Problem::kernel_bytes(s) + (q * 4 + lse * 4) + 2 * (q * e + lse * 4);
}

void require_device_memory(const Scenario& s, size_t total, size_t fresh) {
  size_t free_bytes = 0, total_bytes = 0;
  ATTNGATE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (fresh <= free_bytes) return;
  char msg[512];
  std::snprintf(msg, sizeof msg,
                "scenario %s does not fit in device memory: verifying it needs %zu bytes (%.2f GiB: Q, K, V, the "
                "guarded O and LSE per kernel, their fp32 ground truth and two snapshots), of which %zu must be "
                "allocated now; the device has %zu bytes free (%.2f GiB of %.2f GiB); nothing was allocated",
                s.id.c_str(), total, total / 1073741824.0, fresh, free_bytes, free_bytes / 1073741824.0,
                total_bytes / 1073741824.0);
  throw std::runtime_error(msg);
}

}  // namespace attngate::verify
