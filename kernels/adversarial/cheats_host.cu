// Planted cheats that run the honest variant kernel (fa2_variants.cuh, Cheat::none) and misbehave
// around it, on the host or with helper kernels: timing tricks, caching, state changes, a fault and
// a hang. Also the honest variant itself, `cheat_honest`, the control that must pass everything.
// kernels/adversarial/README.md lists what each does and which check must catch it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "attngate/registry.hpp"
#include "fa2_variants.cuh"
#include "planted.hpp"

namespace attngate_adversarial {

cudaError_t launch_honest(const AttnParams& p, cudaStream_t stream) {
  bool nothing_to_do = false;
  if (const cudaError_t err = check_params(p, &nothing_to_do); err != cudaSuccess || nothing_to_do) return err;
  return p.causal ? launch_variant_impl<__nv_bfloat16, 128, true, Cheat::none>(p, stream)
                  : launch_variant_impl<__nv_bfloat16, 128, false, Cheat::none>(p, stream);
}

namespace {

// How long the side-stream cheat's stream waits before the real kernel: far longer than the
// harness takes to read the output after synchronizing its own stream, so the cheat is caught
// deterministically (its output is still the NaN poison when read).
constexpr unsigned long long kSideStreamDelayNs = 200'000'000ull;  // 200 ms
// "Forever" for the hang cheat, bounded so that a GPU is given back even if the process that
// launched it could not be killed; every timeout in the suite is far shorter.
constexpr unsigned long long kHangNs = 120'000'000'000ull;  // 120 s

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread that spins until `ns` nanoseconds of the GPU's global timer have passed.
__global__ void spin_kernel(unsigned long long ns) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < ns) __nanosleep(1000);
}

// Writes through a pointer into the unmapped first page: an illegal address.
__global__ void fault_kernel(int* address) { *address = 0x0BADF00D; }

// Q := round(Q * scale) in place, so the attention kernel can run with scale 1.
__global__ void prescale_kernel(__nv_bfloat16* q, int64_t n, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    q[i] = __float2bfloat16_rn(__bfloat162float(q[i]) * scale);
}

// Elements of a contiguous BSHD tensor with this batch stride.
size_t bshd_bytes(const AttnParams& p, int64_t batch_stride, size_t elem) { return size_t(p.batch) * size_t(batch_stride) * elem; }

cudaError_t launch_wrong_scale(const AttnParams& p, cudaStream_t stream) {
  AttnParams r = p;
  r.softmax_scale = 1.0f / float(p.head_dim);  // 1/d where 1/sqrt(d) belongs
  return launch_honest(r, stream);
}

// Output cache keyed by the call's pointers and shape: a repeated call with the same pointers
// replays the first call's output with a copy, whatever the inputs now hold.
struct CacheKey {
  const void *q, *k, *v;
  void* o;
  float* lse;
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
  bool causal;
  auto tie() const { return std::tie(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal); }
  bool operator<(const CacheKey& other) const { return tie() < other.tie(); }
};
struct CacheEntry {
  void* o = nullptr;
  void* lse = nullptr;
  size_t o_bytes = 0, lse_bytes = 0;
};

cudaError_t launch_cached_by_pointer(const AttnParams& p, cudaStream_t stream) {
  static std::mutex mu;
  static std::map<CacheKey, CacheEntry> cache;
  std::lock_guard<std::mutex> lock(mu);
  const CacheKey key{p.q, p.k, p.v, p.o, p.lse, p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.head_dim, p.causal};
  if (auto it = cache.find(key); it != cache.end()) {
    const CacheEntry& e = it->second;
    cudaError_t err = cudaMemcpyAsync(p.o, e.o, e.o_bytes, cudaMemcpyDeviceToDevice, stream);
    if (err == cudaSuccess && e.lse_bytes > 0)
      err = cudaMemcpyAsync(p.lse, e.lse, e.lse_bytes, cudaMemcpyDeviceToDevice, stream);
    return err;
  }
  if (const cudaError_t err = launch_honest(p, stream); err != cudaSuccess) return err;
  CacheEntry e;
  e.o_bytes = bshd_bytes(p, p.o_batch_stride, 2);
  e.lse_bytes = p.lse != nullptr ? size_t(p.batch) * size_t(p.lse_batch_stride) * sizeof(float) : 0;
  if (cudaError_t err = cudaMalloc(&e.o, e.o_bytes); err != cudaSuccess) return err;
  if (e.lse_bytes > 0)
    if (cudaError_t err = cudaMalloc(&e.lse, e.lse_bytes); err != cudaSuccess) return err;
  cudaError_t err = cudaMemcpyAsync(e.o, p.o, e.o_bytes, cudaMemcpyDeviceToDevice, stream);
  if (err == cudaSuccess && e.lse_bytes > 0)
    err = cudaMemcpyAsync(e.lse, p.lse, e.lse_bytes, cudaMemcpyDeviceToDevice, stream);
  cache.emplace(key, e);
  return err;
}

// The real work goes to a private stream behind a 200 ms wait; the call returns at once and the
// caller's stream (and its timer) sees nothing.
cudaError_t launch_side_stream(const AttnParams& p, cudaStream_t) {
  static cudaStream_t side = [] {
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    return s;
  }();
  if (side == nullptr) return cudaErrorNotReady;
  spin_kernel<<<1, 1, 0, side>>>(kSideStreamDelayNs);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  return launch_honest(p, side);
}

// Launches only the first time it sees an output pointer; later calls return at once, leaving
// whatever the buffer holds.
cudaError_t launch_skip_second_call(const AttnParams& p, cudaStream_t stream) {
  static std::mutex mu;
  static std::set<void*> seen;
  std::lock_guard<std::mutex> lock(mu);
  if (!seen.insert(p.o).second) return cudaSuccess;
  return launch_honest(p, stream);
}

// Pre-scales Q by the softmax scale in place (saving a multiply per score) and runs with scale 1.
cudaError_t launch_modifies_q(const AttnParams& p, cudaStream_t stream) {
  bool nothing_to_do = false;
  if (const cudaError_t err = check_params(p, &nothing_to_do); err != cudaSuccess || nothing_to_do) return err;
  const int64_t n = int64_t(p.batch) * p.q_batch_stride;
  const int blocks = int(std::min<int64_t>((n + 255) / 256, 4096));
  prescale_kernel<<<blocks, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(const_cast<void*>(p.q)), n, p.softmax_scale);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  AttnParams r = p;
  r.softmax_scale = 1.0f;
  return launch_honest(r, stream);
}

// Reserves the device's persisting L2 and marks K persisting on the caller's stream, so K stays
// resident in L2 across the harness's flush; the setting outlives the call.
cudaError_t launch_persisting_l2(const AttnParams& p, cudaStream_t stream) {
  static const cudaDeviceProp prop = [] {
    cudaDeviceProp pr{};
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess) cudaGetDeviceProperties(&pr, dev);
    return pr;
  }();
  if (prop.persistingL2CacheMaxSize > 0)
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, size_t(prop.persistingL2CacheMaxSize));
  cudaStreamAttrValue attr{};
  attr.accessPolicyWindow.base_ptr = const_cast<void*>(p.k);
  attr.accessPolicyWindow.num_bytes =
      std::min<size_t>(bshd_bytes(p, p.k_batch_stride, 2), size_t(std::max(prop.accessPolicyMaxWindowSize, 1)));
  attr.accessPolicyWindow.hitRatio = 1.0f;
  attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
  cudaGetLastError();  // where persisting L2 is unsupported the cheat is merely inert
  return launch_honest(p, stream);
}

cudaError_t launch_fault(const AttnParams&, cudaStream_t stream) {
  fault_kernel<<<1, 1, 0, stream>>>(reinterpret_cast<int*>(uintptr_t{16}));
  return cudaGetLastError();
}

cudaError_t launch_hang(const AttnParams&, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(kHangNs);
  return cudaGetLastError();
}

ATTNGATE_REGISTER_KERNEL("cheat_honest",
                         "CONTROL: the variant kernel with no bug planted; must pass every check",
                         {DType::bf16}, {128}, 90, launch_honest);
ATTNGATE_REGISTER_KERNEL("cheat_wrong_scale", "PLANTED CHEAT: softmax scale 1/d instead of 1/sqrt(d)",
                         {DType::bf16}, {128}, 90, launch_wrong_scale);
ATTNGATE_REGISTER_KERNEL("cheat_cached_by_pointer",
                         "PLANTED CHEAT: replays its first output when called again with the same pointers",
                         {DType::bf16}, {128}, 90, launch_cached_by_pointer);
ATTNGATE_REGISTER_KERNEL("cheat_side_stream",
                         "PLANTED CHEAT: runs on a private stream (after 200 ms) and returns at once",
                         {DType::bf16}, {128}, 90, launch_side_stream);
ATTNGATE_REGISTER_KERNEL("cheat_skip_second_call",
                         "PLANTED CHEAT: launches only on the first call with a given output pointer",
                         {DType::bf16}, {128}, 90, launch_skip_second_call);
ATTNGATE_REGISTER_KERNEL("cheat_modifies_q", "PLANTED CHEAT: pre-scales Q in place by the softmax scale",
                         {DType::bf16}, {128}, 90, launch_modifies_q);
ATTNGATE_REGISTER_KERNEL("cheat_persisting_l2",
                         "PLANTED CHEAT: sets a persisting-L2 access policy window for K on the caller's stream",
                         {DType::bf16}, {128}, 90, launch_persisting_l2);
ATTNGATE_REGISTER_KERNEL("cheat_fault", "PLANTED FAULT: writes to an illegal address", {DType::bf16}, {128}, 90,
                         launch_fault);
ATTNGATE_REGISTER_KERNEL("cheat_hang", "PLANTED HANG: spins (for 120 s, i.e. past every timeout)",
                         {DType::bf16}, {128}, 90, launch_hang);

}  // namespace

// Registers a host-side planted cheat as the catalogue expects it: bf16, head_dim 128, sm_90.
void register_planted(const char* name, const char* does, attngate::LaunchFn launch) {
  attngate::KernelRegistry::instance().add(
      {name, std::string("PLANTED CHEAT: ") + does, {attngate::DType::bf16}, {128}, 90, launch});
}

// The spin kernel for the other cheat files (a __global__ function cannot cross translation units).
cudaError_t launch_spin(unsigned long long ns, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError();
}

}  // namespace attngate_adversarial
