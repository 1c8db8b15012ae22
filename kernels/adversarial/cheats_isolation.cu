// Planted cheats of issue 12: what a candidate that runs arbitrary host and device code in its own
// process can try against a judge in another process, mapped to the public catalogues of reward
// hacks (KernelArena's field guide, gpu-mode's exploit suite, KernelBench's adversarial tests).
// Each runs the honest variant kernel (cheats_host.cu) and misbehaves around it; cheats.yaml says
// what each does and the gate code that must catch it.
#include <cublas_v2.h>
#include <cupti_activity.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "attngate/registry.hpp"
#include "planted.hpp"
#include "fa2_variants.cuh"

namespace attngate_adversarial {

cudaError_t launch_honest(const AttnParams& p, cudaStream_t stream);  // cheats_host.cu

// A stream of the cheat's own, apart from the caller's (cheats_judge.cu uses it too).
cudaStream_t private_stream() {
  static cudaStream_t s = [] {
    cudaStream_t x = nullptr;
    cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking);
    return x;
  }();
  return s;
}

namespace {
int blocks_for(int64_t n) { return int(std::min<int64_t>((n + 255) / 256, 4096)); }
__global__ void copy_kernel(const uint32_t* in, uint32_t* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}
}  // namespace

// A private device buffer per (purpose, size), kept for the life of the process (cheats_worker.cu
// uses it and copy_async too).
void* scratch(int purpose, size_t bytes) {
  static std::mutex mu;
  static std::map<std::pair<int, size_t>, void*> buffers;
  std::lock_guard<std::mutex> lock(mu);
  void*& p = buffers[{purpose, bytes}];
  if (!p && cudaMalloc(&p, bytes) != cudaSuccess) p = nullptr;
  return p;
}

cudaError_t copy_async(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  const int64_t n = int64_t(bytes / 4);
  copy_kernel<<<blocks_for(n), 256, 0, s>>>(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), n);
  return cudaGetLastError();
}

namespace {

int64_t q_elems(const AttnParams& p) { return int64_t(p.batch) * p.seqlen_q * p.heads_q * p.head_dim; }
int64_t kv_elems(const AttnParams& p) { return int64_t(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim; }
int64_t lse_elems(const AttnParams& p) { return int64_t(p.batch) * p.heads_q * p.seqlen_q; }

__global__ void fill_kernel(uint16_t* o, int64_t n, uint16_t v, float* lse, int64_t nl, float lv) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) o[i] = v;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < nl; i += int64_t(gridDim.x) * blockDim.x) lse[i] = lv;
}

// ---- Slowing the baseline through the registry (issue 12's first attack) -----------------------
cudaError_t (*g_real_initial)(const AttnParams&, cudaStream_t) = nullptr;
cudaError_t slowed_initial(const AttnParams& p, cudaStream_t s) {
  for (int i = 0; i < 3; ++i)
    if (const cudaError_t e = g_real_initial(p, s); e != cudaSuccess) return e;
  return cudaSuccess;
}
// The attack at 2c5525a did this from a static initializer; here it is done at the cheat's first
// call, so that attngate's own in-process tools, which link every kernel, keep an honest baseline
// unless the cheat is run. Where the baseline is registered beside it, every baseline call then runs
// three times; in a worker there is no baseline to reach.
void hook_baseline() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto* k = const_cast<attngate::KernelInfo*>(attngate::KernelRegistry::instance().find("initial"));
    if (k) {
      g_real_initial = k->launch;
      k->launch = slowed_initial;
    }
  });
}
cudaError_t launch_static_init_slows_baseline(const AttnParams& p, cudaStream_t s) {
  hook_baseline();
  return launch_honest(p, s);
}

// ---- Work the event timer does not see -------------------------------------------------------
// Honest for the first calls (warm-up, verification), then computes on a private stream while the
// caller's stream is still held, and waits for it: the output is complete when the launch returns,
// but the caller's events bracket nothing.
cudaError_t launch_hold_dodge(const AttnParams& p, cudaStream_t s) {
  static std::atomic<int> calls{0};
  if (calls++ < 8) return launch_honest(p, s);
  if (const cudaError_t e = launch_honest(p, private_stream()); e != cudaSuccess) return e;
  return cudaStreamSynchronize(private_stream());
}
// Returns at once; a background thread launches the work a few milliseconds later.
cudaError_t launch_background_thread(const AttnParams& p, cudaStream_t) {
  std::thread([p] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    launch_honest(p, private_stream());
  }).detach();
  return cudaSuccess;
}
// Honest for the first 12 calls of the process (warm-up, a verification), then skips the work.
cudaError_t launch_skip_after_warmup(const AttnParams& p, cudaStream_t s) {
  static std::atomic<int> calls{0};
  if (calls++ < 12) return launch_honest(p, s);
  return cudaSuccess;
}

// ---- Lazy evaluation and result caches -------------------------------------------------------
// Reads O's first element back to see whether the caller poisoned it, and computes only then.
cudaError_t launch_peeks_poison(const AttnParams& p, cudaStream_t s) {
  uint16_t first = 0;
  if (const cudaError_t e = cudaMemcpy(&first, p.o, 2, cudaMemcpyDeviceToHost); e != cudaSuccess) return e;
  if ((first & 0x7fff) > 0x7f80) return launch_honest(p, s);  // NaN: a checked call
  return cudaSuccess;
}
// Samples the inputs (a few elements, through mapped host memory, no copy call) and replays the
// output it cached for the same sample at the same output pointer.
__global__ void sample_kernel(const uint16_t* q, const uint16_t* k, const uint16_t* v, uint16_t* out, int n) {
  const int i = threadIdx.x;
  if (i < n) {
    out[i] = q[i * 977];
    out[n + i] = k[i * 977];
    out[2 * n + i] = v[i * 977];
  }
}
cudaError_t launch_content_cache(const AttnParams& p, cudaStream_t s) {
  constexpr int kSample = 32;
  static uint16_t* host = nullptr;
  static uint16_t* dev = nullptr;
  if (!host) {
    if (cudaHostAlloc(reinterpret_cast<void**>(&host), 3 * kSample * 2, cudaHostAllocMapped) != cudaSuccess) return cudaErrorMemoryAllocation;
    cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), host, 0);
  }
  if (kv_elems(p) < 977 * kSample) return launch_honest(p, s);
  sample_kernel<<<1, kSample, 0, private_stream()>>>(static_cast<const uint16_t*>(p.q), static_cast<const uint16_t*>(p.k),
                                                     static_cast<const uint16_t*>(p.v), dev, kSample);
  if (const cudaError_t e = cudaStreamSynchronize(private_stream()); e != cudaSuccess) return e;
  struct Entry { std::vector<uint16_t> sample; void* o = nullptr; void* lse = nullptr; };
  static std::map<void*, Entry> cache;
  const std::vector<uint16_t> sample(host, host + 3 * kSample);
  const size_t ob = size_t(q_elems(p)) * 2, lb = size_t(lse_elems(p)) * 4;
  Entry& e = cache[p.o];
  if (e.o && e.sample == sample) {
    if (const cudaError_t err = copy_async(p.o, e.o, ob, s); err != cudaSuccess) return err;
    return copy_async(p.lse, e.lse, lb, s);
  }
  if (const cudaError_t err = launch_honest(p, s); err != cudaSuccess) return err;
  if (!e.o && (cudaMalloc(&e.o, ob) != cudaSuccess || cudaMalloc(&e.lse, lb) != cudaSuccess)) return cudaErrorMemoryAllocation;
  e.sample = sample;
  if (const cudaError_t err = copy_async(e.o, p.o, ob, s); err != cudaSuccess) return err;
  return copy_async(e.lse, p.lse, lb, s);
}

// ---- Garbage, identity and precision downgrade -----------------------------------------------
// O := 0 and LSE := 0, written by a kernel: fast, finite, wrong.
cudaError_t launch_zeros(const AttnParams& p, cudaStream_t s) {
  fill_kernel<<<blocks_for(q_elems(p)), 256, 0, s>>>(static_cast<uint16_t*>(p.o), q_elems(p), 0, p.lse, lse_elems(p), 0.f);
  return cudaGetLastError();
}
// O := V of the same position (an "identity" that is right only for one-key rows), LSE := 0.
__global__ void identity_kernel(const uint16_t* v, uint16_t* o, int64_t n, int64_t kv_n, float* lse, int64_t nl) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = v[i % kv_n];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < nl; i += int64_t(gridDim.x) * blockDim.x) lse[i] = 0.f;
}
cudaError_t launch_identity(const AttnParams& p, cudaStream_t s) {
  identity_kernel<<<blocks_for(q_elems(p)), 256, 0, s>>>(static_cast<const uint16_t*>(p.v), static_cast<uint16_t*>(p.o),
                                                     q_elems(p), kv_elems(p), p.lse, lse_elems(p));
  return cudaGetLastError();
}
// Q and K rounded through fp8 (e4m3) before the honest kernel: QK^T "in fp8".
__global__ void to_fp8_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(float(__nv_fp8_e4m3(__bfloat162float(in[i]))));
}
cudaError_t launch_fp8_scores(const AttnParams& p, cudaStream_t s) {
  const size_t qb = size_t(q_elems(p)) * 2, kb = size_t(kv_elems(p)) * 2;
  auto* q8 = static_cast<__nv_bfloat16*>(scratch(1, qb));
  auto* k8 = static_cast<__nv_bfloat16*>(scratch(2, kb));
  if (!q8 || !k8) return cudaErrorMemoryAllocation;
  to_fp8_kernel<<<blocks_for(q_elems(p)), 256, 0, s>>>(static_cast<const __nv_bfloat16*>(p.q), q8, q_elems(p));
  to_fp8_kernel<<<blocks_for(kv_elems(p)), 256, 0, s>>>(static_cast<const __nv_bfloat16*>(p.k), k8, kv_elems(p));
  AttnParams r = p;
  r.q = q8;
  r.k = k8;
  return launch_honest(r, s);
}

// ---- Someone else's kernel, copies in the call, nondeterminism -------------------------------
// A cuBLAS GEMM inside the call (here on scratch; a real cheat would compute QK^T with it).
cudaError_t launch_cublas(const AttnParams& p, cudaStream_t s) {
  static cublasHandle_t h = [] {
    cublasHandle_t x = nullptr;
    cublasCreate(&x);
    return x;
  }();
  constexpr int n = 256;
  auto* a = static_cast<float*>(scratch(3, n * n * 4));
  auto* c = static_cast<float*>(scratch(4, n * n * 4));
  if (!h || !a || !c) return cudaErrorMemoryAllocation;
  const float one = 1.f, zero = 0.f;
  cublasSetStream(h, s);
  if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &one, a, n, a, n, &zero, c, n) != CUBLAS_STATUS_SUCCESS)
    return cudaErrorUnknown;
  return launch_honest(p, s);
}
// The honest result of `p` in a private buffer (scratch `purpose`), O's size in `bytes`.
cudaError_t compute_privately(const AttnParams& p, cudaStream_t s, int purpose, void** o, size_t* bytes) {
  *bytes = size_t(q_elems(p)) * 2;
  *o = scratch(purpose, *bytes);
  if (!*o) return cudaErrorMemoryAllocation;
  AttnParams r = p;
  r.o = *o;
  return launch_honest(r, s);
}
// Computes into a private buffer and copies the result out with cudaMemcpyAsync.
cudaError_t launch_memcpy_result(const AttnParams& p, cudaStream_t s) {
  void* o = nullptr;
  size_t ob = 0;
  if (const cudaError_t e = compute_privately(p, s, 5, &o, &ob); e != cudaSuccess) return e;
  return cudaMemcpyAsync(p.o, o, ob, cudaMemcpyDeviceToDevice, s);
}
// The same copy, hidden from its worker's trace: it pushes the external correlation id the harness
// tags its own work with (the worker's tracer pushes CUSTOM0 ids; the harness's is ~0), so that an
// attribution by id would file the copy as the harness's and drop it. Aimed at the worker's rule
// that every record of a call's window is the call's (afc2ef7).
cudaError_t launch_hides_copy(const AttnParams& p, cudaStream_t s) {
  void* o = nullptr;
  size_t ob = 0;
  if (const cudaError_t e = compute_privately(p, s, 6, &o, &ob); e != cudaSuccess) return e;
  const bool pushed =
      cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, ~uint64_t(0)) == CUPTI_SUCCESS;
  const cudaError_t copied = cudaMemcpyAsync(p.o, o, ob, cudaMemcpyDeviceToDevice, s);
  uint64_t last = 0;
  if (pushed && cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last) != CUPTI_SUCCESS)
    return cudaErrorUnknown;
  return copied;
}
// Clears O with cudaMemsetAsync before the honest kernel (harmless here, but not a kernel of its own).
cudaError_t launch_memset_in_call(const AttnParams& p, cudaStream_t s) {
  if (const cudaError_t e = cudaMemsetAsync(p.o, 0, size_t(q_elems(p)) * 2, s); e != cudaSuccess) return e;
  return launch_honest(p, s);
}
// After the honest kernel, every block adds its own small term to LSE[0] with a float atomic. The
// terms sum to zero, but the rounding of the running sum depends on the order the blocks arrive
// in, and each block first waits a time read off the GPU's global timer (different every call),
// so the order, and the last bits of LSE[0], change between calls.
__global__ void atomic_order_kernel(float* lse) {
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const unsigned long long wait = ((t0 >> 5) ^ (blockIdx.x * 2654435761u)) & 16383;  // up to 16 us
  for (unsigned long long t = t0; t - t0 < wait;) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  const float term = 1e-6f * (float(int((blockIdx.x * 7919u) % 4096u)) - 2047.5f);
  if (threadIdx.x == 0) atomicAdd(lse, term);
}
cudaError_t launch_atomic_order(const AttnParams& p, cudaStream_t s) {
  if (const cudaError_t e = launch_honest(p, s); e != cudaSuccess) return e;
  atomic_order_kernel<<<4096, 32, 0, s>>>(p.lse);
  return cudaGetLastError();
}

// ---- A wrong second call (aimed at verification judging both calls) -----------------------------
// Correct on the first call with a given output pointer, then finite but wrong: O scaled by 1.5. A
// second call that was only compared with the first passed as "nondeterministic" wherever the
// nondeterminism policy allowed that; both calls are judged against the truth now.
__global__ void scale_o_kernel(__nv_bfloat16* o, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = __float2bfloat16(1.5f * __bfloat162float(o[i]));
}
cudaError_t launch_wrong_after_first_call(const AttnParams& p, cudaStream_t s) {
  static std::mutex mu;
  static std::map<void*, int> calls;
  int n = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    n = ++calls[p.o];
  }
  if (const cudaError_t e = launch_honest(p, s); e != cudaSuccess || n == 1) return e;
  scale_o_kernel<<<blocks_for(q_elems(p)), 256, 0, s>>>(static_cast<__nv_bfloat16*>(p.o), q_elems(p));
  return cudaGetLastError();
}

// ---- Another build's name while verification watches (aimed at the gate tying every verify
// result to the timed build) ---------------------------------------------------------------------
// In a worker whose judge is verifying this cheat, the build hash compiled into the worker is blanked
// before the worker says hello, so verification's results name no build while the timed run names
// the real one: an agent that swapped the candidate between the gate's tests would hide that way.
constexpr const char* kBuildHashCheat = "cheat_build_hash_when_verified";

bool judge_is_verifying_this_cheat() {
  std::ifstream f("/proc/" + std::to_string(::getppid()) + "/cmdline", std::ios::binary);
  const std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return cmd.find("verify") != std::string::npos && cmd.find(kBuildHashCheat) != std::string::npos;
}

bool is_hash_at(const char* p) {
  for (int i = 0; i < 64; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(p[i])) || std::isupper(static_cast<unsigned char>(p[i]))) return false;
  return p[64] == '\0';
}

// The NUL-terminated run of 64 lowercase hex digits in the executable's read-only data gets a NUL
// first (the page is made writable for that: copy on write, this process only).
void blank_build_hash() {
  char exe[4096] = {};
  if (::readlink("/proc/self/exe", exe, sizeof exe - 1) <= 0) return;
  std::ifstream maps("/proc/self/maps");
  const long page = ::sysconf(_SC_PAGESIZE);
  for (std::string line; std::getline(maps, line);) {
    uintptr_t lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) != 3 || perms[0] != 'r') continue;
    if (line.size() < std::strlen(exe) || line.compare(line.size() - std::strlen(exe), std::string::npos, exe) != 0)
      continue;
    for (char* p = reinterpret_cast<char*>(lo) + 1; p + 65 <= reinterpret_cast<char*>(hi); ++p) {
      if (p[-1] != '\0' || !is_hash_at(p)) continue;
      void* at = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(page - 1));
      if (::mprotect(at, page, PROT_READ | PROT_WRITE) == 0) p[0] = '\0';
    }
  }
}

const bool g_build_hash_blanked = [] {
  if (!judge_is_verifying_this_cheat()) return false;
  blank_build_hash();
  return true;
}();

cudaError_t launch_build_hash_when_verified(const AttnParams& p, cudaStream_t s) { return launch_honest(p, s); }

// Registered from one table: name, what it does, launch function.
const PlantedCheat kIsolationCheats[] = {
    {"cheat_static_init_slows_baseline",
     "wraps the baseline's launch in the registry to run it three times", launch_static_init_slows_baseline},
    {"cheat_hold_dodge",
     "after warm-up, computes on a private stream while the caller's stream is held", launch_hold_dodge},
    {"cheat_background_thread",
     "returns at once; a background thread launches the work 5 ms later", launch_background_thread},
    {"cheat_skip_after_warmup",
     "honest for the first 12 calls, then skips the work", launch_skip_after_warmup},
    {"cheat_peeks_poison",
     "reads O back and computes only when it holds the poison", launch_peeks_poison},
    {"cheat_content_cache",
     "replays a cached output when a sample of the inputs is unchanged", launch_content_cache},
    {"cheat_zeros",
     "writes O = 0 and LSE = 0", launch_zeros},
    {"cheat_identity",
     "writes O = V and LSE = 0", launch_identity},
    {"cheat_fp8_scores",
     "rounds Q and K through fp8 e4m3 before the product", launch_fp8_scores},
    {"cheat_cublas",
     "calls a cuBLAS GEMM inside the call", launch_cublas},
    {"cheat_memcpy_result",
     "computes into a private buffer and copies it out with cudaMemcpyAsync", launch_memcpy_result},
    {"cheat_hides_copy",
     "copies its result out under the harness's own CUPTI correlation id", launch_hides_copy},
    {"cheat_memset_in_call",
     "clears O with cudaMemsetAsync inside the call", launch_memset_in_call},
    {"cheat_atomic_order",
     "float atomics in an order that varies between calls", launch_atomic_order},
    {"cheat_wrong_after_first_call",
     "correct on the first call with an output pointer, then O scaled by 1.5", launch_wrong_after_first_call},
    {kBuildHashCheat, "honest, but blanks its worker's build hash while verification watches",
     launch_build_hash_when_verified},
};
const bool g_registered = register_all(kIsolationCheats);

}  // namespace
}  // namespace attngate_adversarial
