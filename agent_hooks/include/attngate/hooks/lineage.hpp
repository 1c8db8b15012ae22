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

#include <nlohmann/json.hpp>

#include "attngate/gate/report.hpp"

namespace attngate::hooks {

inline constexpr const char* kLineageSchema = "attngate.lineage/1";

struct QuestionRef {
  std::string trigger;
  std::string id;
};

struct Signal {
  std::string trigger;  // stall | human | cycle | suspicious | regression
  std::string kind;     // e.g. no_new_best, repeat, oscillation, churn, step, peak, ...
  std::string detail;
};

struct ChurnFigure {
  std::size_t added = 0;    // non-blank lines added since the previous version
  std::size_t readded = 0;  // of those, byte-identical to a line deleted earlier in the lineage
  double share() const { return added ? static_cast<double>(readded) / static_cast<double>(added) : 0.0; }
};

// What `attngate gate` signs with the machine's key (see receipt.hpp), so `attngate commit` can tell
// its records from hand-written ones.
struct Receipt {
  std::string machine_id;
  std::string report_sha256;  // of report.json's bytes as the gate read them; empty when it had none
  std::string hmac_sha256;
};

struct Record {
  std::string type = "evaluation";  // or "ask", or "commit" (written by `attngate commit`)
  int version = 0;                  // evaluations: 1 + earlier evaluations; asks: the version asked about
  std::string time;                 // ISO 8601, UTC
  std::string source;               // gate | record | stop_hook | ask | commit
  std::string session;              // the agent session (stop hook), when known
  std::string candidate_sha256;       // candidate.cu's bytes (churn, versions store)
  std::string candidate_tree_sha256;  // the whole candidate folder (candidate_tree.hpp), before the build
  std::string git_commit;             // HEAD (for a gate run: when it started)
  bool git_dirty = false;
  bool candidate_dirty = false;
  std::string verdict;
  std::vector<Reason> reasons;
  Target target;
  Geomean geomean;
  std::vector<ScenarioResult> scenarios;
  Baselines baselines;
  std::optional<ChurnFigure> churn;
  std::vector<Signal> signals;
  std::vector<std::string> triggers;
  std::vector<QuestionRef> questions;
  std::vector<QuestionRef> questions_before;  // commit records: the questions asked since the previous commit
  std::string report;
  std::optional<int> build_exit, ctest_exit;
  bool suspicious_confirmed = false;  // the report's re-measurement confirmed a suspicious gain
  std::optional<Receipt> receipt;     // gate runs only
  std::string note;                   // the agent's `--note` on gate or record: what this version tried
  bool dry_run = false;               // `gate --dry-run`: simulated, nothing measured (its own lineage file)

  bool is_evaluation() const { return type == "evaluation"; }
};

void to_json(nlohmann::json& j, const Record& r);
void from_json(const nlohmann::json& j, Record& r);

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
