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
// Whether workers are started sealed (kernels/worker/README.md): ATTNGATE_SANDBOX is not "off".
// What the machine offers of the seal is sandbox::probe_sandbox()'s; the gate's policy decides what
// a missing mechanism means (SANDBOX_UNAVAILABLE).
bool sandbox_enabled();
// What the judge saw of each started worker's seal in /proc/<pid>/status (NoNewPrivs 1, Seccomp 2,
// CapEff 0): "" for a worker that showed all three, else what it lacked, one entry per worker
// start ("<worker path>: <what>"). The launcher skips a mechanism the machine lacks (--policy
// warn); this is what was actually in force.
std::vector<std::string> seal_problems();

// Takes every `--worker=PATH` argument out of argv without starting anything (the caller starts
// them one by one, e.g. to measure the baseline's worker before any other exists).
std::vector<std::string> take_worker_args(int& argc, char** argv);

struct TimedResult {
  double event_ms = 0;  // the worker's CUDA events around the call (the worker's word, not proof)
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
// The judge's clock around a worker's call (bench/README.md): two interprocess events of the
// judge's, as hex of cudaIpcEventHandle_t. The worker's stream waits for `go`, which the judge
// records after its own start event, and records `done`, which the judge's stream waits for before
// its stop event. One pair per kernel, so one worker cannot record another's events.
struct JudgeEvents {
  std::string go, done;
};
// A timed call in two halves: begin_timed sends the request and returns once the worker has
// enqueued the call behind `events.go` (throws when it could not); finish_timed reads the worker's
// own figures once the call is done (throws on a launch error, a worker error or a dead worker).
void begin_timed(RemoteKernel& k, const AttnParams& p, const JudgeEvents& events, bool traced, uint64_t call_id);
// The round trip alone: the worker's stream waits for `go` and records `done`, with no call between.
void begin_handoff(RemoteKernel& k, const JudgeEvents& events);
TimedResult finish_timed(RemoteKernel& k);
// How long the judge waits for a worker (ATTNGATE_WORKER_TIMEOUT_S, default 60 s), and the end of
// a worker that overran it: killed, and started again for the next call.
double worker_timeout_s();
void kill_worker(RemoteKernel& k) noexcept;
// One plain call of `k`, bracketed in the worker by the NVTX range `profile` of domain `attngate`
// (what `attngate profile` has Nsight Compute include); otherwise as the registry's launch.
cudaError_t profiled_launch(RemoteKernel& k, const AttnParams& p, cudaStream_t st);
// The worker's process id and the hash of its kernel's source folder embedded when it was built.
int64_t worker_pid(const RemoteKernel& k);
const std::string& kernel_tree_sha256(const RemoteKernel& k);
const std::string& kernel_tree_dir(const RemoteKernel& k);  // relative to the repository
// The __global__ functions the worker's kernel library defines, read from `<worker>.kernels`, which
// the build writes from the library's objects (kernels/worker/cmake/inventory.cmake). Throws when
// the file is missing: without it no call could be told from a foreign one.
std::vector<std::string> inventory(const RemoteKernel& k);
// What the worker's kernel library defines that it must not (kernels/worker/cmake/symbols.cmake):
// "<symbol> (<object>): <why>" each; empty when clean. Throws when the build wrote no list.
std::vector<std::string> forbidden_symbols(const RemoteKernel& k);

// Device allocations that may be passed to a worker: DeviceBuffer registers every allocation it
// makes; on release, the workers that mapped it unmap it first.
void track_allocation(void* base, size_t bytes);
void untrack_allocation(void* base) noexcept;

}  // namespace attngate::verify::remote
