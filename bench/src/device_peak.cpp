#include "attngate/bench/device_peak.hpp"

#include <algorithm>
#include <cctype>

namespace attngate::bench {

namespace {

struct Entry {
  const char* needle;  // matched case-insensitively as a substring, first match wins
  double tflops;
  double hbm_tbps;     // datasheet memory bandwidth, for the plausibility floor
};

// Order matters: more specific names first ("H100 PCIe" before "H100", "GH200"/"H200" before "H20").
constexpr Entry kTable[] = {
    {"h100 pcie", 756.5, 2.0}, {"h100 nvl", 835.5, 3.9}, {"gh200", 989.5, 4.9}, {"h200", 989.5, 4.8},
    {"h100", 989.5, 3.35},     {"h800", 989.5, 3.35},    {"h20", 148.0, 4.0},   {"a100", 312.0, 2.0},
    {"a800", 312.0, 2.0},      {"b200", 2250.0, 8.0},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

}  // namespace

DevicePeak lookup_peak(const std::string& device_name) {
  const std::string name = lower(device_name);
  for (const Entry& e : kTable)
    if (name.find(e.needle) != std::string::npos) return {e.tflops, std::string("table entry '") + e.needle + "'", e.hbm_tbps};
  return {0.0, "device '" + device_name + "' not in the peak table (pass --peak-tflops)", 0.0};
}

}  // namespace attngate::bench
