// The sandbox a worker runs in (issue 19), and the judge's side of it. attngate_sandbox seals
// itself with the kernel's own mechanisms (no_new_privs, no capabilities, Landlock, seccomp, death
// with its parent) and then execs the worker, so the seal is in force before any worker code runs,
// static initializers included. kernels/worker/README.md says what a sealed worker cannot do.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace attngate::sandbox {

// attngate_sandbox's exit status when a mechanism is unavailable under Policy::fail.
inline constexpr int kUnavailableExit = 97;

// fail: an unavailable mechanism stops the launch (exit 97); warn: it is reported and skipped.
enum class Policy { fail, warn };

struct Options {
  std::string scratch;                  // the only tree the worker may write; made 0700 if missing
  std::vector<std::string> read_paths;  // extra read-only trees
  std::vector<std::string> exec_paths;  // trees the worker may execute from (its own folder)
  Policy policy = Policy::fail;
  int keep_fds = 5;  // descriptors below this stay open (0-2 and the exchange's 3, 4); the rest are closed
};

// A call that failed: "file:line: call: strerror".
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A mechanism this kernel or this build does not offer. what() is "SANDBOX_UNAVAILABLE: <mechanism>: <why>".
struct Unavailable : Error {
  Unavailable(std::string mechanism, std::string why);
  std::string mechanism, why;
};

struct Mechanism {
  std::string name;  // landlock, seccomp, no_new_privs, capabilities, pdeathsig
  bool available = false;
  std::string detail;  // the ABI or version when available, why not otherwise
};

struct SandboxReport {
  std::vector<Mechanism> mechanisms;
  int landlock_abi = 0;  // 0: none
  // One line per mechanism: "<name>: available: <detail>" or "<name>: unavailable: <detail>".
  std::string text() const;
};

// What the running kernel and this build offer. Honours ATTNGATE_SANDBOX_PRETEND_MISSING (test-only).
SandboxReport probe_sandbox();

// Seals the calling process, irreversibly: closes descriptors >= keep_fds, dies with its parent,
// no_new_privs, drops every capability, Landlock, then the seccomp filter; sets
// CUDA_CACHE_PATH=<scratch>/nv-cache. Call it single-threaded, right before exec. Throws
// Unavailable under Policy::fail, Error on any failed call; under Policy::warn returns the
// mechanisms it skipped.
std::vector<Unavailable> seal(const Options& options);

// The judge: not dumpable (a same-uid worker without CAP_SYS_PTRACE cannot ptrace it or open its
// /proc/<pid>/fd/*, mem, environ) and a child subreaper (orphaned descendants reparent to it, so
// kill_descendants() finds them). Throws Error.
void harden_judge_process();

// Every live or zombie descendant of the calling process (/proc/<pid>/task/*/children).
std::vector<pid_t> descendants();

// SIGKILLs every descendant and reaps those that become its children, until none is left or
// `wait` has passed. Returns how many processes it signalled. For the judge at exit.
int kill_descendants(std::chrono::milliseconds wait = std::chrono::seconds(2));

}  // namespace attngate::sandbox
