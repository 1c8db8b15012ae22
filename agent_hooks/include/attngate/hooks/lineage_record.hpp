#pragma once
// One line of the lineage (schema attngate.lineage/1): what every append writes and every read
// parses (lineage.cpp checks both against agent_hooks/schema/lineage_record.schema.json), and the
// `record` of `attngate show --json`. One typed definition for the writer and the readers;
// agent_hooks/README.md ("The lineage") says what each field means.
//
// The parts are (de)serialized by nlohmann's macros. The record itself cannot be: a line leaves out
// what the macros would write as "", false or null (source, session, note, report,
// candidate_tree_sha256, baselines, churn, build_exit, ctest_exit, suspicious_confirmed, dry_run,
// receipt), only an evaluation carries the evaluation's fields and only a commit its
// questions_before. Its to_json/from_json below are the one place that names the record's keys.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/gate/report.hpp"  // Reason, Target, Geomean, ScenarioResult, Baselines; std::optional <-> null

namespace attngate::hooks {

inline constexpr const char* kLineageSchema = "attngate.lineage/1";

// A question asked (`questions`, `questions_before`): both keys are required, a line with a question
// lacking one is unparseable.
struct QuestionRef {
  std::string trigger;
  std::string id;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(QuestionRef, trigger, id)

// A supervisor signal (`signals`; also gate_result.hpp's).
struct Signal {
  std::string trigger;  // stall | human | cycle | suspicious | regression
  std::string kind;     // e.g. no_new_best, repeat, oscillation, churn, step, peak, ...
  std::string detail;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Signal, trigger, kind, detail)

// `git`: the repository when the version was evaluated.
struct RecordGit {
  std::string commit;            // HEAD (for a gate run: when it started)
  bool dirty = false;            // tracked files differed from HEAD
  bool candidate_dirty = false;  // the candidate differed from HEAD (or was untracked)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RecordGit, commit, dirty, candidate_dirty)

// `churn`: `added` and `readded` are required; `share` is written for other readers and computed
// again here.
struct ChurnFigure {
  std::size_t added = 0;    // non-blank lines added since the previous version
  std::size_t readded = 0;  // of those, byte-identical to a line deleted earlier in the lineage
  double share() const { return added ? static_cast<double>(readded) / static_cast<double>(added) : 0.0; }
};
inline void to_json(nlohmann::json& j, const ChurnFigure& c) {
  j = {{"added", c.added}, {"readded", c.readded}, {"share", c.share()}};
}
inline void from_json(const nlohmann::json& j, ChurnFigure& c) {
  c = ChurnFigure{j.at("added").get<std::size_t>(), j.at("readded").get<std::size_t>()};
}

// `receipt`: what `attngate gate` signs with the machine's key (see receipt.hpp), so `attngate
// commit` can tell its records from hand-written ones.
struct Receipt {
  std::string machine_id;
  std::string report_sha256;  // of report.json's bytes as the gate read them; empty when it had none
  std::string hmac_sha256;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Receipt, machine_id, report_sha256, hmac_sha256)

// Of a scenario's two timings a lineage line keeps only the launch shape, which the supervisor
// compares (report.json keeps the rest); read back, the other figures of Timing are null.
struct LaunchShape {
  std::optional<std::int64_t> kernel_count, streams;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LaunchShape, kernel_count, streams)

struct Record {
  std::string type = "evaluation";  // or "ask", or "commit" (written by `attngate commit`)
  int version = 0;                  // evaluations: 1 + earlier evaluations; asks: the version asked about
  std::string time;                 // ISO 8601, UTC
  std::string source;               // gate | record | stop_hook | ask | commit | dry_run
  std::string session;              // the agent session (stop hook), when known
  std::string candidate_sha256;       // candidate.cu's bytes (churn, versions store)
  std::string candidate_tree_sha256;  // the whole candidate folder (candidate_tree.hpp), before the build
  RecordGit git;
  std::string verdict;
  std::vector<Reason> reasons;
  Target target;
  Geomean geomean;
  std::vector<ScenarioResult> scenarios;  // candidate and baseline: only the launch shape (LaunchShape)
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

namespace lineage_detail {

// A member a line leaves out while it holds its default: an empty string, list or map, false, nullopt.
template <class T>
void put_unless_default(nlohmann::json& j, const char* key, const T& v) {
  bool is_default;
  if constexpr (std::is_same_v<T, bool>) is_default = !v;
  else if constexpr (requires { v.has_value(); }) is_default = !v.has_value();
  else is_default = v.empty();
  if (!is_default) j[key] = v;
}

// A member read when the line has it; an absent one keeps Record's default.
template <class T>
void get_if_present(const nlohmann::json& j, const char* key, T& v) {
  if (const auto it = j.find(key); it != j.end()) it->get_to(v);
}

inline nlohmann::json lineage_scenario(const ScenarioResult& s) {
  nlohmann::json j = s;
  // Newer than the lineage's first records: written only when set, so theirs read back unchanged.
  if (s.failed_distributions.empty()) j.erase("failed_distributions");
  j["candidate"] = LaunchShape{s.candidate.kernel_count, s.candidate.streams};
  j["baseline"] = LaunchShape{s.baseline.kernel_count, s.baseline.streams};
  return j;
}

}  // namespace lineage_detail

inline void to_json(nlohmann::json& j, const Record& r) {
  using lineage_detail::put_unless_default;
  j = {{"schema", kLineageSchema}, {"type", r.type}, {"version", r.version}, {"time", r.time}, {"questions", r.questions}};
  put_unless_default(j, "source", r.source);
  put_unless_default(j, "session", r.session);
  put_unless_default(j, "note", r.note);
  if (r.type == "commit") j["questions_before"] = r.questions_before;
  if (!r.is_evaluation()) return;
  nlohmann::json scenarios = nlohmann::json::array();
  for (const auto& s : r.scenarios) scenarios.push_back(lineage_detail::lineage_scenario(s));
  j.update({{"candidate_sha256", r.candidate_sha256}, {"git", r.git}, {"verdict", r.verdict}, {"reasons", r.reasons},
            {"target", r.target}, {"geomean", r.geomean}, {"scenarios", std::move(scenarios)},
            {"signals", r.signals}, {"triggers", r.triggers}});
  put_unless_default(j, "candidate_tree_sha256", r.candidate_tree_sha256);
  put_unless_default(j, "baselines", r.baselines);
  put_unless_default(j, "churn", r.churn);
  put_unless_default(j, "report", r.report);
  put_unless_default(j, "build_exit", r.build_exit);
  put_unless_default(j, "ctest_exit", r.ctest_exit);
  put_unless_default(j, "suspicious_confirmed", r.suspicious_confirmed);
  put_unless_default(j, "dry_run", r.dry_run);
  put_unless_default(j, "receipt", r.receipt);
}

// Every field by type; absent fields take Record's defaults. `version` is required: the lineage
// numbers its versions by it, so a line without one is unparseable (skipped) rather than counted.
inline void from_json(const nlohmann::json& j, Record& r) {
  using lineage_detail::get_if_present;
  if (!j.is_object()) throw std::runtime_error("a lineage record must be a JSON object");
  r = Record{};
  j.at("version").get_to(r.version);
  get_if_present(j, "type", r.type);
  get_if_present(j, "time", r.time);
  get_if_present(j, "source", r.source);
  get_if_present(j, "session", r.session);
  get_if_present(j, "candidate_sha256", r.candidate_sha256);
  get_if_present(j, "candidate_tree_sha256", r.candidate_tree_sha256);
  get_if_present(j, "git", r.git);
  // A line from before `candidate_dirty` was written: the candidate is not known to match HEAD.
  if (const auto g = j.find("git"); g != j.end() && !g->contains("candidate_dirty")) r.git.candidate_dirty = true;
  get_if_present(j, "verdict", r.verdict);
  get_if_present(j, "reasons", r.reasons);
  get_if_present(j, "target", r.target);
  get_if_present(j, "geomean", r.geomean);
  get_if_present(j, "scenarios", r.scenarios);
  get_if_present(j, "baselines", r.baselines);
  get_if_present(j, "churn", r.churn);
  get_if_present(j, "signals", r.signals);
  get_if_present(j, "triggers", r.triggers);
  get_if_present(j, "questions", r.questions);
  get_if_present(j, "questions_before", r.questions_before);
  get_if_present(j, "report", r.report);
  get_if_present(j, "build_exit", r.build_exit);
  get_if_present(j, "ctest_exit", r.ctest_exit);
  get_if_present(j, "suspicious_confirmed", r.suspicious_confirmed);
  get_if_present(j, "dry_run", r.dry_run);
  get_if_present(j, "receipt", r.receipt);
  get_if_present(j, "note", r.note);
}

}  // namespace attngate::hooks
