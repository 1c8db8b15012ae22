#include "attngate/verify/problem.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>

#include "attngate/cuda_check.hpp"
#include "attngate/verify/remote.hpp"

namespace attngate::verify {

DeviceBuffer::DeviceBuffer(size_t bytes, bool for_kernel) : bytes_(bytes) {
  if (bytes == 0) return;
  if (for_kernel && PoolScope::current()) {
    pool_ = PoolScope::current();
    ptr_ = pool_->take(bytes);
    return;
  }
  ATTNGATE_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  remote::track_allocation(ptr_, bytes_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    pool_ = o.pool_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
    o.pool_ = nullptr;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() noexcept {
  if (!ptr_) return;
  if (pool_) {
    pool_->give_back(ptr_);
  } else {
    remote::untrack_allocation(ptr_);  // workers that mapped it unmap it first
    cudaFree(ptr_);  // no throw from a destructor; a failure here surfaces at the next call
  }
  ptr_ = nullptr;
  pool_ = nullptr;
}

namespace {
thread_local KernelPool* t_pool = nullptr;
constexpr size_t kPoolAlign = 256;
constexpr size_t kChunkRound = size_t(2) << 20;
}  // namespace

PoolScope::PoolScope(KernelPool& pool) : previous_(t_pool) { t_pool = &pool; }
PoolScope::~PoolScope() { t_pool = previous_; }
KernelPool* PoolScope::current() { return t_pool; }

KernelPool::~KernelPool() { release_chunks(); }

void KernelPool::reserve(size_t bytes) {
  take(bytes);  // moves to (or makes) a chunk with room for all of it ...
  used_ -= (bytes + kPoolAlign - 1) / kPoolAlign * kPoolAlign;  // ... and takes nothing
  --outstanding_;
}

size_t KernelPool::reusable() const {
  if (outstanding_ > 0) return 0;
  size_t best = 0;
  for (const auto& c : chunks_) best = std::max(best, c.bytes);
  return best;
}

KernelPool& pool_for(const std::string& key) {
  // Never destroyed: buffers may be released after static destruction began.
  static auto* pools = new std::map<std::string, std::unique_ptr<KernelPool>>;
  auto& p = (*pools)[key];
  if (!p) p = std::make_unique<KernelPool>();
  return *p;
}

size_t KernelPool::capacity() const {
  size_t total = 0;
  for (const auto& c : chunks_) total += c.bytes;
  return total;
}

void KernelPool::add_chunk(size_t bytes) {
  bytes = (bytes + kChunkRound - 1) / kChunkRound * kChunkRound;
  Chunk c;
  ATTNGATE_CUDA_CHECK(cudaMalloc(&c.base, bytes));
  c.bytes = bytes;
  remote::track_allocation(c.base, c.bytes);
  chunks_.push_back(c);
}

void KernelPool::release_chunks() noexcept {
  for (const auto& c : chunks_) {
    remote::untrack_allocation(c.base);
    cudaFree(c.base);
  }
  chunks_.clear();
  current_ = used_ = 0;
}

void* KernelPool::take(size_t bytes) {
  bytes = (bytes + kPoolAlign - 1) / kPoolAlign * kPoolAlign;
  while (current_ < chunks_.size() && chunks_[current_].bytes - used_ < bytes) {
    ++current_;
    used_ = 0;
  }
  if (current_ == chunks_.size()) {
    // Grow by at least the last chunk's size, so that a run of bigger scenarios settles quickly.
    add_chunk(std::max(bytes, chunks_.empty() ? size_t(0) : chunks_.back().bytes));
    current_ = chunks_.size() - 1;
    used_ = 0;
  }
  void* p = static_cast<char*>(chunks_[current_].base) + used_;
  used_ += bytes;
  ++outstanding_;
  return p;
}

void KernelPool::give_back(void*) noexcept {
  if (--outstanding_ > 0) return;
  // Nothing is taken: carve from the start again. Several chunks become one of their total size
  // (freed now, allocated at the next take), so a scenario that needed them all fits in one.
  if (chunks_.size() > 1) {
    const size_t total = capacity();
    release_chunks();
    try {
      add_chunk(total);
    } catch (...) {
      // Out of memory now: the next take allocates what it needs.
    }
  }
  current_ = used_ = 0;
}

GuardedBuffer::GuardedBuffer(size_t bytes, size_t guard_bytes)
    : raw_(bytes + 2 * guard_bytes, /*for_kernel=*/true), bytes_(bytes), guard_(guard_bytes) {}

void GuardedBuffer::poison(cudaStream_t s) {
  ATTNGATE_CUDA_CHECK(cudaMemsetAsync(raw_.get(), kGuardByte, guard_, s));
  ATTNGATE_CUDA_CHECK(cudaMemsetAsync(data(), 0xFF, bytes_, s));
  ATTNGATE_CUDA_CHECK(cudaMemsetAsync(static_cast<char*>(data()) + bytes_, kGuardByte, guard_, s));
}

int64_t GuardedBuffer::guard_violations(cudaStream_t s) const {
  std::vector<unsigned char> host(2 * guard_);
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(host.data(), raw_.get(), guard_, cudaMemcpyDeviceToHost, s));
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(host.data() + guard_, static_cast<char*>(data()) + bytes_, guard_,
                                      cudaMemcpyDeviceToHost, s));
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(s));
  int64_t bad = 0;
  for (unsigned char c : host) bad += (c != kGuardByte);
  return bad;
}

size_t element_bytes(DType) { return 2; }

AttnParams make_params(const Scenario& s, const void* q, const void* k, const void* v, void* o, float* lse) {
  AttnParams p{};
  p.q = q;
  p.k = k;
  p.v = v;
  p.o = o;
  p.lse = lse;
  const int64_t d = s.head_dim;
  p.q_head_stride = p.o_head_stride = d;
  p.q_row_stride = p.o_row_stride = int64_t(s.heads_q) * d;
  p.q_batch_stride = p.o_batch_stride = int64_t(s.seqlen_q) * s.heads_q * d;
  p.k_head_stride = p.v_head_stride = d;
  p.k_row_stride = p.v_row_stride = int64_t(s.heads_kv) * d;
  p.k_batch_stride = p.v_batch_stride = int64_t(s.seqlen_k) * s.heads_kv * d;
  p.lse_head_stride = s.seqlen_q;
  p.lse_batch_stride = int64_t(s.heads_q) * s.seqlen_q;
  p.batch = s.batch;
  p.seqlen_q = s.seqlen_q;
  p.seqlen_k = s.seqlen_k;
  p.heads_q = s.heads_q;
  p.heads_kv = s.heads_kv;
  p.head_dim = s.head_dim;
  p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  p.causal = s.causal;
  p.dtype = s.dtype;
  return p;
}

namespace {

size_t guard_bytes_for(const Scenario&, size_t row_bytes) {
  // At least one full output row, so a write one row past the end lands in the guard; a multiple
  // of 256 bytes, so the output itself stays as aligned as a cudaMalloc'd one (vector stores, TMA).
  return (std::max<size_t>(4096, row_bytes) + 255) / 256 * 256;
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

template <typename T>
__global__ void to_float_kernel(const T* in, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(in[i]);
}

}  // namespace

Problem::Problem(const Scenario& s)
    : scenario(s),
      q(size_t(q_elems()) * element_bytes(s.dtype), /*for_kernel=*/true),
      k(size_t(kv_elems()) * element_bytes(s.dtype), /*for_kernel=*/true),
      v(size_t(kv_elems()) * element_bytes(s.dtype), /*for_kernel=*/true),
      o(size_t(q_elems()) * element_bytes(s.dtype),
        guard_bytes_for(s, size_t(s.heads_q) * s.head_dim * element_bytes(s.dtype))),
      lse(size_t(lse_elems()) * sizeof(float), guard_bytes_for(s, size_t(s.seqlen_q) * sizeof(float))) {
  params = make_params(s, q.get(), k.get(), v.get(), o.data(), static_cast<float*>(lse.data()));
}

size_t Problem::kernel_bytes(const Scenario& s) {
  const size_t e = element_bytes(s.dtype);
  const size_t q = size_t(s.batch) * s.seqlen_q * s.heads_q * s.head_dim * e;
  const size_t kv = size_t(s.batch) * s.seqlen_k * s.heads_kv * s.head_dim * e;
  const size_t lse = size_t(s.batch) * s.heads_q * s.seqlen_q * sizeof(float);
  const size_t o_guard = guard_bytes_for(s, size_t(s.heads_q) * s.head_dim * e);
  const size_t lse_guard = guard_bytes_for(s, size_t(s.seqlen_q) * sizeof(float));
  return aligned(q) + 2 * aligned(kv) + aligned(q + 2 * o_guard) + aligned(lse + 2 * lse_guard);
}

int64_t Problem::q_elems() const {
  return int64_t(scenario.batch) * scenario.seqlen_q * scenario.heads_q * scenario.head_dim;
}
int64_t Problem::kv_elems() const {
  return int64_t(scenario.batch) * scenario.seqlen_k * scenario.heads_kv * scenario.head_dim;
}
int64_t Problem::lse_elems() const { return int64_t(scenario.batch) * scenario.heads_q * scenario.seqlen_q; }

void Problem::fill(uint64_t seed, Distribution d, cudaStream_t st) { fill_inputs(params, seed, d, st); }

void Problem::launch(const KernelInfo& kernel, cudaStream_t st) {
  const cudaError_t err = kernel.launch(params, st);
  if (err != cudaSuccess)
    throw std::runtime_error("kernel '" + kernel.name + "' failed to launch: " + cudaGetErrorString(err) +
                             " (" + cudaGetErrorName(err) + ")");
}

std::vector<float> Problem::o_host(cudaStream_t st) const {
  const int64_t n = q_elems();
  DeviceBuffer tmp(size_t(n) * sizeof(float));
  const int blocks = int(std::min<int64_t>((n + 255) / 256, 8192));
  if (scenario.dtype == DType::bf16)
    to_float_kernel<<<blocks, 256, 0, st>>>(static_cast<const __nv_bfloat16*>(o.data()),
                                             static_cast<float*>(tmp.get()), n);
  else
    to_float_kernel<<<blocks, 256, 0, st>>>(static_cast<const __half*>(o.data()), static_cast<float*>(tmp.get()), n);
  ATTNGATE_CUDA_CHECK(cudaGetLastError());
  std::vector<float> host(n);
  ATTNGATE_CUDA_CHECK(cudaMemcpyAsync(host.data(), tmp.get(), n * sizeof(float), cudaMemcpyDeviceToHost, st));
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
  return host;
}

std::vector<float> Problem::lse_host(cudaStream_t st) const {
  std::vector<float> host(lse_elems());
  ATTNGATE_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), lse.data(), host.size() * sizeof(float), cudaMemcpyDeviceToHost, st));
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
  return host;
}

DeviceStatus probe_device() {
  DeviceStatus st;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    st.why = std::string("no usable CUDA device: ") + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")";
    cudaGetLastError();
    return st;
  }
  if (count == 0) {
    st.why = "no CUDA device present";
    return st;
  }
  int dev = 0;
  ATTNGATE_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  ATTNGATE_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  st.available = true;
  st.name = prop.name;
  st.sm = prop.major * 10 + prop.minor;
  return st;
}

uint64_t scenario_seed(uint64_t base_seed, const std::string& scenario_id, int distribution_index) {
  // FNV-1a over the id, mixed with the base seed: stable across runs and platforms.
  uint64_t h = 1469598103934665603ull ^ base_seed;
  for (unsigned char c : scenario_id) h = (h ^ c) * 1099511628211ull;
  h ^= uint64_t(distribution_index + 1) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

}  // namespace attngate::verify
