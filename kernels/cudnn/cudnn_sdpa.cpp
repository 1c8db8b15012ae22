// The "cudnn" kernel: cuDNN's fused attention forward (SDPA) through the cudnn-frontend graph API,
// registered like any attngate kernel so that verify.cudnn.* and cudnn/<scenario> exist.
//
// One launch = execute a cuDNN graph built for that shape. A graph is built on the first launch of
// a shape (cache key: every AttnParams field but the pointers, and the device), together with its
// workspace, and kept for the life of the process; later launches only set the stream and execute
// it. attngate_bench's plain first launch and warm-up calls therefore take the build, never the
// timed calls; verify pays it once per scenario. This departs from registry.hpp's "no state between
// calls" on purpose: building a cuDNN graph takes 10-1000 ms, and a baseline timed with it would be
// meaningless.
//
// cuDNN is told BSHD through strides: Q/O are dims [B, Hq, S, D] with strides (batch, head, row, 1),
// K/V [B, Hkv, S, D] (GQA/MQA: cuDNN groups query heads by Hq / Hkv, as attngate does), and LSE
// ("Stats", fp32 logsumexp of the scaled scores, natural log) [B, Hq, S, 1] with strides (batch,
// head, 1, 1). Causal masks: cudnn_plan.hpp. A problem cuDNN rejects is declined with
// cudaErrorNotSupported and cuDNN's message (attngate::unsupported_reason, attngate_cudnn_last_error).
#include <cudnn.h>
#include <cudnn_frontend.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "attngate/cudnn_kernel.h"
#include "attngate/kernel_status.hpp"
#include "attngate/params.hpp"
#include "attngate/registry.hpp"
#include "cudnn_plan.hpp"

namespace attngate::cudnn_sdpa {
cudaError_t fill_masked_rows(const AttnParams& p, int rows, cudaStream_t stream);  // masked_rows.cu
}

namespace {

namespace fe = cudnn_frontend;
using attngate::AttnParams;
using attngate::DType;
using namespace attngate::cudnn_sdpa;

thread_local std::string t_last_error;

// A failed call: thrown inside, turned into a return code at the launch boundary.
struct Failure {
  cudaError_t code;
  std::string what;
};

std::string where(const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  return std::string(base ? base + 1 : file) + ":" + std::to_string(line) + ": ";
}

std::string cudnn_last_error_text() {
  char buf[1024] = {0};
  cudnnGetLastErrorString(buf, sizeof buf);
  return buf[0] ? std::string(" (") + buf + ")" : std::string();
}

#define ATTNGATE_CUDNN_CALL(x)                                                                                \
  do {                                                                                                        \
    const cudnnStatus_t status_ = (x);                                                                        \
    if (status_ != CUDNN_STATUS_SUCCESS)                                                                      \
      throw Failure{cudaErrorUnknown,                                                                         \
                    where(__FILE__, __LINE__) + #x + ": " + cudnnGetErrorString(status_) + cudnn_last_error_text()}; \
  } while (0)

#define ATTNGATE_CUDA_CALL(x)                                                                     \
  do {                                                                                            \
    const cudaError_t err_ = (x);                                                                 \
    if (err_ != cudaSuccess)                                                                      \
      throw Failure{err_, where(__FILE__, __LINE__) + #x + ": " + cudaGetErrorName(err_) + ": " + \
                              cudaGetErrorString(err_)};                                          \
  } while (0)

// Frontend errors that mean "cuDNN cannot do this problem" rather than "attngate built the graph
// wrong": those decline the scenario (a skip with cuDNN's reason), every other one is an error.
bool means_unsupported(fe::error_code_t code, const std::string& message) {
  switch (code) {
    case fe::error_code_t::GRAPH_NOT_SUPPORTED:
    case fe::error_code_t::GRAPH_EXECUTION_PLAN_CREATION_FAILED:
    case fe::error_code_t::HEURISTIC_QUERY_FAILED:
      return true;
    case fe::error_code_t::CUDNN_BACKEND_API_FAILED:
      return message.find("NOT_SUPPORTED") != std::string::npos;
    default:
      return false;
  }
}

struct Unsupported {
  std::string why;
};

// Checks a frontend call while building: unsupported -> Unsupported, anything else -> Failure.
#define ATTNGATE_FE_BUILD(x)                                                                        \
  do {                                                                                              \
    fe::error_t e_ = (x);                                                                           \
    if (e_.is_bad()) {                                                                              \
      const std::string msg_ = e_.get_message();                                                    \
      if (means_unsupported(e_.get_code(), msg_)) throw Unsupported{std::string(#x) + ": " + msg_}; \
      throw Failure{cudaErrorInvalidValue, where(__FILE__, __LINE__) + #x + ": " + msg_};           \
    }                                                                                               \
  } while (0)

#define ATTNGATE_FE_CALL(x)                                                                                   \
  do {                                                                                                        \
    fe::error_t e_ = (x);                                                                                     \
    if (e_.is_bad()) throw Failure{cudaErrorUnknown, where(__FILE__, __LINE__) + #x + ": " + e_.get_message()}; \
  } while (0)

std::string version_text(long v) {
  // cuDNN 9 encodes major*10000 + minor*100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::string loaded_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cudnnGetVersion), &info) != 0 && info.dli_fname) return info.dli_fname;
  return "unknown path";
}

const std::string& version_string() {
  static const std::string s = "libcudnn " + version_text(long(cudnnGetVersion())) + " (" + loaded_library_path() +
                               "), built with cuDNN " + version_text(CUDNN_VERSION) + " headers and cudnn-frontend " +
                               std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." +
                               std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." +
                               std::to_string(CUDNN_FRONTEND_PATCH_VERSION);
  return s;
}

constexpr int64_t kQ = 1, kK = 2, kV = 3, kO = 4, kLse = 5;

struct CachedGraph {
  std::shared_ptr<fe::graph::Graph> graph;  // null when declined
  std::string unsupported;                  // cuDNN's reason when declined
  Plan plan;
  int lse_alignment = 16;     // declared to cuDNN (cudnn_plan.hpp)
  void* workspace = nullptr;  // owned for the life of the process, like the graph
  int64_t workspace_bytes = 0;
};

class Cache {
 public:
  std::mutex mutex;  // one launch at a time: handles are shared per device

  cudnnHandle_t handle(int device) {
    auto it = handles_.find(device);
    if (it != handles_.end()) return it->second;
    // The loaded cuDNN must be the one compiled against (major), and its sub-libraries (found next
    // to libcudnn.so: its RUNPATH is $ORIGIN) must match it.
    if (cudnnGetVersion() / 10000 != CUDNN_MAJOR)
      throw Failure{cudaErrorInvalidValue, "loaded " + version_string() + ": another major version"};
    ATTNGATE_CUDNN_CALL(cudnnGraphVersionCheck());
    cudnnHandle_t h = nullptr;
    ATTNGATE_CUDNN_CALL(cudnnCreate(&h));
    handles_.emplace(device, h);  // never destroyed: it must outlive every cached graph
    std::fprintf(stderr, "attngate: cudnn kernel on device %d: %s\n", device, version_string().c_str());
#ifdef ATTNGATE_CUDNN_LINKED
    char* loaded = realpath(loaded_library_path().c_str(), nullptr);
    if (loaded == nullptr || std::strcmp(loaded, ATTNGATE_CUDNN_LINKED) != 0)
      std::fprintf(stderr,
                   "attngate: cudnn kernel: WARNING: the build linked %s, but this process loaded %s "
                   "(another cuDNN on LD_LIBRARY_PATH?)\n",
                   ATTNGATE_CUDNN_LINKED, loaded ? loaded : loaded_library_path().c_str());
    std::free(loaded);
#endif
    return h;
  }

  CachedGraph& get(const AttnParams& p, int device, cudnnHandle_t h) {
    const Plan plan = make_plan(p);
    const int lse_align = lse_alignment(p, plan);
    auto key = cache_key(p, device, lse_align);
    auto it = graphs_.find(key);
    if (it != graphs_.end()) return it->second;
    CachedGraph g;
    g.plan = plan;
    g.lse_alignment = lse_align;
    if (!g.plan.unsupported.empty()) {
      g.unsupported = g.plan.unsupported;
    } else {
      try {
        build(p, g, h);
      } catch (const Unsupported& u) {
        g.graph.reset();
        g.unsupported = "cuDNN " + version_text(long(cudnnGetVersion())) + " declines it: " + u.why;
      }
    }
    return graphs_.emplace(std::move(key), std::move(g)).first->second;
  }

  long size() const { return long(graphs_.size()); }

 private:
  static void build(const AttnParams& p, CachedGraph& g, cudnnHandle_t h) {
    const Plan& plan = g.plan;
    auto graph = std::make_shared<fe::graph::Graph>();
    graph->set_io_data_type(p.dtype == DType::bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    const int64_t b = p.batch, hq = p.heads_q, hkv = p.heads_kv, d = p.head_dim;
    const int64_t sq = plan.seqlen_q, sk = p.seqlen_k;
    auto Q = graph->tensor(fe::graph::Tensor_attributes()
                               .set_name("Q")
                               .set_uid(kQ)
                               .set_dim({b, hq, sq, d})
                               .set_stride({p.q_batch_stride, p.q_head_stride, p.q_row_stride, 1}));
    auto K = graph->tensor(fe::graph::Tensor_attributes()
                               .set_name("K")
                               .set_uid(kK)
                               .set_dim({b, hkv, sk, d})
                               .set_stride({p.k_batch_stride, p.k_head_stride, p.k_row_stride, 1}));
    auto V = graph->tensor(fe::graph::Tensor_attributes()
                               .set_name("V")
                               .set_uid(kV)
                               .set_dim({b, hkv, sk, d})
                               .set_stride({p.v_batch_stride, p.v_head_stride, p.v_row_stride, 1}));
    auto options = fe::graph::SDPA_attributes()
                       .set_name("attngate_sdpa")
                       .set_generate_stats(p.lse != nullptr)
                       .set_attn_scale(p.softmax_scale);
    if (plan.causal) {
      options.set_diagonal_alignment(plan.bottom_right ? fe::DiagonalAlignment_t::BOTTOM_RIGHT
                                                       : fe::DiagonalAlignment_t::TOP_LEFT)
          .set_diagonal_band_right_bound(0);
    }
    auto [O, Stats] = graph->sdpa(Q, K, V, options);
    O->set_output(true).set_uid(kO).set_dim({b, hq, sq, d}).set_stride(
        {p.o_batch_stride, p.o_head_stride, p.o_row_stride, 1});
    if (p.lse != nullptr) {
      Stats->set_output(true)
          .set_uid(kLse)
          .set_data_type(fe::DataType_t::FLOAT)
          .set_dim({b, hq, sq, 1})
          .set_stride({p.lse_batch_stride, p.lse_head_stride, 1, 1})
          .set_alignment(g.lse_alignment);
    }
    ATTNGATE_FE_BUILD(graph->validate());
    ATTNGATE_FE_BUILD(graph->build_operation_graph(h));
    ATTNGATE_FE_BUILD(graph->create_execution_plans({fe::HeurMode_t::A}));
    ATTNGATE_FE_BUILD(graph->check_support(h));
    ATTNGATE_FE_BUILD(graph->build_plans(h, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE));
    int64_t ws = 0;
    ATTNGATE_FE_CALL(graph->get_workspace_size(ws));
    if (ws > 0) ATTNGATE_CUDA_CALL(cudaMalloc(&g.workspace, size_t(ws)));
    g.workspace_bytes = ws;
    g.graph = std::move(graph);
  }

  std::map<int, cudnnHandle_t> handles_;
  std::map<std::vector<int64_t>, CachedGraph> graphs_;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: graphs and handles must not be torn down after CUDA
  return *c;
}

cudaError_t decline(const std::string& why) {
  t_last_error = why;
  attngate::set_unsupported_reason("cudnn: " + why);
  return cudaErrorNotSupported;
}

cudaError_t launch(const AttnParams& p, cudaStream_t stream) {
  attngate::clear_unsupported_reason();
  t_last_error.clear();
  try {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    int device = 0;
    ATTNGATE_CUDA_CALL(cudaGetDevice(&device));
    const cudnnHandle_t h = c.handle(device);
    CachedGraph& g = c.get(p, device, h);  // builds on the first call of a shape
    if (!g.unsupported.empty()) return decline(g.unsupported);
    if (const std::string why = pointer_problem(p, g.plan); !why.empty()) return decline(why);
    ATTNGATE_CUDNN_CALL(cudnnSetStream(h, stream));
    std::unordered_map<int64_t, void*> pack = {
        {kQ, const_cast<char*>(static_cast<const char*>(p.q)) + g.plan.q_offset * 2},
        {kK, const_cast<void*>(p.k)},
        {kV, const_cast<void*>(p.v)},
        {kO, static_cast<char*>(p.o) + g.plan.o_offset * 2}};
    if (p.lse != nullptr) pack.emplace(kLse, p.lse + g.plan.lse_offset);
    ATTNGATE_FE_CALL(g.graph->execute(h, pack, g.workspace));
    if (g.plan.masked_rows > 0) ATTNGATE_CUDA_CALL(fill_masked_rows(p, g.plan.masked_rows, stream));
    return cudaSuccess;
  } catch (const Failure& f) {
    t_last_error = f.what;
    std::fprintf(stderr, "attngate: cudnn kernel: %s\n", f.what.c_str());
    return f.code;
  } catch (const std::exception& e) {
    t_last_error = std::string("exception: ") + e.what();
    std::fprintf(stderr, "attngate: cudnn kernel: %s\n", t_last_error.c_str());
    return cudaErrorUnknown;
  }
}

ATTNGATE_REGISTER_KERNEL("cudnn",
                         "cuDNN fused SDPA forward via the cudnn-frontend graph API; " + version_string() +
                             "; graphs built on a shape's first launch and cached",
                         {DType::bf16, DType::fp16}, {64, 128, 256}, 80, launch);

}  // namespace

extern "C" const char* attngate_cudnn_last_error(void) { return t_last_error.c_str(); }
extern "C" const char* attngate_cudnn_version(void) { return version_string().c_str(); }
extern "C" long attngate_cudnn_runtime_version(void) { return long(cudnnGetVersion()); }
extern "C" long attngate_cudnn_cached_graphs(void) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.size();
}
