#pragma once
// The build folder's gate lock: one `attngate gate` per build folder at a time, since two runs
// there rebuild, clear and rewrite each other's outcomes and report.
#include <filesystem>
#include <memory>
#include <string>

namespace attngate::hooks {

class BuildLock {
 public:
  // Tries an exclusive flock on `file` without waiting. On success writes our pid into it (for the
  // message a second run prints); on failure returns null and sets `holder` to the pid the holder
  // wrote ("unknown" when it wrote none). Throws when the file cannot be opened.
  static std::unique_ptr<BuildLock> try_acquire(const std::filesystem::path& file, std::string& holder);
  ~BuildLock();
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;

 private:
  explicit BuildLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace attngate::hooks
