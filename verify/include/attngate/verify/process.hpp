// Child processes, in one place: the judge's workers (remote.cpp), the gate's tools (the gate's
// run_process) and the adversarial driver's children start and end through these calls. CPU
// only, no shell (arguments need no quoting). Every failed call throws std::runtime_error
// "verify/src/process.cpp:<line>: <call>: <why>".
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attngate::verify::process {

// A descriptor of ours, closed when it goes out of scope.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    reset(std::exchange(o.fd_, -1));
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

// `file` opened for a child's output (created 0644; appended to, or emptied), close-on-exec so
// that only the child it is given to holds it.
Fd open_output(const std::filesystem::path& file, bool append);

// Where one of the child's standard streams goes.
struct Stream {
  enum class Kind { inherit, null, fd };
  Kind kind = Kind::inherit;
  int fd = -1;  // Kind::fd: a descriptor of ours, duplicated onto the child's stream
  static Stream inherit() { return {}; }
  static Stream null() { return {Kind::null, -1}; }
  static Stream to(int fd) { return {Kind::fd, fd}; }
};

struct SpawnOptions {
  Stream in, out, err;
  std::vector<std::pair<int, int>> fds;                  // {ours, the child's}: more descriptors (a worker's pipes)
  std::filesystem::path cwd;                             // empty: ours
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) ours
  bool search_path = false;                              // argv[0] without a '/' is looked up in PATH
  bool own_group = false;  // the child leads a new process group, which wait()'s timeout kills whole
};

// The program could not be started: not found, not executable, no such cwd. `error` is the errno.
struct CannotStart : std::runtime_error {
  CannotStart(const std::string& what, int error) : std::runtime_error(what), error(error) {}
  int error;
};

// Starts argv and returns its pid (reap it with wait()). Throws CannotStart, or std::runtime_error
// when a call setting it up failed.
pid_t spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

struct Exit {
  int code = -1;           // the exit status; 128+N when killed by signal N (the shell's convention)
  int signal = 0;          // N when killed by signal N
  bool timed_out = false;  // wait() killed it: it outlived its timeout
};

// Waits for `pid` to end. After timeout_s seconds, SIGKILLs its process group (where it leads one:
// SpawnOptions::own_group) and it, and waits for it to die.
Exit wait(pid_t pid, std::optional<double> timeout_s = {});

// spawn() then wait(). A program that cannot be started exits 127 and "cannot run <argv[0]>: <why>"
// goes where its stderr would have gone, as a shell does it.
Exit run(const std::vector<std::string>& argv, const SpawnOptions& options = {},
         std::optional<double> timeout_s = {});

struct Captured {
  Exit exit;
  std::string out, err;
};

// run() with the child's stdout and stderr read back (options.out and options.err are replaced).
Captured capture(const std::vector<std::string>& argv, SpawnOptions options = {});

}  // namespace attngate::verify::process
