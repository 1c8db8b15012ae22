#include "attngate/worker/cupti_tracer.hpp"

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string_view>

namespace attngate::worker {

namespace detail {
[[noreturn]] void throw_cupti_error(CUptiResult r, const char* file, int line, const char* expr) {
  const char* msg = nullptr;
  if (cuptiGetResultString(r, &msg) != CUPTI_SUCCESS || msg == nullptr) msg = "unknown CUPTI error";
  std::string_view path(file);
  if (const auto slash = path.find_last_of("/\\"); slash != std::string_view::npos) path.remove_prefix(slash + 1);
  throw std::runtime_error(std::string(path) + ":" + std::to_string(line) + ": " + expr + " failed: " + msg +
                           " (CUptiResult " + std::to_string(int(r)) + ")");
}
}  // namespace detail

namespace {

// RUNTIME and DRIVER API records are collected only because CUPTI emits an external-correlation
// link for an API record it collects; runtime launches (cudaLaunchKernel) make no driver API record,
// and with DRIVER alone the H200 run linked no kernel (bench/README.md).
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
};
constexpr CUpti_ExternalCorrelationKind kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr size_t kBufferBytes = size_t(8) << 20;

// Shared with CUPTI's callbacks, which may run on CUPTI's own thread.
std::mutex g_mutex;
ActivityLog g_log;
std::string g_callback_error;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = kBufferBytes;
  *max_records = 0;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  if (*buffer == nullptr) {
    *size = 0;
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_callback_error = "CUPTI buffer allocation of " + std::to_string(kBufferBytes) + " bytes failed";
  }
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  ActivityLog local;
  CUpti_Activity* record = nullptr;
  std::string error;
  for (;;) {
    const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &record);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (r != CUPTI_SUCCESS) {
      const char* msg = nullptr;
      cuptiGetResultString(r, &msg);
      error = std::string("cuptiActivityGetNextRecord failed: ") + (msg ? msg : "unknown");
      break;
    }
    ingest(record, local);
  }
  std::free(buffer);
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_log.append(std::move(local));
  if (!error.empty() && g_callback_error.empty()) g_callback_error = error;
}

}  // namespace

CuptiTracer& CuptiTracer::instance() {
  static CuptiTracer tracer;
  return tracer;
}

CuptiTracer::CuptiTracer() { ATTNGATE_CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)); }

void CuptiTracer::enable() {
  if (enabled_) return;
  for (CUpti_ActivityKind k : kKinds) ATTNGATE_CUPTI_CHECK(cuptiActivityEnable(k));
  enabled_ = true;
}

void CuptiTracer::disable() {
  if (!enabled_) return;
  enabled_ = false;
  for (CUpti_ActivityKind k : kKinds) ATTNGATE_CUPTI_CHECK(cuptiActivityDisable(k));
  ATTNGATE_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
}

void CuptiTracer::push(uint64_t id) { ATTNGATE_CUPTI_CHECK(cuptiActivityPushExternalCorrelationId(kExternalKind, id)); }

void CuptiTracer::pop() {
  uint64_t last = 0;
  ATTNGATE_CUPTI_CHECK(cuptiActivityPopExternalCorrelationId(kExternalKind, &last));
}

ActivityLog CuptiTracer::take() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_callback_error.empty()) {
    std::string error;
    error.swap(g_callback_error);
    g_log = {};
    throw std::runtime_error("CUPTI activity callback: " + error);
  }
  ActivityLog out = std::move(g_log);
  g_log = {};
  return out;
}

uint64_t CuptiTracer::dropped_records() {
  size_t dropped = 0;
  ATTNGATE_CUPTI_CHECK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  return dropped;
}

}  // namespace attngate::worker
