// Landlock: the worker's view of the filesystem, TCP and its neighbours. Every right the running
// ABI knows is handled, so whatever no rule grants is denied.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#if __has_include(<linux/landlock.h>)
#include <linux/landlock.h>
#endif

#include "sandbox_internal.hpp"

// Debian 12's headers (linux 6.1) stop at ABI 2; the rest is stable kernel ABI.
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_EXECUTE
#define LANDLOCK_ACCESS_FS_EXECUTE (1ULL << 0)
#define LANDLOCK_ACCESS_FS_WRITE_FILE (1ULL << 1)
#define LANDLOCK_ACCESS_FS_READ_FILE (1ULL << 2)
#define LANDLOCK_ACCESS_FS_READ_DIR (1ULL << 3)
#define LANDLOCK_ACCESS_FS_REMOVE_DIR (1ULL << 4)
#define LANDLOCK_ACCESS_FS_REMOVE_FILE (1ULL << 5)
#define LANDLOCK_ACCESS_FS_MAKE_CHAR (1ULL << 6)
#define LANDLOCK_ACCESS_FS_MAKE_DIR (1ULL << 7)
#define LANDLOCK_ACCESS_FS_MAKE_REG (1ULL << 8)
#define LANDLOCK_ACCESS_FS_MAKE_SOCK (1ULL << 9)
#define LANDLOCK_ACCESS_FS_MAKE_FIFO (1ULL << 10)
#define LANDLOCK_ACCESS_FS_MAKE_BLOCK (1ULL << 11)
#define LANDLOCK_ACCESS_FS_MAKE_SYM (1ULL << 12)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace attngate::sandbox::detail {
namespace {

// The ABI 6 layout; the kernel reads only the size it is given, so older ABIs get a prefix.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;
  uint64_t scoped = 0;
};

struct __attribute__((packed)) PathBeneath {
  uint64_t allowed_access;
  int32_t parent_fd;
};
constexpr int kRulePathBeneath = 1;

constexpr uint64_t kRead = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr uint64_t kExec = LANDLOCK_ACCESS_FS_EXECUTE | kRead;
constexpr uint64_t kDevice = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
// TRUNCATE: fopen("w") of /proc/self/task/<tid>/comm, which CUDA names its threads with.
constexpr uint64_t kProcSelf = kRead | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
constexpr uint64_t kWrite = kRead | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                            LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |
                            LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
                            LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM |
                            LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_TRUNCATE;
// CUDA IPC events are files the judge makes in /dev/shm (cuda.shm.*), which the worker opens
// read-write; without them cudaIpcOpenEventHandle fails. It creates, truncates and removes none.
constexpr uint64_t kShm = kRead | LANDLOCK_ACCESS_FS_WRITE_FILE;
// Rights a rule on a non-directory may carry (the kernel refuses the others).
constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
                                 LANDLOCK_ACCESS_FS_IOCTL_DEV;

uint64_t handled_fs(int abi) {
  uint64_t fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0..12
  if (abi >= 2) fs |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return fs;
}

struct Grant {
  std::string path;
  uint64_t access;
  bool required;  // a missing default path is skipped; a missing --read/--exec/--scratch is an error
};

// Device nodes CUDA opens read-write: every /dev/nvidia* (the nvidia-caps folder included).
void add_nvidia_nodes(std::vector<Grant>& g) {
  DIR* d = ::opendir("/dev");
  if (!d) return;
  while (const dirent* e = ::readdir(d))
    if (std::strncmp(e->d_name, "nvidia", 6) == 0)
      g.push_back({std::string("/dev/") + e->d_name, kDevice | LANDLOCK_ACCESS_FS_READ_DIR, false});
  ::closedir(d);
}

std::vector<Grant> grants(const Options& o, const std::string& scratch) {
  std::vector<Grant> g;
  for (const char* p : {"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/opt", "/sys"}) g.push_back({p, kRead, false});
  for (const char* p : {"/usr", "/lib", "/lib64"}) g.push_back({p, kExec, false});  // the dynamic loader, libraries
  // /dev is listable, but only the nodes below are readable: a raw disk is readable by root's uid
  // without any capability, and would hand out every file on it.
  g.push_back({"/dev", LANDLOCK_ACCESS_FS_READ_DIR, false});
  for (const char* p : {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"}) g.push_back({p, kDevice, false});
  add_nvidia_nodes(g);
  g.push_back({"/dev/shm", kShm, false});
  for (const char* p : {"/proc/driver", "/proc/cpuinfo", "/proc/meminfo", "/proc/devices", "/proc/sys", "/proc/stat"})
    g.push_back({p, kRead, false});
  for (const auto& p : o.read_paths) g.push_back({p, kRead, true});
  for (const auto& p : o.exec_paths) g.push_back({p, kExec, true});
  g.push_back({scratch, kWrite, true});
  return g;
}

void add_rule(int ruleset, int fd, uint64_t access, const std::string& what) {
  PathBeneath pb{access, fd};
  ATTNGATE_SB_CHECK_ON(::syscall(__NR_landlock_add_rule, ruleset, kRulePathBeneath, &pb, 0), what);
}

void add_grant(int ruleset, const Grant& g, uint64_t handled) {
  const int fd = ::open(g.path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && !g.required) return;
  ATTNGATE_SB_CHECK_ON(fd, g.path);
  struct stat st {};
  ATTNGATE_SB_CHECK_ON(::fstat(fd, &st), g.path);
  const uint64_t access = (S_ISDIR(st.st_mode) ? g.access : g.access & kFileRights) & handled;
  add_rule(ruleset, fd, access, g.path);
  ::close(fd);
}

// The launcher becomes the worker by exec, so its own /proc/<pid> is the worker's: granted by
// descriptor of the resolved /proc/self, never the whole of /proc (other processes' fd/, mem).
void add_proc_self(int ruleset, uint64_t handled) {
  const int fd = ATTNGATE_SB_CHECK_ON(::open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC), "/proc/self");
  add_rule(ruleset, fd, kProcSelf & handled, "/proc/self");
  ::close(fd);
}

}  // namespace

int landlock_abi() {
  const long abi = ::syscall(__NR_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? -errno : int(abi);
}

int landlock_ruleset(const Options& options, const std::string& scratch, int abi) {
  RulesetAttr attr;
  attr.handled_access_fs = handled_fs(abi);
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {  // TCP: no rule, so no bind and no connect at all
    attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {  // no abstract unix socket nor signal outside this domain
    attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    size = sizeof(attr);
  }
  const int ruleset = int(ATTNGATE_SB_CHECK(::syscall(__NR_landlock_create_ruleset, &attr, size, 0)));
  for (const Grant& g : grants(options, scratch)) add_grant(ruleset, g, attr.handled_access_fs);
  add_proc_self(ruleset, attr.handled_access_fs);
  return ruleset;
}

void landlock_enforce(int ruleset_fd) {
  ATTNGATE_SB_CHECK(::syscall(__NR_landlock_restrict_self, ruleset_fd, 0));
  ATTNGATE_SB_CHECK(::close(ruleset_fd));
}

}  // namespace attngate::sandbox::detail
