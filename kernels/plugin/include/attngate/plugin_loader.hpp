// Loads plugin kernels (shared libraries speaking kernels/plugin/include/attngate/plugin_abi.h)
// into the KernelRegistry, as "plugin_<name>". kernels/plugin/README.md describes the ABI.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "attngate/params.hpp"
#include "attngate/plugin_abi.h"

namespace attngate::plugin {

// Every load problem: the library's path and what is wrong with it.
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The most plugin kernels one process can hold (each needs its own launch trampoline).
constexpr std::size_t kMaxPluginKernels = 32;

// Loads the libraries (dlopen, entry point, ABI version, validation of every description) and
// registers their kernels; returns the registered names. All or nothing: on any error it throws
// PluginError naming the library and registers no kernel of any of them.
std::vector<std::string> load_libraries(const std::vector<std::string>& paths);

// Splits ATTNGATE_PLUGINS-style lists ("a.so:b.so", empty entries ignored).
std::vector<std::string> split_path_list(const std::string& list);

// For main(): takes every --plugin=PATH argument out of argv (argc shrinks) and loads those
// libraries plus the ones listed in the environment variable ATTNGATE_PLUGINS (colon-separated).
// Prints one line per registered kernel to `log`; on an error prints it and returns false.
//   if (!attngate::plugin::load_plugins(argc, argv)) return 2;
bool load_plugins(int& argc, char** argv);
bool load_plugins(int& argc, char** argv, std::ostream& log);

// The ABI struct a plugin's launch receives for `p` (exposed for tests).
attngate_plugin_params to_plugin_params(const AttnParams& p);

}  // namespace attngate::plugin
