// Planted cheats of issue 19 that treat the whole worker process as theirs: they patch its code at
// run time, tell its traced calls from the others, keep results on disk for the next run, and load
// their kernel from an embedded cubin. Each runs the honest variant kernel (cheats_host.cu) or
// replays it; cheats.yaml says how each must be caught, or why it passes and what bounds it.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "attngate/params.hpp"
#include "attngate/registry.hpp"
#include "planted.hpp"
#include "attngate_cheat_payload.h"  // cubin_payload.cu as bytes (CMakeLists.txt)
#include "fa2_variants.cuh"

namespace attngate_adversarial {

cudaError_t launch_honest(const AttnParams& p, cudaStream_t stream);                   // cheats_host.cu
cudaError_t launch_spin(unsigned long long ns, cudaStream_t stream);                    // cheats_host.cu
cudaStream_t private_stream();                                                         // cheats_isolation.cu
void* scratch(int purpose, size_t bytes);                                              // cheats_isolation.cu
cudaError_t copy_async(void* dst, const void* src, size_t bytes, cudaStream_t s);      // cheats_isolation.cu

namespace {

size_t o_bytes(const AttnParams& p) { return size_t(p.batch) * p.seqlen_q * p.heads_q * p.head_dim * 2; }
size_t lse_bytes(const AttnParams& p) { return size_t(p.batch) * p.heads_q * p.seqlen_q * 4; }

__global__ void fill_bf16_kernel(__nv_bfloat16* o, int64_t n, float v) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = __float2bfloat16(v);
}

// Whether this process is a worker (the in-process tools link every kernel too).
bool in_worker() {
  char exe[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  return n > 0 && std::string(exe, size_t(n)).find("attngate_worker_") != std::string::npos;
}

// ---- Hidden work on the calls the worker does not trace ------------------------------------------
// The worker pushes an external correlation id on CUPTI's stack around a traced call; the cheat
// pops it to look, and pushes it back. Traced calls (whose CUPTI records would show a second
// stream) are honest; on the others, after the first few, the caller's stream gets finite
// 0.01 everywhere and the exact output comes 20 ms later on a stream of the cheat's own.
bool traced_now() {
  uint64_t id = 0;
  if (cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id) != CUPTI_SUCCESS) return false;
  // Put back what the worker pushed, or its own pop after the call fails (and it stops).
  return cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id) == CUPTI_SUCCESS;
}

cudaError_t launch_untraced_side_work(const AttnParams& p, cudaStream_t s) {
  static std::atomic<int> calls{0};
  if (calls++ < 4 || traced_now()) return launch_honest(p, s);
  fill_bf16_kernel<<<264, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p.o), int64_t(o_bytes(p) / 2), 0.01f);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  cudaEvent_t ready;
  if (const cudaError_t e = cudaEventCreateWithFlags(&ready, cudaEventDisableTiming); e != cudaSuccess) return e;
  cudaError_t e = cudaEventRecord(ready, s);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(private_stream(), ready, 0);
  cudaEventDestroy(ready);
  if (e == cudaSuccess) e = launch_spin(20'000'000, private_stream());
  return e == cudaSuccess ? launch_honest(p, private_stream()) : e;
}

// ---- A run-time patch of the worker ---------------------------------------------------------------
// Overwrites the first bytes of the CUDA runtime's cudaStreamWaitEvent in this process with
// `xor eax, eax; ret` (cudaSuccess, no wait): the worker's stream no longer waits for the judge's
// go event, so the call runs as soon as it is enqueued, before the judge's clock and new contents.
// Overwrites the first bytes of the CUDA runtime's function `name` in this process with `code`.
void patch_runtime(const char* name, const unsigned char* code, size_t bytes) {
  void* fn = ::dlsym(RTLD_DEFAULT, name);
  if (!fn) {  // a worker linked without libcudart.so: the cheat stays honest, and says so
    std::fprintf(stderr, "cheat: no %s to patch: %s\n", name, ::dlerror());
    return;
  }
  const long page = ::sysconf(_SC_PAGESIZE);
  auto* at = static_cast<unsigned char*>(fn);
  auto* first = reinterpret_cast<unsigned char*>(reinterpret_cast<uintptr_t>(at) & ~uintptr_t(page - 1));
  if (::mprotect(first, size_t(2 * page), PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
    std::fprintf(stderr, "cheat: mprotect of %s refused: %s\n", name, std::strerror(errno));
    return;
  }
  std::memcpy(at, code, bytes);
  if (::mprotect(first, size_t(2 * page), PROT_READ | PROT_EXEC) != 0)
    std::fprintf(stderr, "cheat: mprotect back to r-x failed: %s\n", std::strerror(errno));
  std::fprintf(stderr, "cheat: patched %s at %p\n", name, fn);
}

void patch_stream_wait() {
  const unsigned char ret0[] = {0x31, 0xC0, 0xC3};  // xor eax, eax; ret
  patch_runtime("cudaStreamWaitEvent", ret0, sizeof ret0);
}

cudaError_t launch_patches_worker(const AttnParams& p, cudaStream_t s) {
  static std::once_flag once;
  if (in_worker()) std::call_once(once, patch_stream_wait);
  return launch_honest(p, s);
}

// ---- A worker whose own clock says nothing took time -------------------------------------------------
// Aimed at worker_clock_trust_us: the bench subtracts the candidate worker's round trip by that
// worker's own events (judge time less worker event time), within 1.5 us. cudaEventElapsedTime is
// patched to `mov dword [rdi], 0; xor eax, eax; ret` (0 ms, cudaSuccess), so the worker's word
// makes its whole call a round trip. A worker time that is no time earns no correction, and the
// judge's clock against the worker's events is CLOCK_DISAGREE (e).
void patch_elapsed_time() {
  const unsigned char zero_ms[] = {0xC7, 0x07, 0x00, 0x00, 0x00, 0x00, 0x31, 0xC0, 0xC3};
  patch_runtime("cudaEventElapsedTime", zero_ms, sizeof zero_ms);
}

cudaError_t launch_zeroes_worker_clock(const AttnParams& p, cudaStream_t s) {
  static std::once_flag once;
  if (in_worker()) std::call_once(once, patch_elapsed_time);
  return launch_honest(p, s);
}

// ---- Results kept on disk for the next run ----------------------------------------------------------
// Each call's output is stashed on the device and written to a file keyed by the shape and the
// call's number modulo 2 (at the next call, when it is surely complete). A call whose key has a
// file replays it with one copy instead of computing: right only if the inputs repeat, as they
// would under a fixed seed. It tries every place a process of its user could write, all outside
// the worker's scratch folder (/dev/shm too, where the sandbox lets a worker open the files that
// exist but create none): the sandbox must refuse each, and then it computes.
struct Cache {
  std::string dir;  // where the files go; empty: nowhere could be written
  std::map<std::string, void*> replay;  // key -> device copy of its file (O then LSE)
  std::string pending_key;              // the last call's key, written at the next call
  void* pending = nullptr;
  size_t pending_bytes = 0;
  std::map<std::string, int> calls;  // per shape
};

std::string shape_of(const AttnParams& p) {
  char b[128];
  std::snprintf(b, sizeof b, "%d_%d_%d_%d_%d_%d", p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, int(p.causal));
  return b;
}

bool writable_dir(const std::string& dir) {
  ::mkdir(dir.c_str(), 0700);
  const std::string probe = dir + "/probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

// Removes files older than 10 minutes, so that an earlier test run's files are not replayed.
void forget_old(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const time_t now = ::time(nullptr);
  for (dirent* e = ::readdir(d); e != nullptr; e = ::readdir(d)) {
    const std::string f = dir + "/" + e->d_name;
    struct stat st {};
    if (e->d_name[0] != '.' && ::stat(f.c_str(), &st) == 0 && now - st.st_mtime > 600) ::unlink(f.c_str());
  }
  ::closedir(d);
}

std::string cache_dir() {
  const std::string tag = "/attngate_cheat_cache_" + std::to_string(::getuid());
  std::vector<std::string> places;
  if (const char* h = std::getenv("HOME")) places.push_back(std::string(h) + "/.cache");
  places.insert(places.end(), {"/var/tmp", "/tmp", "/dev/shm"});
  if (const char* w = std::getenv("PWD")) places.push_back(w);
  for (const auto& p : places)
    if (writable_dir(p + tag)) {
      std::fprintf(stderr, "cheat: escaped the sandbox: a cache in %s%s\n", p.c_str(), tag.c_str());
      forget_old(p + tag);
      return p + tag;
    }
  return "";
}

void write_pending(Cache& c) {
  if (c.pending_key.empty()) return;
  std::vector<char> host(c.pending_bytes);
  if (cudaMemcpy(host.data(), c.pending, host.size(), cudaMemcpyDeviceToHost) != cudaSuccess) return;
  const std::string path = c.dir + "/" + c.pending_key;
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(host.data(), 1, host.size(), f);
    std::fclose(f);
  }
  c.pending_key.clear();
}

// The device copy of the file for `key`, read once; nullptr when there is none of this size.
void* replayable(Cache& c, const std::string& key, size_t bytes) {
  if (auto it = c.replay.find(key); it != c.replay.end()) return it->second;
  FILE* f = std::fopen((c.dir + "/" + key).c_str(), "rb");
  if (!f) return nullptr;
  std::vector<char> host(bytes);
  const bool whole = std::fread(host.data(), 1, bytes, f) == bytes;
  std::fclose(f);
  void* dev = nullptr;
  if (!whole || cudaMalloc(&dev, bytes) != cudaSuccess) return nullptr;
  if (cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
    cudaFree(dev);
    return nullptr;
  }
  return c.replay[key] = dev;
}

cudaError_t launch_cached_on_disk(const AttnParams& p, cudaStream_t s) {
  static Cache c{in_worker() ? cache_dir() : ""};
  static std::mutex mu;
  if (c.dir.empty()) return launch_honest(p, s);
  std::lock_guard<std::mutex> lock(mu);
  write_pending(c);  // the previous call is complete: the worker waits for each before the next
  const std::string key = shape_of(p) + "_" + std::to_string(c.calls[shape_of(p)]++ % 2);
  const size_t ob = o_bytes(p), lb = lse_bytes(p);
  if (void* hit = replayable(c, key, ob + lb)) {
    if (const cudaError_t e = copy_async(p.o, hit, ob, s); e != cudaSuccess) return e;
    return copy_async(p.lse, static_cast<char*>(hit) + ob, lb, s);
  }
  if (const cudaError_t e = launch_honest(p, s); e != cudaSuccess) return e;
  void* stash = scratch(20, ob + lb);
  if (!stash) return cudaErrorMemoryAllocation;
  if (const cudaError_t e = copy_async(stash, p.o, ob, s); e != cudaSuccess) return e;
  c.pending_key = key;
  c.pending = stash;
  c.pending_bytes = ob + lb;
  return copy_async(static_cast<char*>(stash) + ob, p.lse, lb, s);
}

// ---- Honest only when a profiler watches ------------------------------------------------------------
// Nsight Compute and Nsight Systems attach through the CUDA driver's injection variable (and NVTX's):
// under `attngate profile` the cheat computes, so the profile shows an honest kernel; anywhere
// else, the gate included, it overwrites its output with 0.5 after computing it.
bool profiler_attached() { return std::getenv("CUDA_INJECTION64_PATH") || std::getenv("NVTX_INJECTION64_PATH"); }

cudaError_t launch_honest_when_profiled(const AttnParams& p, cudaStream_t s) {
  if (const cudaError_t e = launch_honest(p, s); e != cudaSuccess || profiler_attached()) return e;
  fill_bf16_kernel<<<264, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p.o), int64_t(o_bytes(p) / 2), 0.5f);
  return cudaGetLastError();
}

// ---- A kernel loaded from an embedded cubin, under a name the inventory lists ----------------------
// cubin_payload.cu compiled apart: its kernels are the honest variant's code and names, but no
// object of the library is their code. Honest work: it must pass, and is judged by what it does.
struct Payload {
  cudaKernel_t plain = nullptr, causal = nullptr;
  cudaError_t status = cudaSuccess;
};

Payload load_payload() {
  Payload out;
  cudaLibrary_t lib = nullptr;
  out.status = cudaLibraryLoadData(&lib, attngate_cheat_payload, nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (out.status != cudaSuccess) return out;
  cudaKernel_t ks[4] = {};
  unsigned n = 0;
  if ((out.status = cudaLibraryGetKernelCount(&n, lib)) != cudaSuccess) return out;
  if ((out.status = cudaLibraryEnumerateKernels(ks, n < 4 ? n : 4, lib)) != cudaSuccess) return out;
  for (unsigned i = 0; i < n && i < 4; ++i) {
    const char* name = nullptr;
    if ((out.status = cudaFuncGetName(&name, reinterpret_cast<const void*>(ks[i]))) != cudaSuccess) return out;
    // attn_fwd_kernel<__nv_bfloat16, 128, kCausal, Planted<Cheat::none>>: kCausal mangles as Lb1E / Lb0E.
    (std::strstr(name, "Lb1E") ? out.causal : out.plain) = ks[i];
    const void* fn = reinterpret_cast<const void*>(ks[i]);
    cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg<128>::kSmemBytes);
    if (e == cudaSuccess)  // as launch_variant_impl
      e = cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    if (e != cudaSuccess) out.status = e;
  }
  if (out.status == cudaSuccess && (!out.plain || !out.causal)) out.status = cudaErrorSymbolNotFound;
  return out;
}

cudaError_t launch_cubin_renamed(const AttnParams& p, cudaStream_t s) {
  static const Payload k = load_payload();
  if (k.status != cudaSuccess) return k.status;
  bool nothing_to_do = false;
  if (const cudaError_t err = check_params(p, &nothing_to_do); err != cudaSuccess || nothing_to_do) return err;
  using C = Cfg<128>;
  const int m_blocks = (p.seqlen_q + C::kBlockM - 1) / C::kBlockM;
  if (m_blocks > 65535) return cudaErrorInvalidConfiguration;  // as launch_variant_impl
  const dim3 grid(unsigned(p.batch) * unsigned(p.heads_q), unsigned(m_blocks));
  AttnParams args = p;
  void* argv[] = {&args};
  return cudaLaunchKernel(reinterpret_cast<const void*>(p.causal ? k.causal : k.plain), grid, dim3(C::kThreads), argv,
                          size_t(C::kSmemBytes), s);
}

const PlantedCheat kWorkerCheats[] = {
    {"cheat_untraced_side_work", "on the calls its worker does not trace, finishes the output 20 ms later on a side stream",
     launch_untraced_side_work},
    {"cheat_patches_worker", "patches its worker's cudaStreamWaitEvent to return at once (no wait for the judge's go)",
     launch_patches_worker},
    {"cheat_zeroes_worker_clock", "patches its worker's cudaEventElapsedTime to report 0 ms (its own clock says every call was round trip)",
     launch_zeroes_worker_clock},
    {"cheat_disk_cache", "keeps outputs in files outside its scratch folder and replays them in later runs",
     launch_cached_on_disk},
    {"cheat_cubin_renamed", "launches the honest kernel from an embedded cubin, under the variant's own names",
     launch_cubin_renamed},
    {"cheat_honest_when_profiled", "computes honestly under a profiler (its injection variables set), else writes O = 0.5",
     launch_honest_when_profiled},
};
const bool g_registered = register_all(kWorkerCheats);

}  // namespace
}  // namespace attngate_adversarial
