#include "attngate/hooks/gate_result.hpp"

namespace attngate::hooks {

std::string gate_verdict_name(const Record& r) { return r.dry_run ? "dry_run_" + r.verdict : r.verdict; }

GateResult make_gate_result(const Evaluation& e, int exit_code) {
  const Record& r = e.record;
  GateResult g;
  g.verdict = gate_verdict_name(r);
  g.exit_code = exit_code;
  g.reasons = r.reasons;
  g.geomean = {r.geomean.speedup,    r.geomean.ci_low,    r.geomean.ci_high,      r.geomean.kernel_speedup,
               r.geomean.wall_speedup, r.target.geomean, r.target.scenario_floor, r.target.baseline};
  for (const auto& s : r.scenarios)
    g.scenarios.push_back({s.id, s.speedup, s.ci_low, s.ci_high, s.correct, s.fraction_of_best});
  g.signals = r.signals;
  if (!e.asked.empty()) g.question = GateResultQuestion{e.asked.front().id, e.asked.front().text, e.asked.front().trigger};
  g.version = r.version;
  g.report = r.report;
  g.dry_run = r.dry_run;
  return g;
}

}  // namespace attngate::hooks
