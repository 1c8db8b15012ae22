#include "attngate/bench/device_peak.hpp"

#include <algorithm>
#include <cctype>

namespace attngate::bench {

namespace {

struct Entry {
  const char* needle;  // matched case-insensitively as a substring, first match wins
  double tflops;
};

// Order matters: more specific names first ("H100 PCIe" before "H100", "GH200"/"H200" before "H20").
constexpr Entry kTable[] = {
    {"h100 pcie", 756.5},  {"h100 nvl", 835.5}, {"gh200", 989.5}, {"h200", 989.5},
    {"h100", 989.5},       {"h800", 989.5},     {"h20", 148.0},   {"a100", 312.0},
    {"a800", 312.0},       {"b200", 2250.0},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

}  // namespace

DevicePeak lookup_peak(const std::string& device_name) {
  const std::string name = lower(device_name);
  for (const Entry& e : kTable)
    if (name.find(e.needle) != std::string::npos) return {e.tflops, std::string("table entry '") + e.needle + "'"};
  return {0.0, "device '" + device_name + "' not in the peak table (pass --peak-tflops)"};
}

}  // namespace attngate::bench
