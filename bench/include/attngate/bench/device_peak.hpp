// Dense bf16 tensor-core peak by device name, for "percent of peak". Datasheet figures without
// sparsity; the --peak-tflops flag overrides the lookup for devices not listed.
#pragma once

#include <string>

namespace attngate::bench {

struct DevicePeak {
  double bf16_dense_tflops = 0;  // 0 when the device is unknown
  std::string source;            // which table entry matched, or why none did
  double hbm_tbps = 0;           // datasheet HBM bandwidth, TB/s (0 when unknown)
};

DevicePeak lookup_peak(const std::string& device_name);

}  // namespace attngate::bench
