// The messages between the judge (the process that owns inputs, outputs, reference and verdict) and
// a worker (the process that holds one kernel library and nothing that judges it). One typed
// definition for both sides; kernels/worker/README.md describes the exchange.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace attngate::worker {

inline constexpr int kProtocolVersion = 1;
// The worker reads requests from this descriptor and writes replies to the next one (one JSON
// document per line), so a kernel that prints to stdout cannot corrupt the exchange by accident.
inline constexpr int kRequestFd = 3;
inline constexpr int kReplyFd = 4;

// A device pointer as the judge exported it: a CUDA IPC handle of the allocation (hex of
// cudaIpcMemHandle_t) and an offset into it. An empty handle is a null pointer.
struct BufferRef {
  std::string handle;
  uint64_t offset = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BufferRef, handle, offset)

// attngate::AttnParams with its pointers as BufferRefs.
struct WireParams {
  BufferRef q, k, v, o, lse;
  std::vector<int64_t> strides;  // q(b,s,h) k(b,s,h) v(b,s,h) o(b,s,h) lse(b,h): 14 values
  int32_t batch = 0, seqlen_q = 0, seqlen_k = 0, heads_q = 0, heads_kv = 0, head_dim = 0;
  float softmax_scale = 0;
  bool causal = false;
  int32_t dtype = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WireParams, q, k, v, o, lse, strides, batch, seqlen_q, seqlen_k,
                                                heads_q, heads_kv, head_dim, softmax_scale, causal, dtype)

// op: "hello" (describe the kernels), "launch" (one call, then a device-wide synchronize),
// "timed" (one call between CUDA events behind a stream hold; CUPTI-traced when `traced`),
// "release" (close the IPC handles named in `release`), "quit".
struct Request {
  std::string op;
  std::string kernel;
  WireParams params;
  bool traced = false;
  uint64_t call_id = 0;
  std::vector<std::string> release;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Request, op, kernel, params, traced, call_id, release)

struct KernelDesc {
  std::string name, description;
  std::vector<int32_t> dtypes, head_dims;
  int32_t min_sm = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KernelDesc, name, description, dtypes, head_dims, min_sm)

// CUPTI's view of one traced call, as the worker attributed it (mirrors bench::CallTrace).
struct WireTrace {
  int kernels = 0;
  double kernel_sum_ns = 0, span_ns = 0;
  int memcpys = 0, memsets = 0, foreign_stream_kernels = 0;
  std::vector<uint32_t> streams;
  std::vector<std::string> kernel_names;  // mangled, distinct, sorted
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WireTrace, kernels, kernel_sum_ns, span_ns, memcpys, memsets,
                                                foreign_stream_kernels, streams, kernel_names)

struct Reply {
  bool ok = false;
  std::string error;               // why not ok (protocol or CUDA error text)
  int32_t cuda_status = 0;         // the launch function's cudaError_t
  std::string unsupported_reason;  // with cudaErrorNotSupported: why the kernel declined
  // hello
  int32_t protocol = 0;
  int64_t pid = 0;
  std::string worker;             // the worker binary's name
  std::string kernel_tree_sha256; // the hash of the kernel's source folder embedded at build time
  std::string kernel_tree_dir;    // that folder, relative to the repository (kernels/candidate)
  std::vector<KernelDesc> kernels;
  // timed
  double event_ms = 0;
  bool held_timeout = false;
  bool has_trace = false;
  WireTrace trace;
  // What the call left on the worker's stream or device that could help the next call (a
  // persisting-L2 window or set-aside), in words; the worker undoes it. "" when nothing.
  std::string stream_state;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Reply, ok, error, cuda_status, unsupported_reason, protocol, pid,
                                                worker, kernel_tree_sha256, kernel_tree_dir, kernels, event_ms, held_timeout,
                                                has_trace, trace, stream_state)

}  // namespace attngate::worker
