#include "attngate/bench/stream_hold.hpp"
#include "attngate/cuda_check.hpp"

// Spins until the host releases it. The largest gap between two of its polls is written to
// `max_gap`: the GPU ran another context's work while it held the stream (contexts of different
// processes are time-sliced, so this kernel is descheduled meanwhile).
extern "C" __global__ void attngate_bench_hold(const volatile unsigned* release, unsigned epoch,
                                               volatile unsigned* timed_out, unsigned long long timeout_ns,
                                               volatile unsigned long long* max_gap) {
  unsigned long long t0, last, gap = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  last = t0;
  // Wrap-safe comparison: the host's counter only grows.
  while (static_cast<int>(*release - epoch) < 0) {
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    gap = now - last > gap ? now - last : gap;
    last = now;
    if (now - t0 > timeout_ns) {
      *timed_out = epoch;
      break;
    }
    __nanosleep(200);
  }
  *max_gap = gap;
}

namespace attngate::bench {

StreamHold::StreamHold() {
  // Mapped pinned memory: the host writes the release flag and the device polls it directly.
  ATTNGATE_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&release_host_), sizeof(unsigned), cudaHostAllocMapped));
  ATTNGATE_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&timeout_host_), sizeof(unsigned), cudaHostAllocMapped));
  ATTNGATE_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&gap_host_), sizeof(unsigned long long), cudaHostAllocMapped));
  *release_host_ = 0;
  *timeout_host_ = 0;
  *gap_host_ = 0;
  ATTNGATE_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&gap_dev_), gap_host_, 0));
  ATTNGATE_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&release_dev_), release_host_, 0));
  ATTNGATE_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&timeout_dev_), timeout_host_, 0));
}

StreamHold::~StreamHold() {
  // No throw from a destructor; a failure here would surface at the next CUDA call anyway.
  if (release_host_) cudaFreeHost(release_host_);
  if (timeout_host_) cudaFreeHost(timeout_host_);
  if (gap_host_) cudaFreeHost(gap_host_);
}

void StreamHold::hold(cudaStream_t stream) {
  ++epoch_;
  attngate_bench_hold<<<1, 1, 0, stream>>>(release_dev_, epoch_, timeout_dev_, kTimeoutNs, gap_dev_);
  ATTNGATE_CUDA_CHECK(cudaGetLastError());
}

void StreamHold::release() { __atomic_store_n(release_host_, epoch_, __ATOMIC_SEQ_CST); }

bool StreamHold::last_timed_out() const { return __atomic_load_n(timeout_host_, __ATOMIC_SEQ_CST) == epoch_; }

double StreamHold::last_max_gap_us() const { return double(__atomic_load_n(gap_host_, __ATOMIC_SEQ_CST)) * 1e-3; }

}  // namespace attngate::bench
