#include "attngate/bench/sm_clock.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <stdexcept>
#include <string_view>

namespace attngate::bench {

namespace {

// The few NVML declarations used, as nvml.h has them (stable since NVML 2.285). Return codes are
// nvmlReturn_t (0 = NVML_SUCCESS, 3 = NVML_ERROR_NOT_SUPPORTED); clock type 1 is NVML_CLOCK_SM.
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlNotSupported = 3;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
constexpr int kNvmlClockSm = 1;

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*handle_by_pci)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*max_clock_info)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*event_reasons)(NvmlDevice, unsigned long long*) = nullptr;
  // Called with a zero-length array it says how many compute processes hold a context on the
  // device (NVML_ERROR_INSUFFICIENT_SIZE with the count, or success with 0); the records'
  // layout is never read.
  NvmlReturn (*compute_processes)(NvmlDevice, unsigned*, void*) = nullptr;
};

Nvml g_nvml;

std::string nvml_message(NvmlReturn r) {
  const char* s = g_nvml.error_string ? g_nvml.error_string(r) : nullptr;
  return (s ? std::string(s) : std::string("unknown NVML error")) + " (nvmlReturn_t " + std::to_string(r) + ")";
}

[[noreturn]] void throw_nvml(NvmlReturn r, const char* file, int line, const char* expr) {
  std::string_view path(file);
  if (const auto slash = path.find_last_of('/'); slash != std::string_view::npos) path.remove_prefix(slash + 1);
  throw std::runtime_error(std::string(path) + ":" + std::to_string(line) + ": " + expr + " failed: " + nvml_message(r));
}

#define ATTNGATE_NVML_CHECK(expr)                                                   \
  do {                                                                              \
    const NvmlReturn attngate_nvml_r_ = (expr);                                     \
    if (attngate_nvml_r_ != kNvmlSuccess) throw_nvml(attngate_nvml_r_, __FILE__, __LINE__, #expr); \
  } while (0)

template <typename F>
bool bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

}  // namespace

SmClock::SmClock(int cuda_device) {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    const char* e = dlerror();
    why_ = std::string("NVML not loadable: ") + (e ? e : "libnvidia-ml.so.1 not found");
    return;
  }
  if (!bind(lib_, "nvmlInit_v2", g_nvml.init) || !bind(lib_, "nvmlShutdown", g_nvml.shutdown) ||
      !bind(lib_, "nvmlErrorString", g_nvml.error_string) ||
      !bind(lib_, "nvmlDeviceGetHandleByPciBusId_v2", g_nvml.handle_by_pci) ||
      !bind(lib_, "nvmlDeviceGetClockInfo", g_nvml.clock_info) ||
      !bind(lib_, "nvmlDeviceGetMaxClockInfo", g_nvml.max_clock_info)) {
    why_ = "NVML lacks a required function";
    return;
  }
  // Renamed in NVML 12.2; the old name stays exported for older drivers.
  if (!bind(lib_, "nvmlDeviceGetCurrentClocksEventReasons", g_nvml.event_reasons))
    bind(lib_, "nvmlDeviceGetCurrentClocksThrottleReasons", g_nvml.event_reasons);
  if (!bind(lib_, "nvmlDeviceGetComputeRunningProcesses_v3", g_nvml.compute_processes))
    bind(lib_, "nvmlDeviceGetComputeRunningProcesses", g_nvml.compute_processes);

  if (const NvmlReturn r = g_nvml.init(); r != kNvmlSuccess) {
    why_ = "nvmlInit_v2 failed: " + nvml_message(r);
    return;
  }
  char bus_id[64] = {};
  if (const cudaError_t e = cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, cuda_device); e != cudaSuccess) {
    why_ = std::string("cudaDeviceGetPCIBusId failed: ") + cudaGetErrorString(e);
    return;
  }
  NvmlDevice dev = nullptr;
  if (const NvmlReturn r = g_nvml.handle_by_pci(bus_id, &dev); r != kNvmlSuccess) {
    why_ = std::string("nvmlDeviceGetHandleByPciBusId_v2(") + bus_id + ") failed: " + nvml_message(r);
    return;
  }
  unsigned max_mhz = 0;
  if (const NvmlReturn r = g_nvml.max_clock_info(dev, kNvmlClockSm, &max_mhz); r != kNvmlSuccess) {
    why_ = "nvmlDeviceGetMaxClockInfo(SM) failed: " + nvml_message(r);
    return;
  }
  max_mhz_ = max_mhz;
  device_ = dev;
}

SmClock::~SmClock() {
  if (device_ && g_nvml.shutdown) g_nvml.shutdown();  // nothing to report from a destructor
  if (lib_) dlclose(lib_);
}

ClockReading SmClock::read() const {
  if (!device_) throw std::runtime_error("SM clock read without NVML: " + why_);
  ClockReading out;
  unsigned mhz = 0;
  ATTNGATE_NVML_CHECK(g_nvml.clock_info(device_, kNvmlClockSm, &mhz));
  out.sm_mhz = mhz;
  if (g_nvml.event_reasons) {
    unsigned long long reasons = 0;
    const NvmlReturn r = g_nvml.event_reasons(device_, &reasons);
    if (r == kNvmlSuccess)
      out.event_reasons = reasons;
    else if (r != kNvmlNotSupported)
      ATTNGATE_NVML_CHECK(r);
  }
  return out;
}

int SmClock::compute_processes() const {
  if (!device_ || !g_nvml.compute_processes) return -1;
  unsigned count = 0;
  const NvmlReturn r = g_nvml.compute_processes(device_, &count, nullptr);
  if (r == kNvmlSuccess) return 0;
  if (r == kNvmlInsufficientSize) return int(count);
  return -1;  // not supported here (some containers and virtual GPUs): unknown, never a failure
}

}  // namespace attngate::bench
