// The seccomp filter: default allow, and EPERM for what would let the worker reach another
// process (fork, ptrace, signals, pidfds, priorities), change the system or leave its namespaces.
// Built without libseccomp, it reports itself unavailable and the policy decides.
#include "sandbox_internal.hpp"

#if ATTNGATE_HAVE_SECCOMP
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/resource.h>

#include <cstdint>
#include <memory>
#endif

namespace attngate::sandbox::detail {

#if ATTNGATE_HAVE_SECCOMP
namespace {

using Ctx = std::unique_ptr<void, void (*)(scmp_filter_ctx)>;

// libseccomp returns -errno.
void check_rc(int rc, const char* file, int line, const std::string& call) {
  if (rc < 0) fail(file, line, call, -rc);
}
#define ATTNGATE_SB_SECCOMP(expr, what) check_rc((expr), __FILE__, __LINE__, std::string(#expr) + " [" + (what) + "]")

void deny(scmp_filter_ctx c, int nr, const char* name, int err = EPERM) {
  ATTNGATE_SB_SECCOMP(seccomp_rule_add(c, SCMP_ACT_ERRNO(err), nr, 0), name);
}

void deny_if(scmp_filter_ctx c, int nr, const char* name, scmp_arg_cmp cmp) {
  ATTNGATE_SB_SECCOMP(seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), nr, 1, cmp), name);
}

// EPERM unless argument `arg` is 0 (the caller) or `self`. A rule may compare an argument only
// once, so the complement is spelled out: above self, and [1, self) as aligned power-of-two blocks.
void deny_unless_self(scmp_filter_ctx c, int nr, const char* name, unsigned arg, pid_t self) {
  deny_if(c, nr, name, SCMP_CMP(arg, SCMP_CMP_GT, uint64_t(self)));
  for (uint64_t lo = 1, hi = uint64_t(self) - 1; lo <= hi;) {
    uint64_t size = lo & -lo;  // the largest block aligned at lo ...
    while (lo + size - 1 > hi) size >>= 1;  // ... that ends by hi
    deny_if(c, nr, name, SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, ~(size - 1), lo));
    lo += size;
  }
}

#define ATTNGATE_SB_NR(name) SCMP_SYS(name), #name

void deny_plain(scmp_filter_ctx c) {
  // Other processes' memory and descriptors, namespaces and mounts, the kernel itself.
  for (auto [nr, name] : {std::pair{ATTNGATE_SB_NR(ptrace)}, {ATTNGATE_SB_NR(process_vm_readv)},
                          {ATTNGATE_SB_NR(process_vm_writev)}, {ATTNGATE_SB_NR(pidfd_open)},
                          {ATTNGATE_SB_NR(pidfd_getfd)}, {ATTNGATE_SB_NR(pidfd_send_signal)}, {ATTNGATE_SB_NR(kcmp)},
                          {ATTNGATE_SB_NR(fork)}, {ATTNGATE_SB_NR(vfork)}, {ATTNGATE_SB_NR(unshare)},
                          {ATTNGATE_SB_NR(setns)}, {ATTNGATE_SB_NR(mount)}, {ATTNGATE_SB_NR(umount2)},
                          {ATTNGATE_SB_NR(pivot_root)}, {ATTNGATE_SB_NR(chroot)}, {ATTNGATE_SB_NR(bpf)},
                          {ATTNGATE_SB_NR(keyctl)}, {ATTNGATE_SB_NR(add_key)}, {ATTNGATE_SB_NR(request_key)},
                          {ATTNGATE_SB_NR(init_module)}, {ATTNGATE_SB_NR(finit_module)},
                          {ATTNGATE_SB_NR(delete_module)}, {ATTNGATE_SB_NR(kexec_load)},
                          {ATTNGATE_SB_NR(kexec_file_load)}, {ATTNGATE_SB_NR(reboot)}, {ATTNGATE_SB_NR(swapon)},
                          {ATTNGATE_SB_NR(swapoff)}, {ATTNGATE_SB_NR(settimeofday)},
                          {ATTNGATE_SB_NR(clock_settime)}, {ATTNGATE_SB_NR(userfaultfd)},
                          {ATTNGATE_SB_NR(io_uring_setup)}, {ATTNGATE_SB_NR(perf_event_open)}})
    deny(c, nr, name);
}

void deny_processes(scmp_filter_ctx c) {
  // clone makes a process unless CLONE_THREAD is set (flags are argument 0 on x86_64); clone3's
  // flags sit in memory the filter cannot read, so it is ENOSYS and glibc falls back to clone.
  deny_if(c, ATTNGATE_SB_NR(clone), SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  deny(c, ATTNGATE_SB_NR(clone3), ENOSYS);
}

void deny_others(scmp_filter_ctx c, pid_t self) {
  // Signals only to itself (its pid is the worker's, before and after exec): kill(0) and kill(-1)
  // reach the judge's group and every process of the uid.
  for (auto [nr, name] : {std::pair{ATTNGATE_SB_NR(kill)}, {ATTNGATE_SB_NR(tkill)}, {ATTNGATE_SB_NR(tgkill)},
                          {ATTNGATE_SB_NR(rt_sigqueueinfo)}, {ATTNGATE_SB_NR(rt_tgsigqueueinfo)}})
    deny_if(c, nr, name, SCMP_A0(SCMP_CMP_NE, uint64_t(self)));
  // Same-uid processes' priorities, limits, CPUs and memory: nice 19 or RLIMIT_CPU on the
  // baseline worker or the judge needs no capability.
  for (auto [nr, name] : {std::pair{ATTNGATE_SB_NR(prlimit64)}, {ATTNGATE_SB_NR(sched_setaffinity)},
                          {ATTNGATE_SB_NR(sched_setscheduler)}, {ATTNGATE_SB_NR(sched_setparam)},
                          {ATTNGATE_SB_NR(sched_setattr)}, {ATTNGATE_SB_NR(migrate_pages)},
                          {ATTNGATE_SB_NR(move_pages)}})
    deny_unless_self(c, nr, name, 0, self);
  deny_if(c, ATTNGATE_SB_NR(setpriority), SCMP_A0(SCMP_CMP_NE, PRIO_PROCESS));  // a group, a user
  deny_unless_self(c, ATTNGATE_SB_NR(setpriority), 1, self);
  deny_if(c, ATTNGATE_SB_NR(ioprio_set), SCMP_A0(SCMP_CMP_NE, 1));  // IOPRIO_WHO_PROCESS
  deny_unless_self(c, ATTNGATE_SB_NR(ioprio_set), 1, self);
  // Typing into the judge's terminal (the worker shares it).
  deny_if(c, ATTNGATE_SB_NR(ioctl), SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
  deny_if(c, ATTNGATE_SB_NR(ioctl), SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
}

}  // namespace

std::string seccomp_build() {
  const scmp_version* v = seccomp_version();
  return "libseccomp " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->micro) + (ATTNGATE_SECCOMP_STATIC ? " (static)" : " (shared)");
}

void seccomp_load_filter(pid_t self) {
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!ctx) throw Unavailable("seccomp", "seccomp_init failed");
  // A binary search over syscall numbers: every syscall pays the filter, the timed ones included.
  ATTNGATE_SB_SECCOMP(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2), "optimize");
  deny_plain(ctx.get());
  deny_processes(ctx.get());
  deny_others(ctx.get(), self);
  const int rc = seccomp_load(ctx.get());
  if (rc < 0) throw Unavailable("seccomp", std::string("seccomp_load: ") + std::strerror(-rc));
}

#else

std::string seccomp_build() { return {}; }

void seccomp_load_filter(pid_t) {
  throw Unavailable("seccomp", "attngate_sandbox was built without libseccomp (not found at configure time, or ATTNGATE_SECCOMP=OFF)");
}

#endif

}  // namespace attngate::sandbox::detail
