// Shared by the sandbox's sources: checked calls and the pieces each mechanism needs.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "attngate/worker/sandbox.hpp"

namespace attngate::sandbox::detail {

// "kernels/worker/src/x.cpp" rather than the build machine's absolute path.
inline const char* short_file(const char* f) {
  const char* k = std::strstr(f, "kernels/worker/");
  return k ? k : f;
}

[[noreturn]] inline void fail(const char* file, int line, const std::string& call, int err) {
  throw Error(std::string(short_file(file)) + ":" + std::to_string(line) + ": " + call + ": " + std::strerror(err));
}

// For calls that return -1 and set errno.
template <typename T>
T check(T rc, const char* file, int line, const std::string& call) {
  if (rc == T(-1)) fail(file, line, call, errno);
  return rc;
}

#define ATTNGATE_SB_CHECK(expr) ::attngate::sandbox::detail::check((expr), __FILE__, __LINE__, #expr)
// The same, naming what the call was about (a path).
#define ATTNGATE_SB_CHECK_ON(expr, what) \
  ::attngate::sandbox::detail::check((expr), __FILE__, __LINE__, std::string(#expr) + " [" + (what) + "]")

// Mechanisms named in ATTNGATE_SANDBOX_PRETEND_MISSING (comma-separated; test-only).
bool pretend_missing(const std::string& mechanism);

// Highest Landlock ABI, or -errno.
int landlock_abi();
// Builds the ruleset for `options` (opening every path while the process still holds its
// capabilities) and returns its descriptor.
int landlock_ruleset(const Options& options, const std::string& scratch, int abi);
void landlock_enforce(int ruleset_fd);

// Whether this build has libseccomp, and its version ("" when not).
std::string seccomp_build();
// Loads the process filter. Throws Unavailable if the build lacks it or the kernel refuses it.
void seccomp_load_filter(pid_t self);

}  // namespace attngate::sandbox::detail
