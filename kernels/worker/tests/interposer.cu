// A kernel library object that interposes on what its worker calls (kernels/worker/cmake/symbols.cmake
// must list every definition marked FORBIDDEN below, and none marked allowed). Never linked into a
// worker: unit.worker.symbols.interposer runs the check over this object alone.
#include <cuda_runtime.h>
#include <cupti.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "attngate/registry.hpp"

// FORBIDDEN: the CUDA runtime's event timer (libcudart; and a cuda* C name).
extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.001f;
  return cudaSuccess;
}

// FORBIDDEN: CUPTI's record reader (libcupti; and a cupti* C name).
extern "C" CUptiResult cuptiActivityGetNextRecord(uint8_t*, size_t, CUpti_Activity** record) {
  *record = nullptr;
  return CUPTI_ERROR_MAX_LIMIT_REACHED;
}

// FORBIDDEN: the global operator new (libstdc++ defines it; replaceable, so it hooks every allocation).
void* operator new(std::size_t n) { return std::malloc(n ? n : 1); }

// FORBIDDEN: libc's write.
extern "C" ssize_t write(int, const void*, size_t n) { return static_cast<ssize_t>(n); }

// FORBIDDEN: a name in the CUDA runtime's namespace that no library defines (the name rule alone).
extern "C" int cudaAttngateNoSuchFunction() { return 0; }

// FORBIDDEN: a weak definition of a libstdc++ function outside any COMDAT group (not an inline
// function's copy: it takes the place of the library's).
namespace std {
[[gnu::weak]] void __throw_bad_alloc() { std::abort(); }
}  // namespace std

// FORBIDDEN: a member of the worker's own registry (libattngate_kernel_api.a).
namespace attngate {
std::vector<const KernelInfo*> KernelRegistry::all() const { return {}; }
}  // namespace attngate

// allowed: a kernel, its launch function, a C name outside the CUDA namespaces, and an inline
// member of std::string that libstdc++ exports too (its COMDAT copy, which every user emits).
__global__ void interposer_kernel(float* x) { x[threadIdx.x] += 1.0f; }
cudaError_t interposer_launch(float* x, cudaStream_t s) {
  interposer_kernel<<<1, 32, 0, s>>>(x);
  return cudaGetLastError();
}
extern "C" int attngate_interposer_helper() { return 1; }
using LengthFn = std::string::size_type (std::string::*)() const noexcept;
extern const LengthFn attngate_interposer_length = &std::string::length;
