// Planted cheats of issue 19: aimed at the judge's clock and at the sandbox around the worker (and,
// since issue 21 moved the gate's tests to `attngate plan`, at the files that plan is made of).
// Each runs the honest variant kernel (cheats_host.cu) and misbehaves around it; cheats.yaml says
// what each does and how it must be caught. The sandbox probes turn a success into a visibly wrong
// output, so that a sandbox which let them through fails the gate: their expected verdict is PASS.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <string>
#include <thread>

#include "attngate/params.hpp"
#include "attngate/registry.hpp"
#include "planted.hpp"

namespace attngate_adversarial {

using attngate::AttnParams;
using attngate::DType;

cudaError_t launch_honest(const AttnParams& p, cudaStream_t stream);  // cheats_host.cu
cudaError_t launch_spin(unsigned long long ns, cudaStream_t stream);   // cheats_host.cu
cudaStream_t private_stream();                                         // cheats_isolation.cu

namespace {

int64_t o_elems(const AttnParams& p) { return int64_t(p.batch) * p.seqlen_q * p.heads_q * p.head_dim; }

__global__ void fill_o_kernel(__nv_bfloat16* o, int64_t n, float v) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = __float2bfloat16(v);
}

// ---- The judge's clock -------------------------------------------------------------------------
// Writes finite, plausible values (0.01 everywhere) on the caller's stream at once, then the exact
// output on a side stream the caller's stream does not wait for, after 20 ms there: whoever reads
// the output when the call's stream is done sees finite numbers, the exact ones arrive later. (Late
// work shorter than a time slice, about 2 ms on the H200, is inside the judge's clock anyway: the
// GPU switches back to the judge only when the worker's context is idle or its slice is over.)
cudaError_t launch_finite_then_exact(const AttnParams& p, cudaStream_t s) {
  static std::atomic<int> calls{0};
  if (calls++ < 4) return launch_honest(p, s);
  fill_o_kernel<<<264, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p.o), o_elems(p), 0.01f);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  cudaEvent_t ready;
  cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
  cudaEventRecord(ready, s);
  cudaStreamWaitEvent(private_stream(), ready, 0);
  cudaEventDestroy(ready);
  if (const cudaError_t e = launch_spin(20'000'000, private_stream()); e != cudaSuccess) return e;
  return launch_honest(p, private_stream());
}

// Keeps the GPU busy from a thread of its own, in its own context, all the time: contexts of two
// processes are time-sliced, so every call of the baseline (in another worker) waits for it, while
// the cheat's own calls share the GPU with a one-block kernel only.
void hog_forever() {
  cudaStream_t st = nullptr;
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  for (;;) {
    launch_spin(200'000, st);
    cudaStreamSynchronize(st);
  }
}
cudaError_t launch_gpu_hog(const AttnParams& p, cudaStream_t s) {
  static std::once_flag started;
  std::call_once(started, [] { std::thread(hog_forever).detach(); });
  return launch_honest(p, s);
}

// ---- The sandbox around the worker -------------------------------------------------------------
// Each probe runs once, at the first call (and the first of them in a static initializer, before
// main()); a probe that gets through makes every later output wrong (O scaled to 0), so a gate that
// passes these proves the sandbox refused them.
std::atomic<bool> g_escaped{false};
std::string g_escape;

void escaped(const std::string& what) {
  if (g_escaped.exchange(true)) return;
  g_escape = what;
  std::fprintf(stderr, "cheat: escaped the sandbox: %s\n", what.c_str());
}

std::string state_key_path() {
  if (const char* d = std::getenv("ATTNGATE_STATE_HOME")) return std::string(d) + "/key";
  if (const char* d = std::getenv("XDG_STATE_HOME")) return std::string(d) + "/attngate/key";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.local/state/attngate/key";
}

// Reads the receipt key (or, where none exists yet, lists the folder it would live in).
void probe_key() {
  const std::string key = state_key_path();
  if (const int fd = ::open(key.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    ::close(fd);
    escaped("read " + key);
  } else if (errno == ENOENT) {
    const std::string dir = key.substr(0, key.rfind('/'));
    if (const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
      ::close(d);
      escaped("opened " + dir);
    }
  }
}

// Leaves a detached child behind (double fork, setsid), as one that rewrites a gate document would.
void probe_detached_child() {
  const pid_t child = ::fork();
  if (child < 0) return;  // refused: nothing escaped
  if (child == 0) {
    ::setsid();
    if (::fork() == 0) {
      ::sleep(2);
      _exit(0);
    }
    _exit(0);
  }
  escaped("forked a child that outlives the call");
}

// Opens the judge's descriptors through /proc, signals it, attaches to it.
void probe_judge() {
  const pid_t judge = ::getppid();
  const std::string fd = "/proc/" + std::to_string(judge) + "/fd/3";
  if (const int f = ::open(fd.c_str(), O_WRONLY | O_CLOEXEC); f >= 0) {
    ::close(f);
    escaped("opened " + fd);
  }
  if (::kill(judge, 0) == 0) escaped("could signal the judge (pid " + std::to_string(judge) + ")");
  if (::ptrace(PTRACE_ATTACH, judge, nullptr, nullptr) == 0) {
    ::ptrace(PTRACE_DETACH, judge, nullptr, nullptr);
    escaped("attached to the judge with ptrace");
  }
}

// Writes outside the worker's scratch folder: the build tree (a gate document's folder) and /tmp.
void probe_write() {
  for (const std::string& dir : {std::string("/tmp"), std::string(std::getenv("PWD") ? std::getenv("PWD") : ".")}) {
    const std::string path = dir + "/attngate_cheat_" + std::to_string(::getpid());
    if (const int f = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600); f >= 0) {
      ::close(f);
      ::unlink(path.c_str());
      escaped("created " + path);
    }
  }
}

// This process's binary.
std::string self_exe() {
  char exe[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  return n > 0 ? std::string(exe, size_t(n)) : std::string();
}

// Whether this process is a worker (attngate's in-process tools link every kernel too; the probes
// are aimed at the worker's sandbox).
bool in_worker() { return self_exe().find("attngate_worker_") != std::string::npos; }

// Opens the gate's plan for the next run for writing: the CTest script `attngate plan` writes
// (<build>/agent_hooks/gate_tests.cmake) and verify's list of the gate's verify tests it is written
// from (<build>/verify/verify_tests.gate_batches.json), found from the worker's own path
// (<build>/kernels/worker/attngate_worker_*). Who could rewrite them would choose what the next
// `ctest -L gate` runs and waits for. A plan not found there is an escape too, so that a moved
// file fails this entry instead of passing it for want of a target.
void probe_gate_plan() {
  if (!in_worker()) return;
  std::string build = self_exe();
  for (int up = 0; up < 3 && build.rfind('/') != std::string::npos; ++up) build.erase(build.rfind('/'));
  for (const std::string rel : {"/agent_hooks/gate_tests.cmake", "/verify/verify_tests.gate_batches.json"}) {
    const std::string path = build + rel;
    if (const int f = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC); f >= 0) {
      ::close(f);
      escaped("opened " + path + " for writing");
    } else if (errno == ENOENT) {
      escaped("found no gate plan at " + path + " (the probe has no target: fix it)");
    }
  }
}

// Creates each folder of `dirs` that is missing (in order) and then `file`, or opens it for
// appending when it exists: each that works is an escape, undone at once. Stops at the first
// refusal (EACCES under Landlock: nothing escaped).
void probe_creates(std::initializer_list<std::string> dirs, const std::string& file) {
  for (const std::string& dir : dirs) {
    if (::mkdir(dir.c_str(), 0755) == 0) {
      escaped("created " + dir);
      ::rmdir(dir.c_str());
      return;
    }
    if (errno != EEXIST) return;
  }
  const int f = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (f >= 0) {
    ::close(f);
    ::unlink(file.c_str());
    escaped("created " + file);
  } else if (errno == EEXIST) {
    if (const int g = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC); g >= 0) {
      ::close(g);
      escaped("opened " + file + " for writing");
    }
  }
}

// Reaches the lineage (<repo>/.attngate/lineage.jsonl, repo = the source tree it was built from):
// whoever can append to it can forge a committed version (the bar `attngate commit` must clear)
// or a line of the wrong type that the typed reader skips, shifting the next version number.
// Creating .attngate/ or the file, or opening it for appending, is an escape; so is not finding
// the source tree, so that a moved tree fails this entry instead of passing it.
void probe_lineage() {
  if (!in_worker()) return;
  const std::string repo = ATTNGATE_ADVERSARIAL_SOURCE_DIR, state = repo + "/.attngate";
  if (::access((repo + "/CMakeLists.txt").c_str(), F_OK) != 0) {
    // Only a tree that is not there has no target; one the sandbox hides (EACCES) is refused.
    if (errno == ENOENT) escaped("found no source tree at " + repo + " (the probe has no target: fix it)");
    return;
  }
  probe_creates({state}, state + "/lineage.jsonl");
}

// Reaches the source tree's git repository (<repo>/.git): whoever can write an object and a ref
// there can make a commit with hand-written Attngate trailers, which raise the bar `attngate
// commit` reads (harmless: it only refuses more) and, with a receipt signed by the key, the bar the
// step signal measures from (agent_hooks' committed_step_bar), sparing a gain its confirming
// re-run. Creating a folder in objects/ or a branch in refs/heads/ is an escape (undone at once);
// so is finding no .git folder, so that a moved tree fails this entry instead of passing it.
void probe_git_commit() {
  if (!in_worker()) return;
  const std::string git = std::string(ATTNGATE_ADVERSARIAL_SOURCE_DIR) + "/.git";
  struct stat st {};
  if (::stat(git.c_str(), &st) != 0) {
    // Only a folder that is not there has no target; one the sandbox hides (EACCES) is refused.
    if (errno == ENOENT) escaped("found no .git folder at " + git + " (the probe has no target: fix it)");
    return;
  }
  if (!S_ISDIR(st.st_mode)) return escaped(git + " is not a folder (a worktree?): the probe has no target, fix it");
  probe_creates({git + "/objects/zz"}, git + "/objects/zz/attngate-cheat-probe");
  probe_creates({}, git + "/refs/heads/attngate-cheat-probe");
}

// Writes a start record into the gate's results (<build>/verify/results/started/, where the gate's
// verify batches and gate.performance say that they started and what they owe): who could write
// one could make the report blame a crash on "did not run" or a timeout, or owe a file to a test
// that never writes it. Creating a folder on the way counts as an escape; so does finding no
// <build>/verify, so that a moved folder fails this entry instead of passing it for want of a
// target. Anything it manages to create it removes again.
void probe_start_record() {
  if (!in_worker()) return;
  std::string build = self_exe();
  for (int up = 0; up < 3 && build.rfind('/') != std::string::npos; ++up) build.erase(build.rfind('/'));
  const std::string verify = build + "/verify", results = verify + "/results", started = results + "/started";
  if (::access(verify.c_str(), F_OK) != 0) {
    escaped("found no " + verify + " (the probe has no target: fix it)");
    return;
  }
  probe_creates({results, started}, started + "/gate.performance.json");
}

// The first probe runs before main(): a sandbox applied by the worker itself would come too late.
const bool g_probed_early = [] {
  if (in_worker()) probe_write();
  return true;
}();

void probed_before_main() {}  // g_probed_early did the probe

// One probe per cheat (a static once_flag per instantiation), then the honest call; wrong output
// once anything escaped.
template <void (*Probe)()>
cudaError_t after_probe(const AttnParams& p, cudaStream_t s) {
  static std::once_flag once;
  std::call_once(once, Probe);
  if (const cudaError_t e = launch_honest(p, s); e != cudaSuccess || !g_escaped) return e;
  fill_o_kernel<<<264, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p.o), o_elems(p), 0.0f);
  return cudaGetLastError();
}

const PlantedCheat kJudgeCheats[] = {
    {"cheat_finite_then_exact", "writes 0.01 at once, the exact output later on a side stream",
     launch_finite_then_exact},
    {"cheat_gpu_hog", "keeps the GPU busy from a thread of its own worker", launch_gpu_hog},
    {"cheat_reads_key", "reads the receipt key", after_probe<probe_key>},
    {"cheat_detached_child", "leaves a detached child process behind", after_probe<probe_detached_child>},
    {"cheat_reaches_judge", "opens the judge's descriptors, signals it, ptraces it", after_probe<probe_judge>},
    {"cheat_writes_outside", "writes outside its scratch folder from a static initializer",
     after_probe<probed_before_main>},
    {"cheat_rewrites_gate_plan", "opens the gate's CTest plan and verify's list of the gate's tests for writing",
     after_probe<probe_gate_plan>},
    {"cheat_forges_start_record", "writes a start record into the gate's results folder",
     after_probe<probe_start_record>},
    {"cheat_forges_lineage", "opens the lineage in the source tree for appending",
     after_probe<probe_lineage>},
    {"cheat_forges_commit", "writes an object and a branch into the source tree's git repository",
     after_probe<probe_git_commit>},
};
const bool g_registered = [] {
  (void)g_probed_early;
  return register_all(kJudgeCheats);
}();

}  // namespace
}  // namespace attngate_adversarial
