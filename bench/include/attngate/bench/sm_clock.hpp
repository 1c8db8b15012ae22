// SM clock readings through NVML, for cycles and for flagging throttled measurements. NVML is
// loaded at run time (libnvidia-ml.so.1 ships with the driver; the CUDA toolkit on the build
// machine has no nvml.h), so the harness builds everywhere and runs without clock readings where
// the driver library is missing.
#pragma once

#include <cstdint>
#include <string>

namespace attngate::bench {

struct ClockReading {
  double sm_mhz = 0;
  uint64_t event_reasons = 0;  // NVML clocks-event (throttle) reason bits; 0 when unsupported
};

class SmClock {
 public:
  // Binds to the NVML device with the PCI bus id of CUDA device `cuda_device`. Does not throw:
  // when NVML is unusable, available() is false and why() says why.
  explicit SmClock(int cuda_device);
  ~SmClock();
  SmClock(const SmClock&) = delete;
  SmClock& operator=(const SmClock&) = delete;

  bool available() const { return device_ != nullptr; }
  const std::string& why() const { return why_; }
  double max_sm_mhz() const { return max_mhz_; }
  // Current SM clock; throws std::runtime_error (file:line, call, NVML's message) on failure.
  ClockReading read() const;
  // CUDA processes holding a context on the device now (this one and its workers included); -1
  // when NVML cannot say. Counted, not matched by pid: pids differ across container namespaces.
  int compute_processes() const;

 private:
  void* lib_ = nullptr;
  void* device_ = nullptr;
  double max_mhz_ = 0;
  std::string why_;
};

}  // namespace attngate::bench
