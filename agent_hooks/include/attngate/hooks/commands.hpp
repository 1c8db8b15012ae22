#pragma once
// The `attngate` subcommands, callable without the CLI so tests can drive them.
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/gate/gate_report.hpp"
#include "attngate/gate/plan.hpp"
#include "attngate/gate/git.hpp"
#include "attngate/hooks/lineage.hpp"
#include "attngate/hooks/questions.hpp"
#include "attngate/gate/report.hpp"
#include "attngate/hooks/supervisor.hpp"

namespace attngate::hooks {

// Exit codes shared by the subcommands.
inline constexpr int kExitPass = 0;     // gate/record: pass; commit: committed; others: done
inline constexpr int kExitFail = 1;     // gate/record: fail; commit: refused
inline constexpr int kExitError = 2;    // usage or configuration error, unreadable input
inline constexpr int kExitRefuse = 2;   // stop-hook: refuse the stop (what Claude Code expects)
// gate: this machine or build cannot run the gate (no configured build, no cmake/ctest, the build
// folder's lock held by another gate, no GPU); nothing is recorded, since nothing was evaluated.
inline constexpr int kExitEnvironment = 3;
// gate --dry-run: simulated pass and fail (never 0, so a dry run cannot pass for a real one).
inline constexpr int kExitDryRunPass = 10;
inline constexpr int kExitDryRunFail = 11;

struct Context {
  std::filesystem::path repo;                      // repository root
  std::filesystem::path lineage;                   // default <repo>/.attngate/lineage.jsonl
  std::filesystem::path candidate;                 // default <repo>/kernels/candidate/candidate.cu
  std::filesystem::path hooks_dir;                 // where supervisor.yaml and questions.yaml live
  std::optional<std::filesystem::path> supervisor_file;  // user thresholds
  std::vector<std::filesystem::path> question_files;     // user questions
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
};

// Fills the defaults above from the working directory (repo = git toplevel, else the directory).
Context default_context(std::ostream& out, std::ostream& err);
std::filesystem::path default_hooks_dir(const std::filesystem::path& repo);
std::filesystem::path state_dir(const Context& ctx);  // <lineage's folder>, holds versions/
// The repository's own scenarios/ when it has a gate suite, else the shipped one.
std::filesystem::path scenarios_dir(const Context& ctx);
// The candidate's folder (the candidate source's parent, kernels/candidate/): what the tree hash
// covers and what `attngate commit` commits.
std::filesystem::path candidate_dir(const Context& ctx);

struct GateOptions {
  std::filesystem::path build_dir;       // default <repo>/build/gpu
  std::optional<double> target;          // geomean target, passed as ATTNGATE_GEOMEAN_TARGET
  std::vector<std::string> ctest_args;   // appended to ctest's command line
  bool quiet = false;                    // build/ctest output to <build>/gate/attngate_gate.log
  bool progress = true;                  // with quiet: a line per stage on stderr (not the stop hook's)
  bool json = false;                     // one JSON object (gate_result.hpp) on stdout, the text on stderr
  bool dry_run = false;                  // simulate the gate on the CPU (dry_run.hpp)
  std::string note;                      // stored with the evaluation in the lineage
};

// Where an evaluation came from and what attngate saw around the report.
struct EvaluationInput {
  GateReport report;
  std::string report_path;
  std::string source = "record";
  std::string session;
  std::optional<int> build_exit, ctest_exit;
  std::vector<std::string> agent_triggers_on_fail;  // e.g. "done" from the stop hook
  // Set by a gate run before it builds, so the record names what was built and measured; left
  // empty, evaluate() reads the candidate and git as they are now.
  std::optional<std::string> candidate_source;
  std::string candidate_tree_sha256;
  std::optional<GitState> git;
  std::string report_sha256;          // of report.json's bytes as the gate read them
  // Set only by a gate run's re-run of a suspicious gain (README: Confirming a suspicious gain);
  // a report's own "suspicious_confirmed" is not read.
  bool suspicious_confirmed = false;
  std::optional<std::string> receipt_key;  // gate runs: sign the record (receipt.hpp)
  std::string note;                        // the agent's --note
  bool dry_run = false;                    // a simulated evaluation (gate --dry-run)
};

struct Evaluation {
  Record record;
  std::vector<std::pair<std::string, std::string>> questions;  // (trigger, text) as printed
  std::vector<Question> asked;                                 // the same questions from the bank
};

// The shipped supervisor.yaml and questions.yaml with the user's files on top.
SupervisorConfig load_supervisor(const Context& ctx);
QuestionBank load_bank(const Context& ctx);

// Appends the record (signals, churn, questions) and prints the short verdict.
Evaluation evaluate(const Context& ctx, const EvaluationInput& input);
std::string format_verdict(const Context& ctx, const Evaluation& e);

// 0 pass, 1 fail, 3 environment failure (not recorded); with dry_run 10 or 11 (dry_run.hpp).
int cmd_gate(const Context& ctx, const GateOptions& options);
int cmd_record(const Context& ctx, const std::filesystem::path& report, const std::string& note = "");
// The lineage as a table; with elites, the best version per scenario group instead (redirect.hpp).
int cmd_history(const Context& ctx, bool elites = false);
// One evaluated version, and two compared (inspect.cpp). 0, or 2 for an unknown version.
int cmd_show(const Context& ctx, int version, bool json);
int cmd_diff(const Context& ctx, int version_a, int version_b, bool json);
// Commits the candidate folder if the latest evaluation (or evaluation `version`, when no later
// one measured its tree or its candidate.cu) is a signed, passing gate run of this tree at this
// HEAD on this machine (README: Committing). 0 committed, 1 refused, 2 error.
int cmd_commit(const Context& ctx, int version = 0);
int cmd_ask(const Context& ctx, const std::string& trigger, const std::optional<std::filesystem::path>& report);
// `attngate report`: judges the outcomes of a gate run and writes report.json/report.md (or, with
// prepare, clears them and writes the start marker). Empty paths default under build_dir
// (default <repo>/build/gpu). 0 pass (or prepared), 1 fail, 2 configuration error.
int cmd_report(const Context& ctx, ReportInputs inputs, const std::filesystem::path& build_dir, bool prepare);
// `attngate plan`: the CTest script of the gate's own tests (gate/plan.hpp) from verify's list of
// the gate's verify tests; written through a rename. Exit 0, or 2 for a list it cannot use.
int cmd_plan(const Context& ctx, const std::filesystem::path& batches, const std::filesystem::path& out,
             const GateTools& tools);
// What an agent runner's Stop hook writes on stdin (Claude Code's names; other fields are ignored).
struct StopHookInput {
  bool stop_hook_active = false;  // this stop follows one the hook refused
  std::string session_id;         // refusals are counted per session
};
// Lenient, field by field, since a hook that cannot read its input must not block the agent (nor,
// by losing stop_hook_active, re-run the gate on every stop): each field is taken where it has its
// type; empty or unparsable input reads as the defaults.
inline StopHookInput parse_stop_hook_input(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  StopHookInput in;
  if (!j.is_object()) return in;
  if (const auto it = j.find("stop_hook_active"); it != j.end() && it->is_boolean()) in.stop_hook_active = it->get<bool>();
  if (const auto it = j.find("session_id"); it != j.end() && it->is_string()) in.session_id = it->get<std::string>();
  return in;
}
// hook_input: the JSON the agent runner writes on stdin (may be empty).
int cmd_stop_hook(const Context& ctx, const std::string& hook_input, const GateOptions& options);

// `attngate profile` (cmd_profile.cpp): one scenario's call of `kernel` (and of `compare`) under
// Nsight Compute. 0 done, 2 usage error, 3 no ncu, no counters or no build.
struct ProfileOptions {
  std::filesystem::path build_dir;  // default <repo>/build/gpu
  std::string kernel = "candidate", compare;
  std::string suite = "gate", scenario, shape;
  std::string ncu;                  // default: on PATH, else /usr/local/cuda/bin/ncu
  bool json = false;                // the document (attngate.profile/1) instead of the summary
};
int cmd_profile(const Context& ctx, const ProfileOptions& options);

// The measured context printed with a `limit` question.
std::string limit_context(const Record& latest);

}  // namespace attngate::hooks
