#pragma once
// The lineage P_t: one JSON line per evaluated version (and per question asked through `ask`).
// Appends hold an exclusive flock for the whole read-count-append, so two concurrent gate runs get
// distinct, consecutive version numbers and never interleave bytes; a record is one write() ending
// in '\n' followed by fsync, so a crash loses at most the record being written.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attngate/hooks/lineage_record.hpp"  // Record: one line, typed

namespace attngate::hooks {

struct LineageIssue {
  std::filesystem::path file;
  std::size_t line = 0;
  std::string message;
  std::string str() const;  // "file:line: message"
};

struct LineageContents {
  std::vector<Record> records;  // every parseable line, in file order
  std::vector<LineageIssue> issues;
  std::vector<Record> evaluations() const;
  std::optional<Record> last_evaluation() const;
};

class Lineage {
 public:
  explicit Lineage(std::filesystem::path file) : file_(std::move(file)) {}
  const std::filesystem::path& file() const { return file_; }

  // Under a shared lock, so a concurrent append is seen whole or not at all.
  LineageContents read() const;

  // Under the exclusive lock: reads the file, calls build(earlier, version) where version is the next
  // evaluation number (for an ask: the latest evaluation's), appends what it returns and returns it.
  // A truncated last line left by a crash is terminated first so the new record starts its own line.
  Record append(const std::function<Record(const LineageContents& earlier, int version)>& build,
                bool evaluation = true);

 private:
  std::filesystem::path file_;
};


}  // namespace attngate::hooks
