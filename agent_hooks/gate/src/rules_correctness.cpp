#include "attngate/gate/rules_correctness.hpp"

#include <cmath>
#include <optional>

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;

// A verify result's failing reasons, when every one is the verifier's "not deterministic:" and
// none says the second call left elements unwritten (skipped work is wrong output, not a race).
bool only_nondeterministic(const verify::ResultDocument& result) {
  bool any = false;
  for (const auto& run : result.runs) {
    if (run.pass) continue;
    if (run.reasons.empty()) return false;  // a failure without a reason: not this one
    for (const auto& text : run.reasons) {
      if (text.rfind(kNotDeterministicPrefix, 0) != 0 || text.find(kLeftUnwrittenPhrase) != std::string::npos)
        return false;
      any = true;
    }
  }
  return any;
}

void judge_verify_status(ScenarioResult& row, const verify::ResultDocument& r, const std::string& test,
                         const Policy& policy, Reasons& reasons, VerifyTally& tally) {
  const std::string& id = row.id;
  if (r.kernel_tree_sha256 && is_sha256_hex(*r.kernel_tree_sha256)) tally.verified_trees.insert(*r.kernel_tree_sha256);
  else if (r.status == "passed" || r.status == "failed") tally.verified_unhashed.push_back(id);
  const std::string& status = r.status;
  const std::string result_seed = r.base_seed.value_or("");
  row.status = status;
  row.base_seed = result_seed;
  if (tally.base_seed.empty()) tally.base_seed = result_seed;
  std::string first_reason;
  auto finite = [](double v) { return std::isfinite(v) ? std::optional<double>(v) : std::nullopt; };
  for (const auto& run : r.runs) {
    if (auto v = finite(run.o.max_abs)) row.o_max_abs = std::max(row.o_max_abs.value_or(0), *v);
    if (auto v = finite(run.lse.max_abs)) row.lse_max_abs = std::max(row.lse_max_abs.value_or(0), *v);
    if (!run.pass) row.failed_distributions.push_back(run.distribution);
    if (first_reason.empty() && !run.pass)
      first_reason = run.distribution + ": " + (run.reasons.empty() ? std::string("failed") : run.reasons[0]);
  }
  const std::string replay = "replay: ATTNGATE_SEED=" + result_seed + " ctest -R '" + test + "$'";
  if (status == "passed") {
    row.correct = true;
  } else if (status == "failed" && only_nondeterministic(r)) {
    // Within the error bounds, but a repeated call differs: its own reason, and a policy.
    row.nondeterministic = true;
    row.correct = !policy.nondeterminism_fail;
    row.flags = {"NONDETERMINISTIC"};
    if (policy.nondeterminism_fail)
      reasons.add("NONDETERMINISTIC", id, id + " (" + first_reason + "); " + replay + " (settings.nondeterminism: fail)");
  } else if (status == "failed") {
    row.correct = false;
    reasons.add("CORRECTNESS_FAILED", id,
                id + " (" + (first_reason.empty() ? std::string("see the test output") : first_reason) + "); " + replay);
  } else if (status == "skipped") {
    reasons.add("TEST_SKIPPED", id, test + " was skipped: " + r.detail);
    if (r.skip_reason == "no_device" && tally.no_device_detail.empty()) tally.no_device_detail = r.detail;
  } else if (status == "error") {
    reasons.add("TEST_CRASHED", id, test + " threw: " + r.detail);
  } else {
    reasons.add("TEST_CRASHED", id, test + " wrote an unknown status '" + status + "'");
  }
}

ScenarioResult judge_verify_result(const ReportInputs& in, const std::string& kernel, const Scenario& s,
                                   const Policy& policy, const Freshness& freshness, const StartRecords& started,
                                   Reasons& reasons, VerifyTally& tally) {
  ScenarioResult row;
  row.id = s.id;
  row.shape = scenario_summary(s);
  const fs::path file = result_file(in, kernel, s.id);
  const std::string test = "verify." + kernel + "." + s.id;
  std::string err;
  std::optional<json> res;
  std::optional<verify::ResultDocument> doc;
  // The document as verify::ResultDocument (attngate/verify/result_document.hpp); a file that is not
  // one (no or another schema, a field of the wrong type) is unreadable, with the reason.
  auto parse = [&] {
    try {
      doc = verify::parse_result_document(*res);
    } catch (const json::exception& e) {
      err = file.string() + ": not a " + verify::kVerifyResultSchema + ": " + e.what();
    }
    return doc.has_value();
  };
  if (!fs::exists(file)) {
    row.status = "missing";
    // Every gate verify test had ended when gate.performance started (it waits for them: plan.cpp).
    auto [code, detail] = started.missing(file.filename().string(), "no result " + file.filename().string() + " (" + test + ")",
                                          in.verify_timeout_s, started.started_ms("gate.performance"));
    reasons.add(code, s.id, detail);
  } else if (!freshness.fresh(file)) {
    row.status = "stale";
    reasons.add("TEST_CRASHED", s.id, file.string() + " is older than this gate run: the test did not run" + freshness.stale_note);
  } else if (!(res = read_json(file, &err)) || !parse()) {
    row.status = "unreadable";
    reasons.add("TEST_CRASHED", s.id, err);
  } else {
    judge_verify_status(row, *doc, test, policy, reasons, tally);
  }
  return row;
}

}  // namespace attngate::hooks
