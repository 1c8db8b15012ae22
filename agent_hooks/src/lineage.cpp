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

// A lineage line keeps of each scenario what the hooks read back: of the two kernels' timings only
// the launch shape the supervisor compares (report.json keeps the rest).
json lineage_scenarios(const std::vector<ScenarioResult>& scenarios) {
  json out = json::array();
  for (const auto& s : scenarios) {
    json j = s;
    j["candidate"] = {{"kernel_count", s.candidate.kernel_count}, {"streams", s.candidate.streams}};
    j["baseline"] = {{"kernel_count", s.baseline.kernel_count}, {"streams", s.baseline.streams}};
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

void to_json(json& j, const Record& r) {
  j = json{{"schema", kLineageSchema}, {"type", r.type}, {"version", r.version}, {"time", r.time}};
  if (!r.source.empty()) j["source"] = r.source;
  if (!r.session.empty()) j["session"] = r.session;
  if (r.is_evaluation()) {
    j["candidate_sha256"] = r.candidate_sha256;
    if (!r.candidate_tree_sha256.empty()) j["candidate_tree_sha256"] = r.candidate_tree_sha256;
    j["git"] = {{"commit", r.git_commit}, {"dirty", r.git_dirty}, {"candidate_dirty", r.candidate_dirty}};
    j["verdict"] = r.verdict;
    j["reasons"] = r.reasons;
    j["target"] = r.target;
    j["geomean"] = r.geomean;
    j["scenarios"] = lineage_scenarios(r.scenarios);
    if (!r.baselines.empty()) j["baselines"] = r.baselines;
    if (r.churn) j["churn"] = {{"added", r.churn->added}, {"readded", r.churn->readded}, {"share", r.churn->share()}};
    j["signals"] = json::array();
    for (const auto& s : r.signals) j["signals"].push_back({{"trigger", s.trigger}, {"kind", s.kind}, {"detail", s.detail}});
    j["triggers"] = r.triggers;
    if (!r.report.empty()) j["report"] = r.report;
    if (r.build_exit) j["build_exit"] = *r.build_exit;
    if (r.ctest_exit) j["ctest_exit"] = *r.ctest_exit;
    if (r.suspicious_confirmed) j["suspicious_confirmed"] = true;
    if (r.dry_run) j["dry_run"] = true;
    if (r.receipt)
      j["receipt"] = {{"machine_id", r.receipt->machine_id},
                      {"report_sha256", r.receipt->report_sha256},
                      {"hmac_sha256", r.receipt->hmac_sha256}};
  }
  if (!r.note.empty()) j["note"] = r.note;
  j["questions"] = json::array();
  for (const auto& q : r.questions) j["questions"].push_back({{"trigger", q.trigger}, {"id", q.id}});
  if (r.type == "commit") {
    j["questions_before"] = json::array();
    for (const auto& q : r.questions_before) j["questions_before"].push_back({{"trigger", q.trigger}, {"id", q.id}});
  }
}

void from_json(const json& j, Record& r) {
  if (!j.is_object()) throw std::runtime_error("a lineage record must be a JSON object");
  r = Record{};
  r.type = j.value("type", std::string("evaluation"));
  j.at("version").get_to(r.version);
  r.time = j.value("time", std::string{});
  r.source = j.value("source", std::string{});
  r.session = j.value("session", std::string{});
  r.candidate_sha256 = j.value("candidate_sha256", std::string{});
  r.candidate_tree_sha256 = j.value("candidate_tree_sha256", std::string{});
  if (auto g = j.find("git"); g != j.end() && g->is_object()) {
    r.git_commit = g->value("commit", std::string{});
    r.git_dirty = g->value("dirty", false);
    r.candidate_dirty = g->value("candidate_dirty", true);
  }
  r.verdict = j.value("verdict", std::string{});
  if (auto it = j.find("reasons"); it != j.end()) it->get_to(r.reasons);
  if (auto it = j.find("target"); it != j.end()) it->get_to(r.target);
  if (auto it = j.find("geomean"); it != j.end()) it->get_to(r.geomean);
  if (auto it = j.find("scenarios"); it != j.end()) it->get_to(r.scenarios);
  if (auto it = j.find("baselines"); it != j.end()) it->get_to(r.baselines);
  if (auto it = j.find("churn"); it != j.end() && it->is_object())
    r.churn = ChurnFigure{it->at("added").get<std::size_t>(), it->at("readded").get<std::size_t>()};
  if (auto it = j.find("signals"); it != j.end())
    for (const auto& s : *it)
      r.signals.push_back({s.at("trigger").get<std::string>(), s.at("kind").get<std::string>(),
                           s.value("detail", std::string{})});
  if (auto it = j.find("triggers"); it != j.end()) it->get_to(r.triggers);
  if (auto it = j.find("questions"); it != j.end())
    for (const auto& q : *it) r.questions.push_back({q.at("trigger").get<std::string>(), q.at("id").get<std::string>()});
  if (auto it = j.find("questions_before"); it != j.end())
    for (const auto& q : *it)
      r.questions_before.push_back({q.at("trigger").get<std::string>(), q.at("id").get<std::string>()});
  r.report = j.value("report", std::string{});
  if (auto it = j.find("build_exit"); it != j.end() && it->is_number()) r.build_exit = it->get<int>();
  if (auto it = j.find("ctest_exit"); it != j.end() && it->is_number()) r.ctest_exit = it->get<int>();
  r.suspicious_confirmed = j.value("suspicious_confirmed", false);
  r.dry_run = j.value("dry_run", false);
  r.note = j.value("note", std::string{});
  if (auto it = j.find("receipt"); it != j.end() && it->is_object())
    r.receipt = Receipt{it->value("machine_id", std::string{}), it->value("report_sha256", std::string{}),
                        it->value("hmac_sha256", std::string{})};
}

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
