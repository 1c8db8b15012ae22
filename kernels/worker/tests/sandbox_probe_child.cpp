// Run through attngate_sandbox by test_sandbox.cpp: attempts what a sealed worker must not do (and
// a few things it must still do) and prints one line per attempt, "<name>: ok" or "<name>: <ERRNO>".
// Arguments are key=value pairs naming the targets (test_sandbox.cpp passes them).
#include <dirent.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <sched.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>

extern char** environ;

namespace {

std::string result(int err) { return err == 0 ? "ok" : strerrorname_np(err); }

void report(const std::string& name, int err) { std::cout << name << ": " << result(err) << std::endl; }

// 0 if rc is not -1, else errno.
int err_of(long rc) { return rc == -1 ? errno : 0; }

int write_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  const int e = ::write(fd, "x", 1) == 1 ? 0 : errno;
  ::close(fd);
  return e;
}

int read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char buf[64];
  const int e = ::read(fd, buf, sizeof buf) >= 0 ? 0 : errno;
  ::close(fd);
  return e;
}

int open_only(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

int list_dir(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (!d) return errno;
  ::closedir(d);
  return 0;
}

std::string status_field(const std::string& key) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key + ":", 0) == 0) {
      const size_t v = line.find_first_not_of(" \t", key.size() + 1);
      return v == std::string::npos ? "" : line.substr(v);
    }
  return "?";
}

// Static initializers run after the exec, so the seal must already hold here.
struct StaticProbe {
  int outside = -1;
  std::string seccomp;
  StaticProbe() {
    if (const char* p = std::getenv("ATTNGATE_PROBE_STATIC_OUTSIDE")) outside = write_file(p);
    seccomp = status_field("Seccomp");
  }
} g_static;

void filesystem(std::map<std::string, std::string>& a) {
  if (a.count("scratch")) report("write_scratch", write_file(a["scratch"] + "/probe.txt"));
  if (a.count("outside")) report("write_outside", write_file(a["outside"]));
  if (a.count("home")) report("write_home", write_file(a["home"]));
  if (a.count("key")) report("read_key", read_file(a["key"]));
  if (a.count("block")) report("read_block", read_file(a["block"]));
  report("read_proc_self_maps", read_file("/proc/self/maps"));
  report("read_proc_self_status", read_file("/proc/self/status"));
  report("read_etc", read_file(::access("/etc/hostname", F_OK) == 0 ? "/etc/hostname" : "/etc/passwd"));
  report("read_proc_cpuinfo", read_file("/proc/cpuinfo"));
  report("write_task_comm", write_file("/proc/self/task/" + std::to_string(::gettid()) + "/comm"));
  report("list_proc", list_dir("/proc"));
  report("list_dev", list_dir("/dev"));
  report("write_dev_null", write_file("/dev/null"));
  const std::string shm = "/dev/shm/attngate_sandbox_probe_" + std::to_string(::getpid());
  report("create_dev_shm", write_file(shm));  // the judge's files there are opened, none created
  ::unlink(shm.c_str());
}

void other_process(const std::string& pid_s) {
  const pid_t pid = std::atoi(pid_s.c_str());
  const std::string proc = "/proc/" + pid_s;
  report("proc_other_fd", list_dir(proc + "/fd"));
  report("proc_other_status", read_file(proc + "/status"));
  report("kill_other", err_of(::kill(pid, SIGTERM)));
  report("ptrace_other", err_of(::ptrace(PTRACE_ATTACH, pid, nullptr, nullptr)));
  char buf[16];
  iovec local{buf, sizeof buf}, remote{reinterpret_cast<void*>(0x400000), sizeof buf};
  report("vm_read_other", err_of(::process_vm_readv(pid, &local, 1, &remote, 1, 0)));
  // Every attempt is harmless should it succeed: the same nice value, a read-only prlimit.
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, id_t(pid));
  report("setpriority_other", errno ? errno : err_of(::setpriority(PRIO_PROCESS, id_t(pid), nice)));
  rlimit r{};
  report("prlimit_other", err_of(::prlimit(pid, RLIMIT_NOFILE, nullptr, &r)));
  cpu_set_t set;
  CPU_ZERO(&set);
  const int got = ::sched_getaffinity(pid, sizeof set, &set);
  report("affinity_other", got != 0 ? errno : err_of(::sched_setaffinity(pid, sizeof set, &set)));
  report("pidfd_open_other", err_of(::syscall(SYS_pidfd_open, pid, 0)));
}

void judge(const std::string& pid_s) {
  const std::string proc = "/proc/" + pid_s;
  char link[256];
  report("judge_fd_dir", list_dir(proc + "/fd"));
  report("judge_fd_link", err_of(::readlink((proc + "/fd/0").c_str(), link, sizeof link)));
  report("judge_fd_open", read_file(proc + "/fd/0"));
  report("judge_mem", open_only(proc + "/mem"));  // reading at 0 would fail anyway
  report("judge_environ", read_file(proc + "/environ"));
}

void signals() {
  report("kill_self0", err_of(::kill(::getpid(), 0)));
  report("kill_group0", err_of(::kill(0, 0)));  // signal 0: harmless should the filter fail
  report("kill_all0", err_of(::kill(-1, 0)));
  report("raise_self", err_of(::syscall(SYS_tgkill, ::getpid(), ::gettid(), 0)));
}

void processes(std::map<std::string, std::string>& a) {
  const pid_t f = ::fork();
  if (f == 0) ::_exit(0);
  if (f > 0) ::waitpid(f, nullptr, 0);
  report("fork", err_of(f));
  const pid_t v = ::vfork();
  if (v == 0) ::_exit(0);
  if (v > 0) ::waitpid(v, nullptr, 0);
  report("vfork", err_of(v));
  clone_args ca{};
  ca.exit_signal = SIGCHLD;
  const long c3 = ::syscall(SYS_clone3, &ca, sizeof ca);
  if (c3 == 0) ::_exit(0);
  if (c3 > 0) ::waitpid(pid_t(c3), nullptr, 0);
  report("clone3", err_of(c3));
  int ran = 0;
  std::thread([&] { ran = 1; }).join();
  report("thread", ran ? 0 : EAGAIN);
  report("unshare_user", err_of(::unshare(CLONE_NEWUSER)));
  if (a.count("marker")) {  // a double fork through setsid, as a detaching child would do
    std::string marker = a["marker"];
    char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>("setsid sleep 300 & sleep 300"),
                    marker.data(), nullptr};
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, "/bin/sh", nullptr, nullptr, argv, environ);
    if (rc == 0) ::kill(pid, SIGKILL);
    report("spawn_detached", rc);
  }
}

void system_calls() {
  char c = 'x';
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // ENOTTY, not a keystroke, if unfiltered
  report("tiocsti", err_of(::ioctl(null, TIOCSTI, &c)));
  ::close(null);
  report("io_uring_setup", err_of(::syscall(SYS_io_uring_setup, 1, nullptr)));
  report("userfaultfd", err_of(::syscall(SYS_userfaultfd, 0)));
  report("bpf", err_of(::syscall(SYS_bpf, 0, nullptr, 0)));
  // Only ever raise the nice value (always allowed): CI may already run niced, and a fixed low
  // value would then be a lowering, refused with EACCES by the kernel whatever the filter says.
  errno = 0;
  const int own_nice = ::getpriority(PRIO_PROCESS, 0);
  if (errno != 0) report("setpriority_self", errno);
  else report("setpriority_self", err_of(::setpriority(PRIO_PROCESS, 0, std::min(own_nice + 1, 19))));
  report("setpriority_own_pid",
         err_of(::setpriority(PRIO_PROCESS, id_t(::getpid()), std::min(own_nice + 2, 19))));
  report("setpriority_user", err_of(::setpriority(PRIO_USER, 0x7ffffff0, 2)));  // a uid nobody has
  rlimit r{};
  report("getrlimit_self", err_of(::getrlimit(RLIMIT_NOFILE, &r)));
  // The filter's "0 or itself" on pid arguments, pid by pid (a read-only prlimit: EPERM is the
  // filter, ESRCH or success the kernel): every other pid up to 4x its own, and a few far ones.
  const long self = ::getpid();
  long wrong = 0;
  auto probe_pid = [&](long p) {
    const int e = err_of(::syscall(SYS_prlimit64, p, RLIMIT_NOFILE, nullptr, &r));
    wrong += (p == 0 || p == self) ? e != 0 : e != EPERM;
  };
  for (long p = 0; p <= 4 * self + 64; ++p) probe_pid(p);
  for (long p : {-1L, long(INT32_MAX), (1L << 22) - 1, (1L << 32) | self}) probe_pid(p);
  std::cout << "prlimit_scan: " << (wrong ? std::to_string(wrong) + " pids wrong" : "ok") << std::endl;
}

void network(std::map<std::string, std::string>& a) {
  if (a.count("tcp_port")) {
    const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(uint16_t(std::atoi(a["tcp_port"].c_str())));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    report("tcp_connect", err_of(::connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to)));
    ::close(s);
    const int b = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    report("tcp_bind", err_of(::bind(b, reinterpret_cast<sockaddr*>(&any), sizeof any)));
    ::close(b);
  }
  if (a.count("abstract")) {
    const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un to{};
    to.sun_family = AF_UNIX;
    const std::string& name = a["abstract"];
    std::memcpy(to.sun_path + 1, name.data(), name.size());
    const socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    report("abstract_connect", err_of(::connect(s, reinterpret_cast<sockaddr*>(&to), len)));
    ::close(s);
  }
}

void status() {
  for (const char* k : {"NoNewPrivs", "Seccomp", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    std::cout << "status." << k << ": " << status_field(k) << std::endl;
  std::cout << "static_write_outside: " << (g_static.outside < 0 ? "not tried" : result(g_static.outside)) << std::endl;
  std::cout << "static_seccomp: " << g_static.seccomp << std::endl;
  const char* cache = std::getenv("CUDA_CACHE_PATH");
  std::cout << "env.CUDA_CACHE_PATH: " << (cache ? cache : "") << std::endl;
  int fds = 0;  // 3 and 4 are the exchange's, kept
  for (int fd = 5; fd < 1024; ++fd) fds += ::fcntl(fd, F_GETFD) != -1;
  std::cout << "open_fds_above_4: " << fds << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    const size_t eq = s.find('=');
    if (eq != std::string::npos) a[s.substr(0, eq)] = s.substr(eq + 1);
  }
  status();
  filesystem(a);
  if (a.count("other")) other_process(a["other"]);
  if (a.count("judge")) judge(a["judge"]);
  signals();
  processes(a);
  system_calls();
  network(a);
  if (a.count("wait")) ::sleep(unsigned(std::atoi(a["wait"].c_str())));
  std::cout << "done: ok" << std::endl;
  return 0;
}
