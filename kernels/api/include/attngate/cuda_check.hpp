// Turns a failed CUDA runtime call into an exception that says where it failed and what was
// called, so that a harness failure is diagnosable from its log line alone.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace attngate::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* file, int line,
                                          const char* expr) {
  // The base name keeps messages short and identical across build directories.
  std::string_view path(file);
  if (const auto slash = path.find_last_of("/\\"); slash != std::string_view::npos)
    path.remove_prefix(slash + 1);
  throw std::runtime_error(std::string(path) + ":" + std::to_string(line) + ": " + expr +
                           " failed: " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) +
                           ")");
}

}  // namespace attngate::detail

// Throws std::runtime_error("file.cu:123: cudaMalloc(&p, n) failed: out of memory
// (cudaErrorMemoryAllocation)") when `expr` does not return cudaSuccess.
#define ATTNGATE_CUDA_CHECK(expr)                                                        \
  do {                                                                                   \
    const cudaError_t attngate_cuda_check_err_ = (expr);                                 \
    if (attngate_cuda_check_err_ != cudaSuccess)                                         \
      ::attngate::detail::throw_cuda_error(attngate_cuda_check_err_, __FILE__, __LINE__, \
                                           #expr);                                       \
  } while (0)

// For functions that report through a cudaError_t instead of throwing (launch functions).
#define ATTNGATE_CUDA_RETURN_IF_ERROR(expr)                             \
  do {                                                                  \
    const cudaError_t attngate_cuda_return_err_ = (expr);               \
    if (attngate_cuda_return_err_ != cudaSuccess) return attngate_cuda_return_err_; \
  } while (0)
