#pragma once
// What the command files (cmd_*.cpp, command_support.cpp) share and nothing else uses: the
// helpers of more than one `attngate` subcommand. Private to agent_hooks/src.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/printf.h>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "attngate/gate/candidate_tree.hpp"
#include "attngate/gate/digest.hpp"
#include "attngate/gate/git.hpp"
#include "attngate/gate/process.hpp"
#include "attngate/gate/reason_codes.hpp"
#include "attngate/gate/report.hpp"
#include "attngate/hooks/build_lock.hpp"
#include "attngate/hooks/churn.hpp"
#include "attngate/hooks/commands.hpp"
#include "attngate/hooks/dry_run.hpp"
#include "attngate/hooks/git_commits.hpp"
#include "attngate/hooks/gate_result.hpp"
#include "attngate/hooks/lineage.hpp"
#include "attngate/hooks/progress.hpp"
#include "attngate/hooks/questions.hpp"
#include "attngate/hooks/receipt.hpp"
#include "attngate/hooks/redirect.hpp"
#include "attngate/hooks/supervisor.hpp"
#include "attngate/hooks/version_store.hpp"
#include "attngate/verify/json_document.hpp"

namespace attngate::hooks::cmd {

std::string fx(const std::optional<double>& v);  // "1.130x", or "n/a"
std::string candidate_rel(const Context& ctx);
std::string candidate_dir_rel(const Context& ctx);
std::string read_tree(const Context& ctx, TreeListing& listing);
std::string current_tree_sha256(const Context& ctx);
std::string short_or(const std::string& sha, const char* none);
std::string tree_name(const std::string& sha);
std::string short_sha(const std::string& s);
std::string knowledge_pointer(const Context& ctx, const Question& q, const char* indent = "    ");
void print_issues(const Context& ctx, const std::vector<LineageIssue>& issues);
std::string limit_context_of(const std::vector<ScenarioResult>& scenarios, const Baselines& baselines);
void copy_report(Record& r, const GateReport& report);
std::pair<double, std::string> commit_bar(const Context& ctx, const Record& r);
// The same bar for the supervisor's step signal (supervisor.hpp StepBar).
StepBar committed_step_bar(const Context& ctx, const Record& r);
std::unique_ptr<PendingVersion> take_version_copy(const Context& ctx, const std::string& tree);
void keep_version_copy(const Context& ctx, PendingVersion* copy, int version);
GateReport report_with_ctest_status(GateReport report, int ctest_exit);

// cmd_gate.cpp: one gate run and its lineage record (the stop hook runs the same).
std::filesystem::path build_dir_of(const Context& ctx, const GateOptions& o);
struct GateOutcome {
  std::optional<Evaluation> evaluation;  // empty on an environment failure
  std::string environment_failure;
  std::string remeasured;  // the line on the re-run of a suspicious gain, when there was one
};
GateOutcome gate_and_record(const Context& ctx, const GateOptions& o, EvaluationInput in);

// cmd_commit.cpp: the questions asked since the version before `version` was committed.
std::vector<QuestionRef> questions_before(const LineageContents& c, int version);

}  // namespace attngate::hooks::cmd
