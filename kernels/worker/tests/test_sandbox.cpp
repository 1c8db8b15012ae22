// attngate_sandbox with real processes: sandbox_probe_child runs through it and attempts what a
// sealed worker must not do; the test checks each refusal (and what must still work) from outside.
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "attngate/worker/sandbox.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace sb = attngate::sandbox;

struct Outcome {
  int status = -1;  // exit status, or 128 + signal
  std::string out, err;
  std::map<std::string, std::string> lines;  // "<name>: <result>" of the probe child
  std::string at(const std::string& k) const {
    const auto it = lines.find(k);
    return it == lines.end() ? "<missing>" : it->second;
  }
};

// Each named attempt of the probe child ended as expected ("ok", "EACCES", "EPERM", ...).
void expect_outcomes(const Outcome& r, std::initializer_list<std::pair<const char*, const char*>> want) {
  for (const auto& [attempt, result] : want) EXPECT_EQ(r.at(attempt), result) << attempt;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& env, const fs::path& out,
            const fs::path& err) {
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> e(env);
  for (char** p = environ; *p; ++p) e.push_back(*p);
  for (auto& s : e) envp.push_back(s.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);  // TIOCSTI must find no terminal
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("posix_spawn " + args[0] + ": " + std::strerror(rc));
  return pid;
}

int wait_status(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] != 'Z';
}

// Processes whose command line holds `marker`.
int count_marked(const std::string& marker) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = slurp(e.path() / "cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    n += cmd.find(marker) != std::string::npos;
  }
  return n;
}

class Sandbox : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/attngate_sandbox_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    scratch_ = tmp_ / "scratch";
    other_ = spawn({"/bin/sleep", "30"}, {}, tmp_ / "other.out", tmp_ / "other.err");
    report_ = sb::probe_sandbox();
  }
  void TearDown() override {
    if (other_ > 0) {
      ::kill(other_, SIGKILL);
      wait_status(other_);
    }
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }

  bool has(const std::string& mechanism) const {
    for (const auto& m : report_.mechanisms)
      if (m.name == mechanism) return m.available;
    return false;
  }
  // Skips (returns true) unless Landlock and seccomp are both there.
  bool skip_without_seal() {
    if (!has("landlock") || !has("seccomp")) return true;
    return false;
  }

  std::vector<std::string> launcher(const std::string& policy = "fail") const {
    const std::string child_dir = fs::path(ATTNGATE_SANDBOX_PROBE_CHILD).parent_path();
    return {ATTNGATE_SANDBOX_BIN, "--scratch", scratch_, "--read", child_dir, "--exec", child_dir, "--policy", policy, "--"};
  }

  Outcome run(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
    Outcome r;
    const pid_t pid = spawn(args, env, tmp_ / "run.out", tmp_ / "run.err");
    r.status = wait_status(pid);
    r.out = slurp(tmp_ / "run.out");
    r.err = slurp(tmp_ / "run.err");
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      const size_t c = line.find(": ");
      if (c != std::string::npos) r.lines[line.substr(0, c)] = line.substr(c + 2);
    }
    return r;
  }

  // The probe child, sealed, with these key=value arguments.
  Outcome probe(const std::vector<std::string>& kv, const std::vector<std::string>& env = {}, const std::string& policy = "fail") {
    std::vector<std::string> args = launcher(policy);
    args.push_back(ATTNGATE_SANDBOX_PROBE_CHILD);
    args.insert(args.end(), kv.begin(), kv.end());
    Outcome r = run(args, env);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_EQ(r.at("done"), "ok") << r.err << r.out;
    return r;
  }

  fs::path tmp_, scratch_;
  pid_t other_ = -1;
  sb::SandboxReport report_;
};

#define SKIP_WITHOUT_SEAL()                                                   \
  if (skip_without_seal()) GTEST_SKIP() << "needs Landlock and seccomp:\n" << report_.text()

TEST_F(Sandbox, ProbePrintsOneLinePerMechanism) {
  const Outcome r = run({ATTNGATE_SANDBOX_BIN, "--probe"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* m : {"landlock", "seccomp", "no_new_privs", "capabilities", "pdeathsig"})
    EXPECT_TRUE(r.lines.count(m)) << m << " missing from\n" << r.out;
  if (has("landlock")) {
    EXPECT_EQ(r.at("landlock").rfind("available: ABI ", 0), 0u) << r.out;
  }
  const Outcome missing = run({ATTNGATE_SANDBOX_BIN, "--probe"}, {"ATTNGATE_SANDBOX_PRETEND_MISSING=landlock"});
  EXPECT_EQ(missing.at("landlock").rfind("unavailable: ", 0), 0u) << missing.out;
}

TEST_F(Sandbox, WritesOnlyInScratch) {
  SKIP_WITHOUT_SEAL();
  const char* home = std::getenv("HOME");
  const std::string in_home = std::string(home ? home : "/root") + "/attngate_sandbox_probe_" + std::to_string(::getpid());
  const Outcome r = probe({"scratch=" + scratch_.string(), "outside=" + (tmp_ / "outside.txt").string(), "home=" + in_home});
  EXPECT_EQ(r.at("write_scratch"), "ok");
  EXPECT_TRUE(fs::exists(scratch_ / "probe.txt"));
  EXPECT_EQ(r.at("write_outside"), "EACCES");
  EXPECT_FALSE(fs::exists(tmp_ / "outside.txt"));
  EXPECT_EQ(r.at("write_home"), "EACCES");
  EXPECT_FALSE(fs::exists(in_home));
  EXPECT_EQ(r.at("write_dev_null"), "ok");
  if (fs::is_directory("/dev/shm")) {
    EXPECT_EQ(r.at("create_dev_shm"), "EACCES");
  }
  EXPECT_EQ((fs::status(scratch_).permissions() & fs::perms::all), fs::perms::owner_all);
  EXPECT_EQ(r.at("env.CUDA_CACHE_PATH"), scratch_.string() + "/nv-cache");
}

TEST_F(Sandbox, ReadsNoKeyButItsOwnProcAndTheSystem) {
  SKIP_WITHOUT_SEAL();
  std::ofstream(tmp_ / "key") << "secret\n";
  const Outcome r = probe({"key=" + (tmp_ / "key").string()});
  expect_outcomes(r, {
                        {"read_key", "EACCES"},
                        {"read_proc_self_maps", "ok"},
                        {"read_proc_self_status", "ok"},
                        {"write_task_comm", "ok"},
                        {"read_etc", "ok"},
                        {"read_proc_cpuinfo", "ok"},
                        {"list_dev", "ok"}
                    });
}

TEST_F(Sandbox, NoRawDisk) {
  SKIP_WITHOUT_SEAL();
  std::string dev;
  for (const auto& e : fs::directory_iterator("/sys/class/block")) {
    const std::string p = "/dev/" + e.path().filename().string();
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      dev = p;
      break;
    }
  }
  if (dev.empty()) GTEST_SKIP() << "this process can open no block device itself";
  EXPECT_EQ(probe({"block=" + dev}).at("read_block"), "EACCES") << dev;
}

TEST_F(Sandbox, OtherProcessesAreOutOfReach) {
  SKIP_WITHOUT_SEAL();
  const Outcome r = probe({"other=" + std::to_string(other_)});
  expect_outcomes(r, {
                        {"proc_other_fd", "EACCES"},
                        {"proc_other_status", "EACCES"},
                        {"list_proc", "EACCES"},
                        {"kill_other", "EPERM"}
                    });
  EXPECT_TRUE(alive(other_));
  expect_outcomes(r, {
                        {"ptrace_other", "EPERM"},
                        {"vm_read_other", "EPERM"},
                        {"pidfd_open_other", "EPERM"},
                        {"setpriority_other", "EPERM"},
                        {"prlimit_other", "EPERM"},
                        {"affinity_other", "EPERM"}
                    });
}

TEST_F(Sandbox, SignalsOnlyItself) {
  SKIP_WITHOUT_SEAL();
  const Outcome r = probe({});
  expect_outcomes(r, {
                        {"kill_self0", "ok"},
                        {"raise_self", "ok"},
                        {"kill_group0", "EPERM"},
                        {"kill_all0", "EPERM"}
                    });
}

TEST_F(Sandbox, ThreadsButNoProcesses) {
  SKIP_WITHOUT_SEAL();
  const std::string marker = "attngate_sandbox_marker_" + std::to_string(::getpid());
  const Outcome r = probe({"marker=" + marker});
  expect_outcomes(r, {
                        {"fork", "EPERM"},
                        {"vfork", "EPERM"},
                        {"clone3", "ENOSYS"},
                        {"thread", "ok"},
                        {"unshare_user", "EPERM"},
                        {"spawn_detached", "EPERM"}
                    });
  EXPECT_EQ(count_marked(marker), 0);
}

TEST_F(Sandbox, NoPrioritiesButItsOwnNoTerminalNoKernel) {
  SKIP_WITHOUT_SEAL();
  const Outcome r = probe({});
  expect_outcomes(r, {
                        {"setpriority_self", "ok"},
                        {"setpriority_own_pid", "ok"},
                        {"setpriority_user", "EPERM"},
                        {"getrlimit_self", "ok"},
                        {"prlimit_scan", "ok"},
                        {"tiocsti", "EPERM"},
                        {"io_uring_setup", "EPERM"},
                        {"userfaultfd", "EPERM"},
                        {"bpf", "EPERM"}
                    });
}

TEST_F(Sandbox, NoNetworkNoAbstractSockets) {
  SKIP_WITHOUT_SEAL();
  if (report_.landlock_abi < 6) GTEST_SKIP() << "needs Landlock ABI 6 (TCP: 4)";
  const int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(l, 1), 0);
  ASSERT_EQ(::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string name = "attngate_sandbox_test_" + std::to_string(::getpid());
  const int u = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un ua{};
  ua.sun_family = AF_UNIX;
  std::memcpy(ua.sun_path + 1, name.data(), name.size());
  ASSERT_EQ(::bind(u, reinterpret_cast<sockaddr*>(&ua), socklen_t(offsetof(sockaddr_un, sun_path) + 1 + name.size())), 0);
  ASSERT_EQ(::listen(u, 1), 0);
  const Outcome r = probe({"tcp_port=" + std::to_string(ntohs(a.sin_port)), "abstract=" + name});
  expect_outcomes(r, {
                        {"tcp_connect", "EACCES"},
                        {"tcp_bind", "EACCES"},
                        {"abstract_connect", "EPERM"}
                    });
  ::close(l);
  ::close(u);
}

TEST_F(Sandbox, StatusShowsTheSeal) {
  SKIP_WITHOUT_SEAL();
  const Outcome r = probe({});
  EXPECT_EQ(r.at("status.NoNewPrivs"), "1");
  EXPECT_EQ(r.at("status.Seccomp"), "2");
  for (const char* k : {"status.CapEff", "status.CapPrm", "status.CapInh", "status.CapAmb"})
    EXPECT_EQ(r.at(k), "0000000000000000") << k;
  if (::geteuid() == 0) {
    EXPECT_EQ(r.at("status.CapBnd"), "0000000000000000");
  }
}

TEST_F(Sandbox, StaticInitializersRunSealed) {
  SKIP_WITHOUT_SEAL();
  const Outcome r = probe({}, {"ATTNGATE_PROBE_STATIC_OUTSIDE=" + (tmp_ / "static.txt").string()});
  expect_outcomes(r, {
                        {"static_write_outside", "EACCES"},
                        {"static_seccomp", "2"}
                    });
  EXPECT_FALSE(fs::exists(tmp_ / "static.txt"));
}

TEST_F(Sandbox, LeakedDescriptorsAreClosed) {
  SKIP_WITHOUT_SEAL();
  // A folder the worker may not read, opened without O_CLOEXEC above the exchange's 3 and 4.
  const int dir = ::open(tmp_.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dir, 0);
  const int leaked = ::fcntl(dir, F_DUPFD, 10);
  ::close(dir);
  ASSERT_GE(leaked, 10);
  const Outcome r = probe({});
  ::close(leaked);
  EXPECT_EQ(r.at("open_fds_above_4"), "0");
}

TEST_F(Sandbox, PolicyFailExits97WhenAMechanismIsMissing) {
  for (const char* m : {"landlock", "seccomp"}) {
    std::vector<std::string> args = launcher("fail");
    args.push_back(ATTNGATE_SANDBOX_PROBE_CHILD);
    const Outcome r = run(args, {std::string("ATTNGATE_SANDBOX_PRETEND_MISSING=") + m});
    EXPECT_EQ(r.status, sb::kUnavailableExit) << r.err;
    EXPECT_NE(r.err.find(std::string("attngate_sandbox: SANDBOX_UNAVAILABLE: ") + m + ": "), std::string::npos) << r.err;
    EXPECT_EQ(r.at("done"), "<missing>") << "the worker must not run: " << r.out;
  }
}

TEST_F(Sandbox, PolicyWarnGoesOnWithWhatIsThere) {
  if (!has("seccomp")) GTEST_SKIP() << "needs seccomp:\n" << report_.text();
  const Outcome r = probe({"outside=" + (tmp_ / "outside.txt").string()}, {"ATTNGATE_SANDBOX_PRETEND_MISSING=landlock"}, "warn");
  EXPECT_NE(r.err.find("attngate_sandbox: SANDBOX_UNAVAILABLE: landlock: "), std::string::npos) << r.err;
  EXPECT_EQ(r.at("write_outside"), "ok");  // no Landlock
  EXPECT_EQ(r.at("fork"), "EPERM");        // seccomp still holds
  EXPECT_EQ(r.at("status.NoNewPrivs"), "1");
}

TEST_F(Sandbox, AWorkerOutsideTheExecTreesDoesNotStart) {
  SKIP_WITHOUT_SEAL();
  fs::copy_file(ATTNGATE_SANDBOX_PROBE_CHILD, tmp_ / "probe_copy");
  const Outcome r = run({ATTNGATE_SANDBOX_BIN, "--scratch", scratch_, "--read", tmp_, "--", (tmp_ / "probe_copy").string()});
  EXPECT_EQ(r.status, 127) << r.err;
  EXPECT_NE(r.err.find("execvp [" + (tmp_ / "probe_copy").string() + "]: Permission denied"), std::string::npos) << r.err;
}

TEST_F(Sandbox, UsageErrors) {
  EXPECT_EQ(run({ATTNGATE_SANDBOX_BIN, "--", "/bin/true"}).status, 2);
  EXPECT_EQ(run({ATTNGATE_SANDBOX_BIN, "--scratch", scratch_}).status, 2);
  EXPECT_NE(run({ATTNGATE_SANDBOX_BIN, "--scratch", scratch_, "--policy", "maybe", "--", "/bin/true"}).status, 0);
  const Outcome missing = run({ATTNGATE_SANDBOX_BIN, "--scratch", scratch_, "--read", "/nonexistent/attngate", "--", "/bin/true"});
  EXPECT_EQ(missing.status, skip_without_seal() ? sb::kUnavailableExit : 1) << missing.err;
  if (!skip_without_seal()) {
    EXPECT_NE(missing.err.find("sandbox_landlock.cpp:"), std::string::npos) << "file:line: call: strerror, got " << missing.err;
  }
}

TEST_F(Sandbox, DiesWithItsParent) {
  SKIP_WITHOUT_SEAL();
  // sh starts the sealed child in the background and waits; killing sh must kill the child.
  std::string cmd;
  for (const auto& a : launcher()) cmd += "'" + a + "' ";
  cmd += std::string("'") + ATTNGATE_SANDBOX_PROBE_CHILD + "' wait=60 & echo $! >" + (tmp_ / "pid").string() + "; wait";
  const pid_t sh = spawn({"/bin/sh", "-c", cmd}, {}, tmp_ / "sh.out", tmp_ / "sh.err");
  pid_t child = 0;
  for (int i = 0; i < 500 && !child; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream(tmp_ / "pid") >> child;
  }
  ASSERT_GT(child, 0);
  // Sealed and asleep once it has printed its last attempt.
  for (int i = 0; i < 500 && slurp(tmp_ / "sh.out").find("getrlimit_self") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(alive(child));
  ::kill(sh, SIGKILL);
  wait_status(sh);
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    gone = !alive(child);
  }
  EXPECT_TRUE(gone) << "the sealed child outlived its parent";
}

// A process like a judge that holds no capability (as a non-root judge would not), hardened or
// not, waiting to be looked at. Without capabilities, only not being dumpable protects it.
pid_t judge_like(bool harden) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[2]{};
    if (::syscall(SYS_capset, &h, none) != 0) ::_exit(1);
    if (harden) sb::harden_judge_process();
    if (::write(ready[1], "r", 1) != 1) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  char c;
  ::close(ready[1]);
  const bool ok = ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  return ok ? pid : -1;
}

// The judge's side. Each test is its own process under CTest, so hardening this one is contained.
TEST_F(Sandbox, AHardenedJudgesDescriptorsAreUnreadable) {
  SKIP_WITHOUT_SEAL();
  // Without Landlock: a dumpable judge without capabilities is open to the worker, a hardened one is not.
  const std::vector<std::string> no_landlock{"ATTNGATE_SANDBOX_PRETEND_MISSING=landlock"};
  for (bool harden : {false, true}) {
    const pid_t judge = judge_like(harden);
    ASSERT_GT(judge, 0);
    const Outcome bare = probe({"judge=" + std::to_string(judge)}, no_landlock, "warn");
    ::kill(judge, SIGKILL);
    wait_status(judge);
    for (const char* k : {"judge_fd_link", "judge_fd_open", "judge_mem", "judge_environ"})
      EXPECT_EQ(bare.at(k), harden ? "EACCES" : "ok") << k << (harden ? " (hardened)" : " (not hardened)");
  }
  // This test process as the judge, hardened, against a fully sealed child.
  sb::harden_judge_process();
  const Outcome sealed = probe({"judge=" + std::to_string(::getpid())});
  for (const char* k : {"judge_fd_dir", "judge_fd_link", "judge_fd_open", "judge_mem", "judge_environ"})
    EXPECT_EQ(sealed.at(k), "EACCES") << k;
}

TEST_F(Sandbox, KillDescendantsKillsAReparentedGrandchild) {
  sb::harden_judge_process();
  const pid_t sh = spawn({"/bin/sh", "-c", "sleep 300 & echo $!"}, {}, tmp_ / "sh.out", tmp_ / "sh.err");
  ASSERT_EQ(wait_status(sh), 0);
  const pid_t grandchild = std::atoi(slurp(tmp_ / "sh.out").c_str());
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(alive(grandchild));
  const std::vector<pid_t> d = sb::descendants();
  EXPECT_NE(std::find(d.begin(), d.end(), grandchild), d.end()) << "the orphan must reparent to the subreaper";
  EXPECT_GE(sb::kill_descendants(), 2);  // the grandchild and the test's `sleep 30`
  EXPECT_FALSE(alive(grandchild));
  EXPECT_EQ(::kill(grandchild, 0), -1) << "killed and reaped";
  EXPECT_TRUE(sb::descendants().empty());
  other_ = -1;  // killed and reaped too
}

}  // namespace
