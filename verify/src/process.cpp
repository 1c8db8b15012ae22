#include "attngate/verify/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

extern char** environ;

namespace attngate::verify::process {
namespace {

// "verify/src/process.cpp" rather than the build machine's absolute path.
const char* short_file(const char* f) {
  const char* v = std::strstr(f, "verify/");
  return v ? v : f;
}

[[noreturn]] void fail(const char* file, int line, const std::string& call, int err) {
  throw std::runtime_error(std::string(short_file(file)) + ":" + std::to_string(line) + ": " + call + ": " +
                           std::strerror(err));
}

// For calls that return -1 and set errno.
int check(int rc, const char* file, int line, const std::string& call) {
  if (rc == -1) fail(file, line, call, errno);
  return rc;
}

// For the posix_spawn family, which return the error number.
void check_rc(int rc, const char* file, int line, const std::string& call) {
  if (rc != 0) fail(file, line, call, rc);
}

#define ATTNGATE_PROC_CHECK(expr) check((expr), __FILE__, __LINE__, #expr)
#define ATTNGATE_PROC_CHECK_RC(expr) check_rc((expr), __FILE__, __LINE__, #expr)

// A posix_spawn object (file actions, attributes) between its init and destroy calls.
template <typename T, int (*Init)(T*), int (*Destroy)(T*)>
struct SpawnObject {
  T value;
  explicit SpawnObject(const char* init) { check_rc(Init(&value), __FILE__, __LINE__, init); }
  ~SpawnObject() { Destroy(&value); }
  SpawnObject(const SpawnObject&) = delete;
  SpawnObject& operator=(const SpawnObject&) = delete;
};
using FileActions =
    SpawnObject<posix_spawn_file_actions_t, posix_spawn_file_actions_init, posix_spawn_file_actions_destroy>;
using Attributes = SpawnObject<posix_spawnattr_t, posix_spawnattr_init, posix_spawnattr_destroy>;

void redirect(posix_spawn_file_actions_t* fa, const Stream& s, int target) {
  // /dev/null is opened in the child, by absolute path, so the cwd change does not matter.
  if (s.kind == Stream::Kind::null)
    ATTNGATE_PROC_CHECK_RC(
        posix_spawn_file_actions_addopen(fa, target, "/dev/null", target == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0));
  else if (s.kind == Stream::Kind::fd)
    ATTNGATE_PROC_CHECK_RC(posix_spawn_file_actions_adddup2(fa, s.fd, target));
}

// Ours with `extra` added or replacing; built in the parent, the child only executes.
std::vector<std::string> merged_environment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void kill_ignoring_gone(pid_t target, const char* what) {
  if (::kill(target, SIGKILL) != 0 && errno != ESRCH) fail(__FILE__, __LINE__, what, errno);
}

Exit decode(int status, bool timed_out) {
  Exit e;
  e.timed_out = timed_out;
  if (WIFEXITED(status)) e.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    e.signal = WTERMSIG(status);
    e.code = 128 + e.signal;
  }
  return e;
}

// What a shell prints for a program it cannot start; it goes where the child's stderr would have.
std::string cannot_run(const std::vector<std::string>& argv, const CannotStart& e) {
  return "cannot run " + argv[0] + ": " + std::strerror(e.error) + "\n";
}

void write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    check(int(n), __FILE__, __LINE__, "write");
    done += size_t(n);
  }
}

// Reads both pipes until each is closed by every process holding its write end.
void drain(int out_fd, int err_fd, std::string& out, std::string& err) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open_count = 2;
  char buf[65536];
  while (open_count > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      fail(__FILE__, __LINE__, "poll", errno);
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      check(int(n), __FILE__, __LINE__, "read");
      if (n > 0) {
        sinks[i]->append(buf, size_t(n));
      } else {
        fds[i].fd = -1;  // poll skips negative descriptors; the Fd that owns it closes it
        --open_count;
      }
    }
  }
}

}  // namespace

void Fd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);  // nothing to do about a failed close of a descriptor we are done with
  fd_ = fd;
}

Fd open_output(const std::filesystem::path& file, bool append) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  return Fd(ATTNGATE_PROC_CHECK(::open(file.c_str(), flags, 0644)));
}

pid_t spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) throw std::invalid_argument("process::spawn: empty command");
  FileActions fa("posix_spawn_file_actions_init");
  // Streams first, then the extra descriptors, then the cwd: each action sees the ones before it.
  redirect(&fa.value, options.in, STDIN_FILENO);
  redirect(&fa.value, options.out, STDOUT_FILENO);
  redirect(&fa.value, options.err, STDERR_FILENO);
  for (const auto& [ours, theirs] : options.fds)
    ATTNGATE_PROC_CHECK_RC(posix_spawn_file_actions_adddup2(&fa.value, ours, theirs));
  const std::string cwd = options.cwd.string();
  if (!cwd.empty()) ATTNGATE_PROC_CHECK_RC(posix_spawn_file_actions_addchdir_np(&fa.value, cwd.c_str()));

  Attributes attr("posix_spawnattr_init");
  if (options.own_group) {
    // Set before exec, in the child: no window in which a timeout could miss a grandchild.
    ATTNGATE_PROC_CHECK_RC(posix_spawnattr_setflags(&attr.value, POSIX_SPAWN_SETPGROUP));
    ATTNGATE_PROC_CHECK_RC(posix_spawnattr_setpgroup(&attr.value, 0));
  }
  std::vector<std::string> args = argv;
  std::vector<std::string> env_strings;
  if (!options.env.empty()) env_strings = merged_environment(options.env);
  std::vector<char*> cargv = pointers(args);
  std::vector<char*> cenv = pointers(env_strings);
  char* const* envp = options.env.empty() ? environ : cenv.data();
  pid_t pid = -1;
  const auto start = options.search_path ? ::posix_spawnp : ::posix_spawn;
  const int rc = start(&pid, cargv[0], &fa.value, &attr.value, cargv.data(), envp);
  if (rc != 0)
    throw CannotStart(std::string(short_file(__FILE__)) + ":" + std::to_string(__LINE__) + ": posix_spawn [" +
                          argv[0] + (cwd.empty() ? "" : " in " + cwd) + "]: " + std::strerror(rc),
                      rc);
  return pid;
}

Exit wait(pid_t pid, std::optional<double> timeout_s) {
  const auto t0 = std::chrono::steady_clock::now();
  bool timed_out = false;
  int status = 0;
  for (;;) {
    const bool polling = timeout_s && !timed_out;
    const pid_t r = ::waitpid(pid, &status, polling ? WNOHANG : 0);
    if (r == pid) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(__FILE__, __LINE__, "waitpid [" + std::to_string(pid) + "]", errno);
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > *timeout_s) {
      // The group first, so that nothing it started outlives it; ESRCH: it leads none.
      kill_ignoring_gone(-pid, "kill [process group]");
      kill_ignoring_gone(pid, "kill [pid]");
      timed_out = true;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return decode(status, timed_out);
}

Exit run(const std::vector<std::string>& argv, const SpawnOptions& options, std::optional<double> timeout_s) {
  pid_t pid = -1;
  try {
    pid = spawn(argv, options);
  } catch (const CannotStart& e) {
    if (options.err.kind != Stream::Kind::null)
      write_all(options.err.kind == Stream::Kind::fd ? options.err.fd : STDERR_FILENO, cannot_run(argv, e));
    Exit exit;
    exit.code = 127;
    return exit;
  }
  return wait(pid, timeout_s);
}

Captured capture(const std::vector<std::string>& argv, SpawnOptions options) {
  int out_pipe[2], err_pipe[2];
  ATTNGATE_PROC_CHECK(::pipe2(out_pipe, O_CLOEXEC));
  Fd out_read(out_pipe[0]), out_write(out_pipe[1]);
  ATTNGATE_PROC_CHECK(::pipe2(err_pipe, O_CLOEXEC));
  Fd err_read(err_pipe[0]), err_write(err_pipe[1]);
  options.out = Stream::to(out_write.get());
  options.err = Stream::to(err_write.get());
  Captured c;
  pid_t pid = -1;
  try {
    pid = spawn(argv, options);
  } catch (const CannotStart& e) {
    c.exit.code = 127;
    c.err = cannot_run(argv, e);
    return c;
  }
  // Only the child's copies of the write ends remain: end of file once it (and what it started) exits.
  out_write.reset();
  err_write.reset();
  drain(out_read.get(), err_read.get(), c.out, c.err);
  c.exit = wait(pid);
  return c;
}

}  // namespace attngate::verify::process
