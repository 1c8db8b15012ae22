// Pins a test or benchmark process to the GPU that CTest's resource allocation gave it, so that
// `ctest --resource-spec-file gpus.json -j N` spreads GPU tests over every GPU of a host.
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace attngate::verify {

// CTest sets CTEST_RESOURCE_GROUP_<i> to the resource type and CTEST_RESOURCE_GROUP_<i>_<TYPE> to
// "id:<id>,slots:<n>"; a test declaring RESOURCE_GROUPS "gpus:1" gets one group of type gpus.
// Returns the GPU id pinned, or "" when CTest allocated none. Call before any CUDA call.
inline std::string pin_to_ctest_gpu() {
  const char* count = std::getenv("CTEST_RESOURCE_GROUP_COUNT");
  if (count == nullptr) return "";
  for (int i = 0; i < std::atoi(count); ++i) {
    const std::string group = "CTEST_RESOURCE_GROUP_" + std::to_string(i);
    const char* type = std::getenv(group.c_str());
    if (type == nullptr || std::string(type) != "gpus") continue;
    const char* alloc = std::getenv((group + "_GPUS").c_str());
    const std::string spec = alloc ? alloc : "";
    const auto id_at = spec.find("id:");
    if (id_at == std::string::npos)
      throw std::runtime_error("CTest resource allocation '" + spec + "' names no GPU id");
    const std::string id = spec.substr(id_at + 3, spec.find(',', id_at) - id_at - 3);
    if (id.empty()) throw std::runtime_error("CTest resource allocation '" + spec + "' names no GPU id");
    setenv("CUDA_VISIBLE_DEVICES", id.c_str(), 1);
    return id;
  }
  return "";
}

}  // namespace attngate::verify
