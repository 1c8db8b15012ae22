#include "attngate/plugin_loader.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <set>
#include <utility>

#include "attngate/kernel_status.hpp"
#include "attngate/registry.hpp"

namespace attngate::plugin {

namespace {

// KernelInfo::launch is a plain function pointer, so each plugin kernel gets its own trampoline:
// trampoline<I> forwards to the plugin launch function stored in slot I.
struct Slot {
  std::string name;  // registered name, plugin_<name>
  attngate_plugin_launch_fn launch = nullptr;
  attngate_plugin_last_error_fn last_error = nullptr;
};

std::array<Slot, kMaxPluginKernels> g_slots;
std::size_t g_used = 0;
std::mutex g_mutex;  // guards g_slots/g_used and registration

cudaError_t call_slot(std::size_t i, const AttnParams& p, cudaStream_t stream) {
  const Slot& s = g_slots[i];
  clear_unsupported_reason();
  const attngate_plugin_params pp = to_plugin_params(p);
  const int32_t rc = s.launch(&pp, static_cast<void*>(stream));
  if (rc == ATTNGATE_PLUGIN_LAUNCH_OK) return cudaSuccess;
  const char* why = s.last_error ? s.last_error() : nullptr;
  if (rc == ATTNGATE_PLUGIN_LAUNCH_NOT_SUPPORTED) {
    set_unsupported_reason(s.name + ": " + (why && *why ? why : "not supported (the plugin gave no reason)"));
  } else {
    std::cerr << "attngate: " << s.name << ": launch returned " << rc << (why && *why ? std::string(": ") + why : "")
              << "\n";
  }
  return static_cast<cudaError_t>(rc);
}

template <std::size_t I>
cudaError_t trampoline(const AttnParams& p, cudaStream_t stream) {
  return call_slot(I, p, stream);
}

template <std::size_t... I>
constexpr std::array<LaunchFn, sizeof...(I)> make_trampolines(std::index_sequence<I...>) {
  return {&trampoline<I>...};
}
constexpr auto kTrampolines = make_trampolines(std::make_index_sequence<kMaxPluginKernels>{});

bool valid_name(const char* name) {
  if (name == nullptr) return false;
  const std::size_t n = std::strlen(name);
  if (n == 0 || n > 64) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = name[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

struct Candidate {
  std::string path;
  KernelInfo info;
  attngate_plugin_launch_fn launch = nullptr;
  attngate_plugin_last_error_fn last_error = nullptr;
};

struct OpenLibrary {
  std::string path;
  void* handle = nullptr;
};

// Describes one kernel description's problem, or returns an empty string when it is usable.
std::string check_info(const attngate_plugin_info& k) {
  if (k.abi_version != ATTNGATE_PLUGIN_ABI_VERSION)
    return "its kernel description says ABI version " + std::to_string(k.abi_version) + ", this attngate speaks " +
           std::to_string(ATTNGATE_PLUGIN_ABI_VERSION);
  if (!valid_name(k.name)) {
    std::string msg = "kernel name ";
    if (k.name) {
      msg += '\'';
      msg += k.name;
      msg += '\'';
    } else {
      msg += "(null)";
    }
    msg += " is not 1-64 characters of [A-Za-z0-9_]";
    return msg;
  }
  const std::string who = "kernel '" + std::string(k.name) + "': ";
  if (k.launch == nullptr) return who + "no launch function";
  if (k.num_dtypes == 0 || k.dtypes == nullptr) return who + "no dtypes";
  for (uint32_t i = 0; i < k.num_dtypes; ++i)
    if (k.dtypes[i] != ATTNGATE_PLUGIN_BF16 && k.dtypes[i] != ATTNGATE_PLUGIN_FP16)
      return who + "unknown dtype " + std::to_string(k.dtypes[i]) + " (0 = bf16, 1 = fp16)";
  if (k.num_head_dims == 0 || k.head_dims == nullptr) return who + "no head dims";
  for (uint32_t i = 0; i < k.num_head_dims; ++i)
    if (k.head_dims[i] <= 0) return who + "head dim " + std::to_string(k.head_dims[i]) + " is not positive";
  if (k.min_sm < 0) return who + "negative min_sm";
  return {};
}

// dlopens one library and reads its descriptions; throws PluginError (and closes it) on any problem.
std::vector<Candidate> open_one(const std::string& path, std::vector<OpenLibrary>& opened) {
  if (path.empty()) throw PluginError("plugin: empty library path");
  dlerror();
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    throw PluginError("plugin '" + path + "': cannot load the library: " + (e ? e : "dlopen failed"));
  }
  opened.push_back({path, h});
  dlerror();
  void* sym = dlsym(h, ATTNGATE_PLUGIN_ENTRY_POINT);
  if (sym == nullptr)
    throw PluginError("plugin '" + path + "': not an attngate plugin: it exports no " ATTNGATE_PLUGIN_ENTRY_POINT
                      " (plugin_abi.h)");
  attngate_plugin_get_fn get = nullptr;
  static_assert(sizeof(get) == sizeof(sym));
  std::memcpy(&get, &sym, sizeof get);
  const attngate_plugin_info* kernels = nullptr;
  uint32_t count = 0;
  const int32_t rc = get(ATTNGATE_PLUGIN_ABI_VERSION, &kernels, &count);
  if (rc == ATTNGATE_PLUGIN_ERR_ABI_VERSION)
    throw PluginError("plugin '" + path + "': refuses plugin ABI version " +
                      std::to_string(ATTNGATE_PLUGIN_ABI_VERSION) +
                      " (it was built for another version of plugin_abi.h; rebuild it against this attngate's)");
  if (rc != ATTNGATE_PLUGIN_OK)
    throw PluginError("plugin '" + path + "': " ATTNGATE_PLUGIN_ENTRY_POINT " failed with status " +
                      std::to_string(rc));
  if (kernels == nullptr || count == 0) throw PluginError("plugin '" + path + "': offers no kernel");
  if (count > kMaxPluginKernels) throw PluginError("plugin '" + path + "': offers " + std::to_string(count) + " kernels");
  std::vector<Candidate> out;
  for (uint32_t i = 0; i < count; ++i) {
    const attngate_plugin_info& k = kernels[i];
    if (const std::string why = check_info(k); !why.empty())
      throw PluginError("plugin '" + path + "': " + why);
    Candidate c;
    c.path = path;
    c.info.name = "plugin_" + std::string(k.name);
    c.info.description = (k.description ? std::string(k.description) : std::string()) + " [plugin " + path + "]";
    for (uint32_t d = 0; d < k.num_dtypes; ++d) c.info.dtypes.push_back(static_cast<DType>(k.dtypes[d]));
    for (uint32_t d = 0; d < k.num_head_dims; ++d) c.info.head_dims.push_back(k.head_dims[d]);
    c.info.min_sm = k.min_sm;
    c.launch = k.launch;
    c.last_error = k.last_error;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

attngate_plugin_params to_plugin_params(const AttnParams& p) {
  attngate_plugin_params o{};
  o.struct_size = sizeof(attngate_plugin_params);
  o.q = p.q;
  o.k = p.k;
  o.v = p.v;
  o.o = p.o;
  o.lse = p.lse;
  o.q_batch_stride = p.q_batch_stride;
  o.q_row_stride = p.q_row_stride;
  o.q_head_stride = p.q_head_stride;
  o.k_batch_stride = p.k_batch_stride;
  o.k_row_stride = p.k_row_stride;
  o.k_head_stride = p.k_head_stride;
  o.v_batch_stride = p.v_batch_stride;
  o.v_row_stride = p.v_row_stride;
  o.v_head_stride = p.v_head_stride;
  o.o_batch_stride = p.o_batch_stride;
  o.o_row_stride = p.o_row_stride;
  o.o_head_stride = p.o_head_stride;
  o.lse_batch_stride = p.lse_batch_stride;
  o.lse_head_stride = p.lse_head_stride;
  o.batch = p.batch;
  o.seqlen_q = p.seqlen_q;
  o.seqlen_k = p.seqlen_k;
  o.heads_q = p.heads_q;
  o.heads_kv = p.heads_kv;
  o.head_dim = p.head_dim;
  o.softmax_scale = p.softmax_scale;
  o.causal = p.causal ? 1 : 0;
  o.dtype = static_cast<int32_t>(p.dtype);
  return o;
}

std::vector<std::string> load_libraries(const std::vector<std::string>& paths) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<OpenLibrary> opened;
  std::vector<Candidate> all;
  try {
    for (const auto& path : paths) {
      auto got = open_one(path, opened);
      for (auto& c : got) all.push_back(std::move(c));
    }
    // Everything is checked before anything is registered.
    std::set<std::string> names;
    for (const auto& c : all) {
      if (KernelRegistry::instance().find(c.info.name) != nullptr)
        throw PluginError("plugin '" + c.path + "': a kernel named '" + c.info.name + "' is already registered");
      if (!names.insert(c.info.name).second)
        throw PluginError("plugin '" + c.path + "': kernel '" + c.info.name + "' is offered twice");
    }
    if (g_used + all.size() > kMaxPluginKernels)
      throw PluginError("plugin: at most " + std::to_string(kMaxPluginKernels) + " plugin kernels per process");
  } catch (...) {
    for (auto it = opened.rbegin(); it != opened.rend(); ++it) dlclose(it->handle);
    throw;
  }
  std::vector<std::string> registered;
  for (auto& c : all) {
    Slot& s = g_slots[g_used];
    s.name = c.info.name;
    s.launch = c.launch;
    s.last_error = c.last_error;
    c.info.launch = kTrampolines[g_used];
    ++g_used;
    registered.push_back(c.info.name);
    KernelRegistry::instance().add(std::move(c.info));
  }
  // The libraries stay loaded for the life of the process: their launch functions are registered.
  return registered;
}

std::vector<std::string> split_path_list(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t colon = list.find(':', start);
    const std::size_t end = colon == std::string::npos ? list.size() : colon;
    if (end > start) out.push_back(list.substr(start, end - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

bool load_plugins(int& argc, char** argv) { return load_plugins(argc, argv, std::cerr); }

bool load_plugins(int& argc, char** argv, std::ostream& log) {
  std::vector<std::string> paths;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (std::strncmp(a, "--plugin=", 9) == 0) {
      paths.emplace_back(a + 9);
      if (paths.back().empty()) {
        log << "attngate: --plugin= needs a library path\n";
        return false;
      }
    } else {
      argv[out++] = argv[i];
    }
  }
  if (argc > 0) {
    argc = out;
    argv[argc] = nullptr;
  }
  if (const char* env = std::getenv("ATTNGATE_PLUGINS"))
    for (auto& p : split_path_list(env)) paths.push_back(std::move(p));
  if (paths.empty()) return true;
  try {
    for (const auto& name : load_libraries(paths)) {
      const KernelInfo& k = KernelRegistry::instance().get(name);
      log << "attngate: loaded plugin kernel " << name << ": " << k.description << "\n";
    }
  } catch (const std::exception& e) {
    log << "attngate: " << e.what() << " (no plugin was loaded)\n";
    return false;
  }
  return true;
}

}  // namespace attngate::plugin
