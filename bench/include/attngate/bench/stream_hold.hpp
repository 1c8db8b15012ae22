// Holds the harness stream with a spinning one-thread kernel until the timed call is enqueued.
// Without it the first event's timestamp is taken while the host is still launching the kernel,
// so event time would include launch latency (several µs: a few percent of a 100 µs call); with
// it the GPU sees start event, kernel and stop event back to back.
#pragma once

#include <cuda_runtime_api.h>

namespace attngate::bench {

// The hold kernel's name as CUPTI reports it (extern "C", so unmangled).
inline constexpr const char* kHoldKernelName = "attngate_bench_hold";

class StreamHold {
 public:
  // A hold waits at most this long, so a launch function that synchronizes cannot deadlock.
  static constexpr unsigned long long kTimeoutNs = 50'000'000ull;

  StreamHold();
  ~StreamHold();
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;

  void hold(cudaStream_t stream);  // enqueues the hold kernel
  void release();                  // lets the pending hold kernel finish
  // After synchronizing: whether the last hold ran into its timeout, i.e. the host did not
  // release it in time (the launch function blocked on the device).
  bool last_timed_out() const;
  // After synchronizing: the longest the last hold kernel went between two polls, in µs (a few µs
  // when nothing else ran on the GPU meanwhile).
  double last_max_gap_us() const;

 private:
  unsigned* release_host_ = nullptr;
  unsigned* release_dev_ = nullptr;
  unsigned* timeout_host_ = nullptr;
  unsigned* timeout_dev_ = nullptr;
  unsigned long long* gap_host_ = nullptr;
  unsigned long long* gap_dev_ = nullptr;
  unsigned epoch_ = 0;
};

}  // namespace attngate::bench
