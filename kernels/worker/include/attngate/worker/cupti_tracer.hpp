// CUPTI activity tracing, switched on only for the harness's traced blocks. While it is off every
// activity kind is disabled and the buffers are flushed, so untraced calls pay nothing for it
// (measured on the H200: ../shared/measurements/README.md).
#pragma once

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstdint>
#include <string>

#include "attngate/worker/activity.hpp"

namespace attngate::worker::detail {
[[noreturn]] void throw_cupti_error(CUptiResult r, const char* file, int line, const char* expr);
}

// Throws std::runtime_error("file.cpp:12: cuptiActivityEnable(...) failed: <CUPTI's message>").
#define ATTNGATE_CUPTI_CHECK(expr)                                                               \
  do {                                                                                           \
    const CUptiResult attngate_cupti_check_r_ = (expr);                                          \
    if (attngate_cupti_check_r_ != CUPTI_SUCCESS)                                                \
      ::attngate::worker::detail::throw_cupti_error(attngate_cupti_check_r_, __FILE__, __LINE__, #expr); \
  } while (0)

namespace attngate::worker {

// CUPTI's activity callbacks are process-wide, so there is one tracer per process.
class CuptiTracer {
 public:
  static CuptiTracer& instance();

  // Enables kernel (concurrent), memcpy, memset and external-correlation records. Runtime and
  // driver API records are enabled too: CUPTI emits external-correlation links only for API
  // records it is collecting; the harness drops the API records themselves.
  void enable();
  // Disables every kind enabled above and flushes all buffers (forced), so what the block traced
  // is in the log when this returns. Call after the device is synchronized.
  void disable();
  bool enabled() const { return enabled_; }

  // Brackets the launch of timed call `id`: CUDA API calls in between link to `id`.
  void push(uint64_t id);
  void pop();

  // The records gathered since the last take(); rethrows an error met inside a CUPTI callback.
  ActivityLog take();
  uint64_t dropped_records();  // records CUPTI dropped for lack of buffer space since the last call

 private:
  CuptiTracer();
  bool enabled_ = false;
};

}  // namespace attngate::worker
