// Kernels that run in another process (kernels/worker): the judge's side. A worker is started per
// `--worker=PATH`; its kernels are registered here under their own names, and each launch is
// forwarded with the judge's buffers exported through CUDA IPC, so the kernel's code never shares
// a process with the reference, the pass rule or the statistics (agent_hooks/SECURITY.md).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "attngate/params.hpp"
#include "attngate/registry.hpp"
#include "attngate/worker/protocol.hpp"

namespace attngate::verify::remote {

// Takes every `--worker=PATH` argument out of argv, starts each worker, and registers its kernels
// in this process's registry; a launch of one of them runs in the worker. Throws naming the worker
// when one cannot be started, speaks another protocol version, or lists a kernel already registered.
void load_workers(int& argc, char** argv);
void start_worker(const std::string& path);

struct TimedResult {
  double event_ms = 0;  // the worker's CUDA events around the call (the worker's word, not proof)
  bool held_timeout = false;
  bool has_trace = false;
  worker::WireTrace trace;  // CUPTI in the worker, when traced
  std::string stream_state; // what the call left on the worker's stream or device (undone), "" if nothing
};

class RemoteKernel;
// What the last launch through a worker left on the worker's stream or device (the worker undid
// it), "" if nothing; reading it clears it.
std::string take_stream_state();

// The remote kernel registered as k, or nullptr when k runs in this process.
RemoteKernel* find(const KernelInfo& k);
// One call through the worker's timed path on the judge's buffers in `p` (the judge's stream is
// synchronized first). Throws on a launch error, a worker error or a dead worker.
TimedResult timed_call(RemoteKernel& k, const AttnParams& p, cudaStream_t judge_stream, bool traced,
                       uint64_t call_id);
// The worker's process id and the hash of its kernel's source folder embedded when it was built.
int64_t worker_pid(const RemoteKernel& k);
const std::string& kernel_tree_sha256(const RemoteKernel& k);
const std::string& kernel_tree_dir(const RemoteKernel& k);  // relative to the repository
// The __global__ functions the worker's kernel library defines, read from `<worker>.kernels`, which
// the build writes from the library's objects (kernels/worker/cmake/inventory.cmake). Throws when
// the file is missing: without it no call could be told from a foreign one.
std::vector<std::string> inventory(const RemoteKernel& k);

// Device allocations that may be passed to a worker: DeviceBuffer registers every allocation it
// makes; on release, the workers that mapped it unmap it first.
void track_allocation(void* base, size_t bytes);
void untrack_allocation(void* base) noexcept;

}  // namespace attngate::verify::remote
