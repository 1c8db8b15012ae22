#include "attngate/hooks/build_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace attngate::hooks {

namespace {

std::string read_holder(int fd) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string{};
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

std::unique_ptr<BuildLock> BuildLock::try_acquire(const std::filesystem::path& file, std::string& holder) {
  // O_CLOEXEC: cmake and ctest must not inherit (and so keep) the lock.
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + file.string() + ": " + std::strerror(errno));
  int rc;
  while ((rc = ::flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    int err = errno;
    holder = read_holder(fd);
    ::close(fd);
    if (err == EWOULDBLOCK) return nullptr;
    throw std::runtime_error("cannot lock " + file.string() + ": " + std::strerror(err));
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    ::close(fd);
    throw std::runtime_error("cannot write " + file.string() + ": " + std::strerror(errno));
  }
  return std::unique_ptr<BuildLock>(new BuildLock(fd));
}

BuildLock::~BuildLock() { ::close(fd_); }

}  // namespace attngate::hooks
