// Device buffers for one scenario: inputs, guarded outputs and the fp32 reference outputs.
// verify/ and bench/ both run kernels through this, so poisoning and guards are done one way.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attngate/inputs.hpp"
#include "attngate/params.hpp"
#include "attngate/registry.hpp"
#include "attngate/scenario.hpp"

namespace attngate::verify {

class KernelPool;

// Owns one device allocation; frees it on destruction. A buffer `for_kernel` (Q, K, V, O, LSE:
// what a kernel is given) comes from the KernelPool of the current PoolScope when there is one.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes, bool for_kernel = false);
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_), pool_(o.pool_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
    o.pool_ = nullptr;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  KernelPool* pool_ = nullptr;
};

// Device memory for the buffers kernels are given, in a few large chunks reused scenario after
// scenario: a worker maps each chunk once (CUDA IPC) instead of every buffer of every scenario,
// and the judge stops paying a cudaMalloc and cudaFree per buffer. Only kernel-visible buffers
// live in a pool, never a ground truth or a snapshot, and each worker gets its own pool where
// kernels must not see each other's outputs (the bench's contestants): a kernel that reads past
// its buffers finds only inputs and poisoned or its own outputs. Not thread-safe.
class KernelPool {
 public:
  KernelPool() = default;
  KernelPool(const KernelPool&) = delete;
  KernelPool& operator=(const KernelPool&) = delete;
  ~KernelPool();
  void* take(size_t bytes);
  void give_back(void* p) noexcept;
  // Makes the next takes of `bytes` in all land in one chunk (a problem's buffers together).
  void reserve(size_t bytes);
  size_t capacity() const;  // bytes in its chunks
  size_t reusable() const;  // the largest chunk when nothing is taken (what a reservation can reuse), else 0

 private:
  struct Chunk {
    void* base = nullptr;
    size_t bytes = 0;
  };
  void add_chunk(size_t bytes);
  void release_chunks() noexcept;
  std::vector<Chunk> chunks_;
  size_t current_ = 0, used_ = 0;  // the chunk being carved and the bytes taken from it
  int outstanding_ = 0;
};

// While it lives, DeviceBuffers `for_kernel` on this thread come from `pool`.
class PoolScope {
 public:
  explicit PoolScope(KernelPool& pool);
  ~PoolScope();
  PoolScope(const PoolScope&) = delete;
  PoolScope& operator=(const PoolScope&) = delete;
  static KernelPool* current();

 private:
  KernelPool* previous_;
};

// The process's pool for the buffers of kernel (or worker) `key`, made on first use and kept: one
// per kernel, so no kernel's worker maps another kernel's buffers.
KernelPool& pool_for(const std::string& key);

// An output buffer with guard zones on both sides, filled with a known byte pattern, so that a
// kernel writing outside its output (one row past the end, a negative offset) is caught.
class GuardedBuffer {
 public:
  static constexpr unsigned char kGuardByte = 0xA5;
  GuardedBuffer() = default;
  GuardedBuffer(size_t bytes, size_t guard_bytes);
  void* data() const { return static_cast<char*>(raw_.get()) + guard_; }
  size_t bytes() const { return bytes_; }
  // Guard zones to the pattern and the payload to all-ones bytes (NaN in fp32, bf16 and fp16).
  void poison(cudaStream_t s);
  // Number of guard bytes that no longer hold the pattern (synchronizes the stream).
  int64_t guard_violations(cudaStream_t s) const;

 private:
  DeviceBuffer raw_;
  size_t bytes_ = 0, guard_ = 0;
};

// Contiguous BSHD strides and sizes for `s`, with the given pointers.
AttnParams make_params(const Scenario& s, const void* q, const void* k, const void* v, void* o, float* lse);

size_t element_bytes(DType t);

struct Problem {
  explicit Problem(const Scenario& s);
  Scenario scenario;
  DeviceBuffer q, k, v;
  GuardedBuffer o, lse;
  AttnParams params{};  // points at q, k, v, o, lse

  // What the problem takes from a KernelPool: Q, K, V and the guarded O and LSE, each aligned.
  static size_t kernel_bytes(const Scenario& s);
  int64_t q_elems() const;
  int64_t kv_elems() const;
  int64_t lse_elems() const;
  void fill(uint64_t seed, Distribution d, cudaStream_t st);
  // Launches `kernel` once on `st` and checks the launch status; throws on a launch error.
  void launch(const KernelInfo& kernel, cudaStream_t st);
  // O converted to fp32 (contiguous BSHD) and LSE, copied to the host; synchronizes.
  std::vector<float> o_host(cudaStream_t st) const;
  std::vector<float> lse_host(cudaStream_t st) const;
};

// Device properties the harness needs; `available` is false when there is no usable CUDA device,
// with the runtime's reason in `why`.
struct DeviceStatus {
  bool available = false;
  std::string why;
  std::string name;
  int sm = 0;  // major*10+minor
};
DeviceStatus probe_device();

// Deterministic per-scenario seed from the run's base seed.
uint64_t scenario_seed(uint64_t base_seed, const std::string& scenario_id, int distribution_index);

}  // namespace attngate::verify
