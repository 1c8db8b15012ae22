#pragma once
// The correctness rules: one verify result per scenario of every suite the gate checks, fresh from
// this run and read as verify::ResultDocument, judged passed, failed, nondeterministic (by policy),
// skipped or crashed.
#include <set>
#include <string>
#include <vector>

#include "attngate/gate/inputs.hpp"
#include "attngate/gate/policy.hpp"
#include "attngate/gate/reasons.hpp"
#include "attngate/gate/report.hpp"
#include "attngate/scenario.hpp"
#include "attngate/verify/result_document.hpp"

namespace attngate::hooks {

// The verifier's reason prefix for a repeated call that differs (verify/verify_case.hpp), and the
// phrase it adds when the second call left poisoned elements unwritten (skipped work, not a race).
inline constexpr const char* kNotDeterministicPrefix = "not deterministic:";
inline constexpr const char* kLeftUnwrittenPhrase = "left unwritten";

// A verify result's failing reasons, when every one is the verifier's "not deterministic:" and
// none says the second call left elements unwritten (skipped work is wrong output, not a race).
bool only_nondeterministic(const verify::ResultDocument& result);

// What the verify results say beyond each scenario's row.
struct VerifyTally {
  std::string base_seed;                       // the first result's, for replay
  std::string no_device_detail;                // a result skipped for want of a CUDA device
  std::set<std::string> verified_trees;        // kernel_tree_sha256 of the worker each result came from
  std::vector<std::string> verified_unhashed;  // results that ran but name no build
};

// The judged status of one result the verifier wrote (row.status is its status; row.correct is set).
void judge_verify_status(ScenarioResult& row, const verify::ResultDocument& r, const std::string& test,
                         const Policy& policy, Reasons& reasons, VerifyTally& tally);

// One scenario's row: its result file found, fresh and readable, then judged; a missing one
// explained by its batch's start record.
ScenarioResult judge_verify_result(const ReportInputs& in, const std::string& kernel, const Scenario& s,
                                   const Policy& policy, const Freshness& freshness, const StartRecords& started,
                                   Reasons& reasons, VerifyTally& tally);

}  // namespace attngate::hooks
