// The judge's side of the sandbox: a process its workers cannot inspect, and that can find and
// kill everything it started, however it was detached.
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "sandbox_internal.hpp"

namespace attngate::sandbox {

void harden_judge_process() {
  ATTNGATE_SB_CHECK(::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
  ATTNGATE_SB_CHECK(::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
}

namespace {

// Children of every thread of `pid` (each thread has its own list). Empty once it is gone.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(task.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(task + "/" + e->d_name + "/children");
    for (pid_t c; f >> c;) out.push_back(c);
  }
  ::closedir(d);
  return out;
}

// Without CONFIG_PROC_CHILDREN: every process whose parent (field 4 of /proc/N/stat) is `pid`.
std::vector<pid_t> children_by_scan(pid_t pid) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) detail::fail(__FILE__, __LINE__, "opendir [/proc]", errno);
  while (const dirent* e = ::readdir(d)) {
    const pid_t p = pid_t(std::atoi(e->d_name));
    if (p <= 0) continue;
    std::ifstream f("/proc/" + std::string(e->d_name) + "/stat");
    const std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');  // the name may hold spaces and parentheses
    char state = 0;
    int ppid = 0;
    if (paren != std::string::npos && std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) == 2 && ppid == pid)
      out.push_back(p);
  }
  ::closedir(d);
  return out;
}

bool have_children_files() {
  return ::access(("/proc/self/task/" + std::to_string(::gettid()) + "/children").c_str(), R_OK) == 0;
}

// Reaps whatever of ours has exited, without waiting.
void reap_exited() {
  for (int st = 0; ::waitpid(-1, &st, WNOHANG) > 0;) {
  }
}

}  // namespace

std::vector<pid_t> descendants() {
  auto children = have_children_files() ? children_of : children_by_scan;
  std::vector<pid_t> out = children(::getpid());
  for (size_t i = 0; i < out.size(); ++i)
    for (pid_t c : children(out[i]))
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

int kill_descendants(std::chrono::milliseconds wait) {
  std::set<pid_t> signalled;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    reap_exited();
    const std::vector<pid_t> left = descendants();
    if (left.empty()) break;
    // All at once, and again until none is left: what was forked meanwhile is caught next round
    // (its parent killed, it reparents to this subreaper).
    for (pid_t p : left)
      if (::kill(p, SIGKILL) == 0) signalled.insert(p);
      else if (errno != ESRCH) detail::fail(__FILE__, __LINE__, "kill [" + std::to_string(p) + "]", errno);
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return int(signalled.size());
}

}  // namespace attngate::sandbox
