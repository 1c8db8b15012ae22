#pragma once
// The machine-readable result of `attngate gate --json` (schema attngate.gate_result/1): one JSON
// object on stdout, nothing else there. One typed definition for the writer and the tests; the JSON
// Schema is agent_hooks/schema/gate_result.schema.json, whose required keys a unit test checks
// against these structs' keys.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/hooks/commands.hpp"
#include "attngate/verify/result_document.hpp"  // std::optional <-> null

namespace attngate::hooks {

inline constexpr const char* kGateResultSchema = "attngate.gate_result/1";

struct GateResultGeomean {
  std::optional<double> speedup, ci_low, ci_high, kernel_speedup, wall_speedup;
  std::optional<double> target, scenario_floor;  // what the verdict was judged against
  std::string baseline;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GateResultGeomean, speedup, ci_low, ci_high, kernel_speedup,
                                                wall_speedup, target, scenario_floor, baseline)

struct GateResultScenario {
  std::string id;
  std::optional<double> speedup, ci_low, ci_high;
  std::optional<bool> correct;
  std::optional<double> fraction_of_best_baseline;  // candidate TFLOPS / the best measured baseline's
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GateResultScenario, id, speedup, ci_low, ci_high, correct,
                                                fraction_of_best_baseline)

struct GateResultQuestion {
  std::string id, text, trigger;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GateResultQuestion, id, text, trigger)

// An evaluation: the verdict and everything the agent acts on.
struct GateResult {
  std::string schema = kGateResultSchema;
  std::string verdict;  // pass | fail | dry_run_pass | dry_run_fail
  int exit_code = 0;
  std::vector<Reason> reasons;  // {code, scenarios, detail}
  GateResultGeomean geomean;
  std::vector<GateResultScenario> scenarios;
  std::vector<Signal> signals;  // the supervisor's, the digest and escalation included
  std::optional<GateResultQuestion> question;
  int version = 0;     // the lineage version this evaluation was recorded as
  std::string report;  // the report.json it judged
  bool dry_run = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GateResult, schema, verdict, exit_code, reasons, geomean, scenarios,
                                                signals, question, version, report, dry_run)

// No evaluation: the gate could not run here (environment_failure, exit 3) or an error (exit 2).
struct GateNoResult {
  std::string schema = kGateResultSchema;
  std::string verdict;  // environment_failure | error
  int exit_code = 0;
  std::string detail;
  bool dry_run = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GateNoResult, schema, verdict, exit_code, detail, dry_run)

// pass | fail, or dry_run_pass | dry_run_fail for a dry-run record.
std::string gate_verdict_name(const Record& r);
GateResult make_gate_result(const Evaluation& e, int exit_code);

}  // namespace attngate::hooks
