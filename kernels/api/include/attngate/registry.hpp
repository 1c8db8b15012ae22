// Kernels register themselves here; tests and benchmarks are generated from registry x scenarios.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "attngate/params.hpp"

namespace attngate {

// Enqueues the whole forward pass on `stream` and returns the launch status; it must not
// synchronize or allocate, and keeps no state between calls except device memory that each call
// leaves as it found it (the candidate's tile counters: each call's last claim resets its own), so
// that every call computes the same result whatever ran before it.
using LaunchFn = cudaError_t (*)(const AttnParams& params, cudaStream_t stream);

struct KernelInfo {
  std::string name;
  std::string description;
  std::vector<DType> dtypes;
  std::vector<int> head_dims;
  int min_sm = 80;  // compute capability as major*10+minor
  LaunchFn launch = nullptr;

  bool supports(DType dtype, int head_dim) const;
};

class KernelRegistry {
 public:
  static KernelRegistry& instance();
  // Throws std::invalid_argument on an empty or duplicate name or a null launch function.
  void add(KernelInfo info);
  const KernelInfo* find(const std::string& name) const;  // nullptr when absent
  const KernelInfo& get(const std::string& name) const;   // throws naming the known kernels
  std::vector<const KernelInfo*> all() const;             // sorted by name

 private:
  std::vector<KernelInfo> kernels_;
};

struct KernelRegistrar {
  explicit KernelRegistrar(KernelInfo info) { KernelRegistry::instance().add(std::move(info)); }
};

}  // namespace attngate

#define ATTNGATE_CONCAT_INNER(a, b) a##b
#define ATTNGATE_CONCAT(a, b) ATTNGATE_CONCAT_INNER(a, b)
// Registers a kernel at static-initialization time. Kernel libraries are OBJECT libraries, so the
// registrar is never dropped by the linker.
#define ATTNGATE_REGISTER_KERNEL(...)                                               \
  static ::attngate::KernelRegistrar ATTNGATE_CONCAT(attngate_registrar_, __LINE__)( \
      ::attngate::KernelInfo{__VA_ARGS__})
