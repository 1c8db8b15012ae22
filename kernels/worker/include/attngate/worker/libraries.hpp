// Which worker holds a kernel: the one rule the judges (attngate_verify's gate graph, the
// adversarial driver) use to name `attngate_worker_<library>` for a registered kernel. Every kernel
// library gets a worker of its own name (kernels/worker/CMakeLists.txt); the planted cheats and
// controls live in the adversarial library's worker, except those that must not share it: a cheat
// that interposes on the worker's own libraries makes its whole worker FORBIDDEN_SYMBOL, so it has
// a library and worker of its own (kernels/adversarial/interpose/).
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace attngate::worker {

inline bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Whether `kernel` is one of kernels/adversarial's: a planted cheat (`cheat_*`) or a control built
// beside them (`control_*`). The one place the role is read from the name (the verifier's
// planted-cheat rule, the adversarial driver's catalogue check and library_of below use it).
inline bool is_planted(const std::string& kernel) {
  return starts_with(kernel, "cheat_") || starts_with(kernel, "control_");
}

// The kernel library (and so the worker, attngate_worker_<library>) that registers `kernel`.
inline std::string library_of(const std::string& kernel) {
  if (starts_with(kernel, "cheat_interposes_")) return "adversarial_interpose";
  if (is_planted(kernel)) return "adversarial";
  return kernel;
}

// `--worker=<dir>/attngate_worker_<library>` for the workers holding `kernels`, each once, in the
// order given (the judges start them in that order: the bench measures the round trip to the first).
inline std::vector<std::string> worker_args(const std::filesystem::path& dir, const std::vector<std::string>& kernels) {
  std::vector<std::string> out;
  for (const auto& k : kernels) {
    const std::string arg = "--worker=" + (dir / ("attngate_worker_" + library_of(k))).string();
    if (std::find(out.begin(), out.end(), arg) == out.end()) out.push_back(arg);
  }
  return out;
}

}  // namespace attngate::worker
