// The messages between the judge (the process that owns inputs, outputs, reference and verdict) and
// a worker (the process that holds one kernel library and nothing that judges it). One typed
// definition for both sides; kernels/worker/README.md describes the exchange.
#pragma once

#include <nlohmann/json.hpp>

#include "attngate/params.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace attngate::worker {

inline constexpr int kProtocolVersion = 2;
// The worker reads requests from this descriptor and writes replies to the next one (one JSON
// document per line), so a kernel that prints to stdout cannot corrupt the exchange by accident.
inline constexpr int kRequestFd = 3;
inline constexpr int kReplyFd = 4;

// CUDA IPC handles (cudaIpcMemHandle_t, cudaIpcEventHandle_t) travel as lowercase hex.
template <typename Handle>
std::string to_hex(const Handle& h) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&h);
  for (size_t i = 0; i < sizeof h; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}
template <typename Handle>
Handle from_hex(const std::string& text) {
  Handle h{};
  if (text.size() != 2 * sizeof h) throw std::runtime_error("bad IPC handle length " + std::to_string(text.size()));
  auto* bytes = reinterpret_cast<unsigned char*>(&h);
  for (size_t i = 0; i < sizeof h; ++i) bytes[i] = static_cast<unsigned char>(std::stoi(text.substr(2 * i, 2), nullptr, 16));
  return h;
}

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

// The strides of AttnParams in WireParams::strides order. (Through an alias: nvcc's front end
// rewrites the plain declarator into one that g++'s -Wparentheses flags.)
using StrideMember = int64_t AttnParams::*;
inline constexpr StrideMember kStrides[14] = {
    &AttnParams::q_batch_stride, &AttnParams::q_row_stride,   &AttnParams::q_head_stride,
    &AttnParams::k_batch_stride, &AttnParams::k_row_stride,   &AttnParams::k_head_stride,
    &AttnParams::v_batch_stride, &AttnParams::v_row_stride,   &AttnParams::v_head_stride,
    &AttnParams::o_batch_stride, &AttnParams::o_row_stride,   &AttnParams::o_head_stride,
    &AttnParams::lse_batch_stride, &AttnParams::lse_head_stride};

// Calls copy(a.x, w.x) for every size and flag the two structs share (not the dtype's type).
template <typename A, typename W, typename Copy>
void visit_shape(A& a, W& w, Copy copy) {
  copy(a.batch, w.batch);
  copy(a.seqlen_q, w.seqlen_q);
  copy(a.seqlen_k, w.seqlen_k);
  copy(a.heads_q, w.heads_q);
  copy(a.heads_kv, w.heads_kv);
  copy(a.head_dim, w.head_dim);
  copy(a.softmax_scale, w.softmax_scale);
  copy(a.causal, w.causal);
}

// The sizes, strides and flags of `p` on the wire; the pointers are left for the caller to export.
inline WireParams wire_shape(const AttnParams& p) {
  WireParams w;
  for (auto stride : kStrides) w.strides.push_back(p.*stride);
  visit_shape(p, w, [](const auto& from, auto& to) { to = from; });
  w.dtype = int32_t(p.dtype);
  return w;
}

// The AttnParams of `w` with null pointers, for the caller to map. Throws on a malformed message.
inline AttnParams params_shape(const WireParams& w) {
  if (w.strides.size() != 14) throw std::runtime_error("params: 14 strides expected");
  AttnParams p{};
  for (size_t i = 0; i < 14; ++i) p.*kStrides[i] = w.strides[i];
  visit_shape(p, w, [](auto& to, const auto& from) { to = from; });
  p.dtype = DType(w.dtype);
  return p;
}

// op: "hello" (describe the kernels), "launch" (one call, then a device-wide synchronize),
// "timed" (the judge's clock: the worker's stream waits for the judge's IPC event `go_event`,
// calls, records `done_event`, and answers twice: once enqueued, once finished; CUPTI-traced when
// `traced`), "handoff" (the same with no call: the round trip alone, for the judge to calibrate its
// clock), "release" (close the IPC handles named in `release`), "quit".
struct Request {
  std::string op;
  std::string kernel;
  WireParams params;
  bool traced = false;
  uint64_t call_id = 0;
  std::vector<std::string> release;
  std::string go_event, done_event;  // hex of cudaIpcEventHandle_t, made by the judge
  // launch: bracket the call in the NVTX range `profile` of domain `attngate`, the one range
  // `attngate profile` tells Nsight Compute to include.
  bool profile = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Request, op, kernel, params, traced, call_id, release, go_event,
                                                done_event, profile)

struct KernelDesc {
  std::string name, description;
  std::vector<int32_t> dtypes, head_dims;
  int32_t min_sm = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KernelDesc, name, description, dtypes, head_dims, min_sm)

// CUPTI's view of one traced call, as the worker attributed it (mirrors worker::CallTrace).
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
  // timed: the first reply says the call is enqueued behind the judge's go event (`enqueued`), the
  // second carries the worker's own figures, which are diagnostics only: the judge's clock decides.
  bool enqueued = false;
  double event_ms = 0;
  bool has_trace = false;
  WireTrace trace;
  // What the call left on the worker's stream or device that could help the next call (a
  // persisting-L2 window or set-aside), in words; the worker undoes it. "" when nothing.
  std::string stream_state;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Reply, ok, error, cuda_status, unsupported_reason, protocol, pid,
                                                worker, kernel_tree_sha256, kernel_tree_dir, kernels, enqueued, event_ms,
                                                has_trace, trace, stream_state)

}  // namespace attngate::worker
