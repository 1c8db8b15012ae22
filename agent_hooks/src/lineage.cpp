#include "attngate/hooks/lineage.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "attngate/verify/schema_check.hpp"

namespace attngate::hooks {
namespace {

using nlohmann::json;

// agent_hooks/schema/lineage_record.schema.json, read and parsed once from the source tree (a harness
// file): every line of every read is checked against it.
const verify::SchemaValidator& lineage_schema() {
  static const verify::SchemaValidator validator = [] {
    const std::filesystem::path file = std::filesystem::path(ATTNGATE_HOOKS_SOURCE_DIR) / "schema" / "lineage_record.schema.json";
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot read the lineage schema " + file.string());
    return verify::SchemaValidator(json::parse(in));
  }();
  return validator;
}

std::string first_problems(const std::vector<std::string>& problems) {
  std::string out;
  for (size_t i = 0; i < problems.size() && i < 3; ++i) out += (i ? "; " : "") + problems[i];
  return out;
}

std::runtime_error sys_error(const std::string& what, const std::filesystem::path& file) {
  return std::runtime_error(what + " " + file.string() + ": " + std::strerror(errno));
}

// Closes the descriptor (and so releases its flock) on every path out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

void lock(int fd, int how, const std::filesystem::path& file) {
  while (::flock(fd, how) != 0) {
    if (errno != EINTR) throw sys_error("cannot lock", file);
  }
}

std::string read_all(int fd, const std::filesystem::path& file) {
  std::string text;
  char buf[65536];
  off_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw sys_error("cannot read", file);
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    off += n;
  }
  return text;
}

void write_all(int fd, const std::string& data, const std::filesystem::path& file) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw sys_error("cannot append to", file);
    }
    done += static_cast<std::size_t>(n);
  }
}

LineageContents parse_lines(const std::string& text, const std::filesystem::path& file) {
  LineageContents c;
  std::size_t start = 0, line_no = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    bool terminated = end != std::string::npos;
    if (!terminated) end = text.size();
    ++line_no;
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      const json j = json::parse(line);
      c.records.push_back(j.get<Record>());
      // Kept (the version numbers count it), and named: a line another writer changed.
      if (const auto problems = lineage_schema().problems(j); !problems.empty())
        c.issues.push_back({file, line_no, std::string("a record that does not follow ") + kLineageSchema + ": " +
                                               first_problems(problems)});
    } catch (const std::exception& e) {
      std::string why = terminated ? "skipped an unparseable record"
                                   : "skipped a truncated last record (a write was interrupted)";
      c.issues.push_back({file, line_no, why + ": " + e.what()});
    }
  }
  return c;
}

void fsync_dir(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

std::string LineageIssue::str() const { return file.string() + ":" + std::to_string(line) + ": " + message; }

std::vector<Record> LineageContents::evaluations() const {
  std::vector<Record> out;
  for (const auto& r : records)
    if (r.is_evaluation()) out.push_back(r);
  return out;
}

std::optional<Record> LineageContents::last_evaluation() const {
  for (auto it = records.rbegin(); it != records.rend(); ++it)
    if (it->is_evaluation()) return *it;
  return std::nullopt;
}

LineageContents Lineage::read() const {
  Fd fd(::open(file_.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return {};
    throw sys_error("cannot open", file_);
  }
  lock(fd.get(), LOCK_SH, file_);
  return parse_lines(read_all(fd.get(), file_), file_);
}

Record Lineage::append(const std::function<Record(const LineageContents&, int)>& build, bool evaluation) {
  auto dir = file_.parent_path();
  bool created_dir = false;
  if (!dir.empty() && !std::filesystem::exists(dir)) {
    std::filesystem::create_directories(dir);
    created_dir = true;
  }
  Fd fd(::open(file_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw sys_error("cannot open", file_);
  lock(fd.get(), LOCK_EX, file_);

  std::string text = read_all(fd.get(), file_);
  LineageContents earlier = parse_lines(text, file_);
  int evaluations = 0;
  for (const auto& r : earlier.records) evaluations += r.is_evaluation() ? 1 : 0;
  Record record = build(earlier, evaluation ? evaluations + 1 : evaluations);

  const json doc = record;
  if (const auto problems = lineage_schema().problems(doc); !problems.empty())
    throw std::runtime_error(std::string("a lineage record that does not follow ") + kLineageSchema +
                             " (agent_hooks/schema/lineage_record.schema.json) was not written: " + first_problems(problems));
  std::string line = doc.dump() + "\n";
  // Terminate a line a crash left unfinished, so it stays one skipped line and ours starts clean.
  if (!text.empty() && text.back() != '\n') line.insert(line.begin(), '\n');
  write_all(fd.get(), line, file_);
  if (::fsync(fd.get()) != 0) throw sys_error("cannot fsync", file_);
  if (created_dir) fsync_dir(dir);
  return record;
}


}  // namespace attngate::hooks
