// How a cheat file registers its planted cheats (cheats_host.cu registers each as the catalogue
// expects it: bf16, head_dim 128, sm_90). Internal to kernels/adversarial.
#pragma once

#include <cstddef>

#include "attngate/registry.hpp"

namespace attngate_adversarial {

struct PlantedCheat {
  const char* name;
  const char* does;
  attngate::LaunchFn launch;
};

void register_planted(const char* name, const char* does, attngate::LaunchFn launch);  // cheats_host.cu

// Registers every cheat of a file's table; for a static initializer (`const bool g = register_all(...)`).
template <std::size_t N>
bool register_all(const PlantedCheat (&cheats)[N]) {
  for (const PlantedCheat& c : cheats) register_planted(c.name, c.does, c.launch);
  return true;
}

}  // namespace attngate_adversarial
