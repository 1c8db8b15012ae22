// attngate_worker_<kernel>: the process a kernel under test runs in. It holds the kernel library,
// the launch bookkeeping and CUPTI, and nothing that judges: no reference, no pass rule, no
// statistics, no baseline. The judge (verify/ and bench/ in their judge builds) owns every buffer
// and reaches this process through kernels/worker's protocol; nothing this process reports is
// trusted on its own (agent_hooks/SECURITY.md).
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "attngate/worker/activity.hpp"
#include "attngate/worker/cupti_tracer.hpp"
#include "attngate/kernel_status.hpp"
#include "attngate/registry.hpp"
#include "attngate/worker/nvtx_range.hpp"
#include "attngate/worker/protocol.hpp"
#include "attngate_worker_tree.h"  // ATTNGATE_KERNEL_TREE_SHA256, generated at build time

namespace {

using namespace attngate;
using worker::Reply;
using worker::Request;

#define WORKER_CUDA(expr)                                                                              \
  do {                                                                                                 \
    const cudaError_t e_ = (expr);                                                                     \
    if (e_ != cudaSuccess)                                                                             \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " #expr     \
                               " failed: " + cudaGetErrorString(e_) + " (" + cudaGetErrorName(e_) + ")"); \
  } while (0)

using worker::NvtxRange;

class Worker {
 public:
  Worker() {
    // The device's persisting-L2 set-aside as found (not always 0): what a call may not change.
    WORKER_CUDA(cudaDeviceGetLimit(&clean_limit_, cudaLimitPersistingL2CacheSize));
    WORKER_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    WORKER_CUDA(cudaEventCreate(&start_));
    WORKER_CUDA(cudaEventCreate(&stop_));
  }

  // `send` writes an early reply (the timed call's "enqueued"); the returned one is the last.
  template <typename Send>
  Reply handle(const Request& r, Send&& send) {
    if (r.op == "launch") return launch(r);
    if (r.op == "timed") return timed(r, send);
    if (r.op == "handoff") return handoff(r, send);
    if (r.op == "release") return release(r);
    Reply out;
    out.error = "unknown op '" + r.op + "'";
    return out;
  }

 private:
  void* map(const worker::BufferRef& b) {
    if (b.handle.empty()) return nullptr;
    auto it = opened_.find(b.handle);
    if (it == opened_.end()) {
      const auto h = worker::from_hex<cudaIpcMemHandle_t>(b.handle);
      void* p = nullptr;
      WORKER_CUDA(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
      it = opened_.emplace(b.handle, p).first;
    }
    return static_cast<char*>(it->second) + b.offset;
  }

  AttnParams params(const worker::WireParams& w) {
    AttnParams p = worker::params_shape(w);
    p.q = map(w.q);
    p.k = map(w.k);
    p.v = map(w.v);
    p.o = map(w.o);
    p.lse = static_cast<float*>(map(w.lse));
    return p;
  }

  // The launch status in the reply; a declined problem carries the kernel's reason.
  static void note_status(Reply& out, cudaError_t e) {
    out.cuda_status = int32_t(e);
    if (e == cudaErrorNotSupported) out.unsupported_reason = take_unsupported_reason().value_or("");
    if (e != cudaSuccess && e != cudaErrorNotSupported)
      out.error = std::string("launch failed: ") + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
  }

  Reply launch(const Request& r) {
    Reply out;
    const KernelInfo& k = KernelRegistry::instance().get(r.kernel);
    const AttnParams p = params(r.params);
    clear_unsupported_reason();
    cudaError_t e;
    {
      const NvtxRange range(r.profile ? "profile" : "launch " + r.kernel);
      e = k.launch(p, stream_);
      if (r.profile && e == cudaSuccess) WORKER_CUDA(cudaStreamSynchronize(stream_));
    }
    note_status(out, e);
    if (e == cudaSuccess) WORKER_CUDA(cudaDeviceSynchronize());
    out.stream_state = undo_stream_state();
    out.ok = (e == cudaSuccess || e == cudaErrorNotSupported);
    return out;
  }

  // The worker stream's CUPTI id, so that kernels on other streams are told apart.
  uint32_t cupti_stream_id() {
    if (!stream_id_) {
      uint32_t id = 0;
      const CUptiResult r = cuptiGetStreamIdEx(nullptr, stream_, 0, &id);
      if (r != CUPTI_SUCCESS) throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +
                                                       ": cuptiGetStreamIdEx failed (" + std::to_string(int(r)) + ")");
      stream_id_ = id;
    }
    return *stream_id_;
  }

  cudaEvent_t event(const std::string& handle) {
    auto it = events_.find(handle);
    if (it == events_.end()) {
      cudaEvent_t e = nullptr;
      WORKER_CUDA(cudaIpcOpenEventHandle(&e, worker::from_hex<cudaIpcEventHandle_t>(handle)));
      it = events_.emplace(handle, e).first;
    }
    return it->second;
  }

  // The judge's clock (bench/README.md): the stream waits for the judge's go event, which fires only
  // once the judge has flushed L2, poisoned the outputs and started its own clock; done_event stops
  // it. The worker's events and CUPTI records are its own word, reported as diagnostics.
  template <typename Send>
  Reply timed(const Request& r, Send& send) {
    Reply out;
    const KernelInfo& k = KernelRegistry::instance().get(r.kernel);
    const AttnParams p = params(r.params);
    const cudaEvent_t go = event(r.go_event), done = event(r.done_event);
    worker::CuptiTracer& tracer = worker::CuptiTracer::instance();
    if (r.traced) tracer.enable();
    WORKER_CUDA(cudaStreamWaitEvent(stream_, go, 0));
    WORKER_CUDA(cudaEventRecord(start_, stream_));
    if (r.traced) tracer.push(r.call_id);
    clear_unsupported_reason();
    cudaError_t e;
    {
      const NvtxRange range("timed " + r.kernel + " #" + std::to_string(r.call_id));
      e = k.launch(p, stream_);
    }
    if (r.traced) tracer.pop();
    WORKER_CUDA(cudaEventRecord(stop_, stream_));
    WORKER_CUDA(cudaEventRecord(done, stream_));  // also after a failed launch: the judge never waits forever
    Reply enqueued;
    enqueued.ok = true;
    enqueued.enqueued = true;
    send(enqueued);
    WORKER_CUDA(cudaDeviceSynchronize());
    note_status(out, e);
    if (r.traced) {
      tracer.disable();
      worker::ActivityLog log = tracer.take();
      // The window holds this one call only: every record in it is the call's, whatever external
      // id the candidate's code pushed around it (one it pushed must not hide its copies or kernels).
      for (const auto& rec : log.records) log.external_of[rec.correlation_id] = r.call_id;
      const auto traces = worker::attribute_calls(log, {r.call_id}, {"", 0, cupti_stream_id()}, nullptr);
      if (!traces.empty()) {
        const worker::CallTrace& t = traces.front();
        out.has_trace = true;
        out.trace = {t.kernels, t.kernel_sum_ns, t.span_ns, t.memcpys, t.memsets, t.foreign_stream_kernels,
                     t.streams, t.kernel_names};
      }
    }
    out.stream_state = undo_stream_state();
    float ms = 0;
    WORKER_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    out.event_ms = ms;
    out.ok = (e == cudaSuccess);
    return out;
  }

  template <typename Send>
  Reply handoff(const Request& r, Send& send) {
    WORKER_CUDA(cudaStreamWaitEvent(stream_, event(r.go_event), 0));
    WORKER_CUDA(cudaEventRecord(event(r.done_event), stream_));
    Reply out;
    out.ok = out.enqueued = true;
    send(out);
    WORKER_CUDA(cudaStreamSynchronize(stream_));
    out.enqueued = false;
    return out;
  }

  // A persisting-L2 window on the stream or a set-aside on the device keeps data in L2 across the
  // judge's flush: described for the judge, then removed, with every persisting line reset.
  std::string undo_stream_state() {
    cudaStreamAttrValue attr{};
    WORKER_CUDA(cudaStreamGetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &attr));
    size_t limit = 0;
    WORKER_CUDA(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
    std::string what;
    if (attr.accessPolicyWindow.num_bytes > 0)
      what = "an access policy window of " + std::to_string(attr.accessPolicyWindow.num_bytes) + " bytes on the stream";
    if (limit != clean_limit_)
      what += (what.empty() ? "" : " and ") + std::string("a persisting-L2 set-aside of ") + std::to_string(limit) +
              " bytes (was " + std::to_string(clean_limit_) + ")";
    if (what.empty()) return what;
    cudaStreamAttrValue none{};
    WORKER_CUDA(cudaStreamSetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &none));
    WORKER_CUDA(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, clean_limit_));
    WORKER_CUDA(cudaCtxResetPersistingL2Cache());
    return what;
  }

  Reply release(const Request& r) {
    for (const auto& h : r.release) {
      auto it = opened_.find(h);
      if (it == opened_.end()) continue;
      WORKER_CUDA(cudaIpcCloseMemHandle(it->second));
      opened_.erase(it);
    }
    Reply out;
    out.ok = true;
    return out;
  }

  size_t clean_limit_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::map<std::string, void*> opened_;       // IPC handle (hex) -> mapped base
  std::map<std::string, cudaEvent_t> events_;
  std::optional<uint32_t> stream_id_;  // the judge's IPC events (hex) -> opened event
};

// Needs no GPU: the judge lists kernels on machines without one.
Reply hello() {
  Reply out;
  out.ok = true;
  out.protocol = worker::kProtocolVersion;
  out.pid = ::getpid();
  out.kernel_tree_sha256 = ATTNGATE_KERNEL_TREE_SHA256;
  out.kernel_tree_dir = ATTNGATE_KERNEL_TREE_DIR;
  for (const KernelInfo* k : KernelRegistry::instance().all()) {
    worker::KernelDesc d{k->name, k->description, {}, k->head_dims, k->min_sm};
    for (DType t : k->dtypes) d.dtypes.push_back(int32_t(t));
    out.kernels.push_back(std::move(d));
  }
  return out;
}

bool read_line(FILE* in, std::string& line) {
  line.clear();
  for (int c; (c = std::fgetc(in)) != EOF;) {
    if (c == '\n') return true;
    line.push_back(char(c));
  }
  return !line.empty();
}

}  // namespace

int main() {
  // Die with the judge: a worker left behind would hold the GPU.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 3;
  FILE* in = ::fdopen(worker::kRequestFd, "r");
  FILE* out = ::fdopen(worker::kReplyFd, "w");
  if (!in || !out) {
    std::cerr << "attngate_worker: started without the judge's descriptors " << worker::kRequestFd << " and "
              << worker::kReplyFd << "; it is run by attngate's judge binaries, not by hand\n";
    return 2;
  }
  std::unique_ptr<Worker> w;
  auto send = [out](const Reply& reply) {
    const std::string text = nlohmann::json(reply).dump() + "\n";
    return std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0;
  };
  for (std::string line; read_line(in, line);) {
    Reply reply;
    Request req;
    try {
      req = nlohmann::json::parse(line).get<Request>();
      if (req.op == "quit") break;
      if (req.op == "hello") {
        reply = hello();
      } else {
        if (!w) w = std::make_unique<Worker>();
        reply = w->handle(req, [&](const Reply& early) {
          if (!send(early)) throw std::runtime_error("the judge stopped reading");
        });
      }
    } catch (const std::exception& e) {
      reply = Reply{};
      reply.error = e.what();
    }
    if (!send(reply)) return 1;
    // The CUDA context is made while the judge sets up its own, not at the first launch it waits
    // for. Without a GPU this fails quietly here and the first launch reports why.
    if (req.op == "hello" && !w) {
      try {
        w = std::make_unique<Worker>();
      } catch (const std::exception&) {
      }
    }
  }
  return 0;
}
