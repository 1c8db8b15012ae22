// The seal: what attngate_sandbox does to itself before it execs the worker, and the probe that
// says which of its mechanisms this kernel and this build offer.
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/prctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sandbox_internal.hpp"

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_IS_SET 1
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

namespace attngate::sandbox {

Unavailable::Unavailable(std::string m, std::string w)
    : Error("SANDBOX_UNAVAILABLE: " + m + ": " + w), mechanism(std::move(m)), why(std::move(w)) {}

std::string SandboxReport::text() const {
  std::string out;
  for (const Mechanism& m : mechanisms)
    out += m.name + (m.available ? ": available: " : ": unavailable: ") + m.detail + "\n";
  return out;
}

namespace detail {

bool pretend_missing(const std::string& mechanism) {
  const char* v = std::getenv("ATTNGATE_SANDBOX_PRETEND_MISSING");
  std::stringstream names(v ? v : "");
  for (std::string n; std::getline(names, n, ',');)
    if (n == mechanism) return true;
  return false;
}

}  // namespace detail

namespace {

using namespace detail;

const char* const kPretended = "named in ATTNGATE_SANDBOX_PRETEND_MISSING (test-only)";

std::string landlock_why(int neg_errno) {
  if (neg_errno == -ENOSYS) return "the kernel has no Landlock (landlock_create_ruleset: ENOSYS)";
  if (neg_errno == -EOPNOTSUPP) return "Landlock is built in but not enabled (add landlock to the lsm= boot parameter)";
  return std::string("landlock_create_ruleset: ") + std::strerror(-neg_errno);
}

int cap_last_cap() {
  std::ifstream f("/proc/sys/kernel/cap_last_cap");
  int last = -1;
  if (!(f >> last) || last < 0 || last >= 64)
    fail(__FILE__, __LINE__, "read /proc/sys/kernel/cap_last_cap", f.fail() ? EIO : ERANGE);
  return last;
}

// Effective, permitted and inheritable sets, 64 bits each (capability ABI version 3).
struct Caps {
  uint64_t effective = 0, permitted = 0, inheritable = 0;
};

Caps get_caps() {
  __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct d[2]{};
  ATTNGATE_SB_CHECK(::syscall(SYS_capget, &h, d));
  auto both = [&](uint32_t __user_cap_data_struct::*m) { return uint64_t(d[0].*m) | uint64_t(d[1].*m) << 32; };
  return {both(&__user_cap_data_struct::effective), both(&__user_cap_data_struct::permitted),
          both(&__user_cap_data_struct::inheritable)};
}

void drop_capabilities() {
  // The bounding set can only be changed with CAP_SETPCAP; without it there is nothing to regain
  // anyway (no_new_privs already holds, and the permitted set is emptied below).
  if (get_caps().effective & (uint64_t(1) << CAP_SETPCAP))
    for (int cap = 0, last = cap_last_cap(); cap <= last; ++cap)
      ATTNGATE_SB_CHECK_ON(::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "cap " + std::to_string(cap));
  ATTNGATE_SB_CHECK(::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0));
  __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2]{};
  ATTNGATE_SB_CHECK(::syscall(SYS_capset, &h, none));
  const Caps after = get_caps();
  if (after.effective | after.permitted | after.inheritable) fail(__FILE__, __LINE__, "capset left capabilities", EPERM);
}

// The signal survives the exec (same process, not set-uid); a parent that already died is caught
// by the second getppid.
void die_with_parent() {
  const pid_t parent = ::getppid();
  ATTNGATE_SB_CHECK(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0));
  if (::getppid() != parent) fail(__FILE__, __LINE__, "getppid: the parent exited before the seal", ESRCH);
}

std::string make_scratch(const std::string& path) {
  if (path.empty()) throw Error("attngate_sandbox: --scratch is required");
  const std::filesystem::path p = std::filesystem::absolute(path);
  std::error_code ec;
  std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) fail(__FILE__, __LINE__, "create_directories [" + p.parent_path().string() + "]", ec.value());
  if (::mkdir(p.c_str(), 0700) == 0)
    ATTNGATE_SB_CHECK_ON(::chmod(p.c_str(), 0700), p.string());  // exactly 0700, whatever the umask
  else if (errno != EEXIST)
    fail(__FILE__, __LINE__, "mkdir [" + p.string() + "]", errno);
  struct stat st {};
  ATTNGATE_SB_CHECK_ON(::stat(p.c_str(), &st), p.string());
  if (!S_ISDIR(st.st_mode)) fail(__FILE__, __LINE__, "stat [" + p.string() + "]", ENOTDIR);
  char* real = ::realpath(p.c_str(), nullptr);
  if (!real) fail(__FILE__, __LINE__, "realpath [" + p.string() + "]", errno);
  std::string out(real);
  std::free(real);
  return out;
}

// Landlock checks only what is opened after it: a descriptor the judge leaked would bypass it.
void close_fds(int keep) {
  if (keep < 3) throw Error("attngate_sandbox: keep_fds must keep 0, 1 and 2");
  if (::syscall(SYS_close_range, unsigned(keep), ~0U, 0) == 0) return;
  if (errno != ENOSYS) fail(__FILE__, __LINE__, "close_range", errno);
  ::closefrom(keep);
}

struct Plan {
  int landlock_abi = 0;  // 0: skipped
  bool seccomp = false;
};

// Decides what can be done before anything is changed, so Policy::fail leaves the process as it was.
Plan plan(const Options& o, std::vector<Unavailable>& skipped) {
  auto unavailable = [&](Unavailable u) {
    if (o.policy == Policy::fail) throw u;
    skipped.push_back(std::move(u));
  };
  Plan p;
  const int abi = landlock_abi();
  if (pretend_missing("landlock"))
    unavailable(Unavailable("landlock", kPretended));
  else if (abi < 0)
    unavailable(Unavailable("landlock", landlock_why(abi)));
  else
    p.landlock_abi = abi;
  if (pretend_missing("seccomp"))
    unavailable(Unavailable("seccomp", kPretended));
  else if (seccomp_build().empty())
    unavailable(Unavailable("seccomp", "attngate_sandbox was built without libseccomp (not found at configure time, or ATTNGATE_SECCOMP=OFF)"));
  else
    p.seccomp = true;
  return p;
}

}  // namespace

std::vector<Unavailable> seal(const Options& o) {
  std::vector<Unavailable> skipped;
  const Plan p = plan(o, skipped);
  const pid_t self = ::getpid();
  die_with_parent();
  const std::string scratch = make_scratch(o.scratch);
  close_fds(o.keep_fds);
  ATTNGATE_SB_CHECK(::setenv("CUDA_CACHE_PATH", (scratch + "/nv-cache").c_str(), 1));
  // Paths are opened while the process can still traverse every folder it could before.
  const int ruleset = p.landlock_abi > 0 ? landlock_ruleset(o, scratch, p.landlock_abi) : -1;
  ATTNGATE_SB_CHECK(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
  drop_capabilities();
  if (ruleset >= 0) landlock_enforce(ruleset);
  if (p.seccomp) {
    try {
      seccomp_load_filter(self);
    } catch (Unavailable& u) {
      if (o.policy == Policy::fail) throw;
      skipped.push_back(std::move(u));
    }
  }
  return skipped;
}

namespace {

Mechanism probe_landlock(int& abi_out) {
  const int abi = landlock_abi();
  if (pretend_missing("landlock")) return {"landlock", false, kPretended};
  if (abi < 0) return {"landlock", false, landlock_why(abi)};
  abi_out = abi;
  std::string detail = "ABI " + std::to_string(abi) + " (filesystem";
  if (abi >= 4) detail += ", TCP";
  if (abi >= 6) detail += ", abstract unix sockets and signals scoped";
  return {"landlock", true, detail + ")"};
}

Mechanism probe_seccomp() {
  if (pretend_missing("seccomp")) return {"seccomp", false, kPretended};
  const std::string build = seccomp_build();
  if (build.empty()) return {"seccomp", false, "built without libseccomp (not found at configure time, or ATTNGATE_SECCOMP=OFF)"};
  const int mode = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  if (mode < 0) return {"seccomp", false, std::string("prctl(PR_GET_SECCOMP): ") + std::strerror(errno)};
  return {"seccomp", true, build + (mode == 2 ? ", already under a filter (stacks)" : "")};
}

Mechanism probe_nnp() {
  const int v = ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  if (v < 0) return {"no_new_privs", false, std::string("prctl(PR_GET_NO_NEW_PRIVS): ") + std::strerror(errno)};
  return {"no_new_privs", true, v ? "already set" : "not yet set"};
}

Mechanism probe_caps() {
  try {
    const int last = cap_last_cap();
    const Caps c = get_caps();
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, 0, 0, 0) < 0)
      return {"capabilities", false, std::string("no ambient capabilities: ") + std::strerror(errno)};
    std::ostringstream d;
    d << "cap_last_cap " << last << ", effective 0x" << std::hex << c.effective << std::dec
      << ((c.effective & (uint64_t(1) << CAP_SETPCAP)) ? ", bounding set droppable (CAP_SETPCAP held)"
                                                      : ", bounding set kept (no CAP_SETPCAP; nothing to regain)");
    return {"capabilities", true, d.str()};
  } catch (const Error& e) {
    return {"capabilities", false, e.what()};
  }
}

Mechanism probe_pdeathsig() {
  int sig = 0;
  if (::prctl(PR_GET_PDEATHSIG, &sig, 0, 0, 0) < 0)
    return {"pdeathsig", false, std::string("prctl(PR_GET_PDEATHSIG): ") + std::strerror(errno)};
  return {"pdeathsig", true, "SIGKILL when the parent dies"};
}

}  // namespace

SandboxReport probe_sandbox() {
  SandboxReport r;
  r.mechanisms = {probe_landlock(r.landlock_abi), probe_seccomp(), probe_nnp(), probe_caps(), probe_pdeathsig()};
  return r;
}

}  // namespace attngate::sandbox
