#include "attngate/registry.hpp"

#include <algorithm>
#include <stdexcept>

namespace attngate {

bool KernelInfo::supports(DType dtype, int head_dim) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end() &&
         std::find(head_dims.begin(), head_dims.end(), head_dim) != head_dims.end();
}

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry registry;
  return registry;
}

void KernelRegistry::add(KernelInfo info) {
  if (info.name.empty()) throw std::invalid_argument("kernel registry: empty kernel name");
  if (info.launch == nullptr)
    throw std::invalid_argument("kernel registry: kernel '" + info.name + "' has no launch function");
  if (find(info.name) != nullptr)
    throw std::invalid_argument("kernel registry: kernel '" + info.name + "' registered twice");
  kernels_.push_back(std::move(info));
}

const KernelInfo* KernelRegistry::find(const std::string& name) const {
  for (const auto& k : kernels_)
    if (k.name == name) return &k;
  return nullptr;
}

const KernelInfo& KernelRegistry::get(const std::string& name) const {
  if (const KernelInfo* k = find(name)) return *k;
  std::string known;
  for (const auto* k : all()) known += (known.empty() ? "" : ", ") + k->name;
  throw std::invalid_argument("unknown kernel '" + name + "' (registered: " + known + ")");
}

std::vector<const KernelInfo*> KernelRegistry::all() const {
  std::vector<const KernelInfo*> out;
  for (const auto& k : kernels_) out.push_back(&k);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

}  // namespace attngate
