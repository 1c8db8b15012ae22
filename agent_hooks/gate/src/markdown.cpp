#include "attngate/gate/markdown.hpp"

#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <fmt/printf.h>

namespace attngate::hooks {

namespace {

// A figure, or "n/a" when it is absent or not finite (as the report's JSON would hold it: null).
std::string opt_fmt(const char* f, const std::optional<double>& v) {
  return v && std::isfinite(*v) ? fmt::sprintf(f, *v) : std::string("n/a");
}
std::string or_unknown(const std::string& s) { return s.empty() ? std::string("unknown") : s; }
std::string pair_ms(const std::optional<double>& c, const std::optional<double>& b) {
  return opt_fmt("%.4f", c) + " / " + opt_fmt("%.4f", b);
}

// "cudnn 610.0 (52%)": the scenario's best measured baseline and the candidate's fraction of it.
std::string best_baseline_cell(const ScenarioResult& s) {
  if (!s.best_baseline) return "n/a";
  return s.best_baseline->library + " " + opt_fmt("%.1f", s.best_baseline->tflops) + " (" +
         (s.fraction_of_best && std::isfinite(*s.fraction_of_best) ? fmt::format("{:.0f}%", 100 * *s.fraction_of_best)
                                                                  : std::string("n/a")) + ")";
}

// The judge's clock over the timed scenarios (bench/README.md): the round trip it subtracted and
// its resolution, the worst scenario's share of its call. "" when no scenario has the figures.
std::string judge_clock_line(const std::vector<ScenarioResult>& scenarios) {
  std::optional<double> worst, handoff, solo;
  std::string where;
  for (const auto& s : scenarios) {
    const auto pct = s.baseline.judge_resolution_pct;
    if (!pct) continue;
    if (!worst || *pct > *worst) worst = pct, where = s.id;
    handoff = s.baseline.handoff_us;
    solo = s.baseline.solo_handoff_us;
  }
  if (!worst) return "";
  return "- the judge's clock: a round trip of " + opt_fmt("%.1f", handoff) + " us subtracted from every call (alone: " +
         opt_fmt("%.1f", solo) + " us); its resolution at most " + fmt::format("{:.3f}", *worst) + " % of a call (" + where + ")\n";
}

void summary(std::ostringstream& md, const GateReport& r) {
  const Target& t = r.target;
  const Geomean& g = r.geomean;
  md << "# attngate gate report: " << (r.verdict == "pass" ? "PASS" : "FAIL") << "\n\n";
  md << "Kernel `" << t.kernel << "` against `" << t.baseline << "` on suite `" << r.suite << "` (" << r.scenarios.size()
     << " scenarios).\n\n";
  md << "- geomean speedup (event time): **" << opt_fmt("%.4fx", g.speedup) << "**, 95% CI [" << opt_fmt("%.4f", g.ci_low)
     << ", " << opt_fmt("%.4f", g.ci_high) << "]\n";
  md << "- target: CI lower bound >= " << opt_fmt("%.4fx", t.geomean) << " (" << t.geomean_source << "); scenario floor "
     << opt_fmt("%.4fx", t.scenario_floor) << " (" << t.scenario_floor_source << ")\n";
  md << "- geomean on CUPTI kernel time: " << opt_fmt("%.4fx", g.kernel_speedup)
     << "; on wall time: " << opt_fmt("%.4fx", g.wall_speedup) << "\n";
  md << judge_clock_line(r.scenarios);
  const Correctness& c = r.correctness;
  md << "- correctness: " << c.passed << " of " << c.scenarios << " scenarios correct over the suites "
     << fmt::format("{}", fmt::join(c.suites, ", ")) << " (the gate suite is also timed)\n";
  const PolicyRecord& pol = r.policy;
  md << "- policy: the candidate runs in a worker process; its clocks agree with the baseline's within "
     << fmt::format("{:.3g}", pol.clock_tolerance) << " x the slower event time + " << fmt::format("{:.3g}", pol.clock_slack_ms)
     << " ms (event-time pairs) or + " << fmt::format("{:.3g}", pol.wall_slack_ms)
     << " ms (the judge's wall clock); no clock below the device's floor; foreign kernels: candidate "
     << pol.candidate_foreign_kernels << ", baseline " << pol.baseline_foreign_kernels << "; nondeterminism: "
     << pol.nondeterminism << "\n\n";
}

void reasons(std::ostringstream& md, const GateReport& r) {
  md << "## Reasons\n\n";
  if (r.reasons.empty()) md << "None: every check passed.\n";
  for (const auto& reason : r.reasons) {
    md << "- **" << reason.code << "**";
    if (!reason.scenarios.empty()) md << " [" << fmt::format("{}", fmt::join(reason.scenarios, ", ")) << "]";
    if (!reason.detail.empty()) md << ": " << reason.detail;
    md << "\n";
  }
}

void scenario_table(std::ostringstream& md, const GateReport& r) {
  md << "\n## Scenarios\n\n"
     << "Times are medians per call, candidate / baseline. Speedup: baseline event time / candidate event time, "
        "95% bootstrap CI.\n\n"
     << "| scenario | correct | O max err | speedup [95% CI] | event ms | kernel ms | wall ms | TFLOPS (% peak) | "
        "best baseline TFLOPS (fraction) | flags |\n"
     << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& s : r.scenarios) {
    const Timing &c = s.candidate, &b = s.baseline;
    // No correctness from this run: the row's status says why (missing, stale, unreadable).
    const std::string correct = s.correct ? (*s.correct ? "yes" : "**no**") : s.status;
    md << "| " << s.id << " | " << correct << " | " << opt_fmt("%.3g", s.o_max_abs) << " | " << opt_fmt("%.4f", s.speedup)
       << " [" << opt_fmt("%.4f", s.ci_low) << ", " << opt_fmt("%.4f", s.ci_high) << "] | "
       << pair_ms(c.event_ms, b.event_ms) << " | " << pair_ms(c.kernel_ms, b.kernel_ms) << " | "
       << pair_ms(c.wall_ms, b.wall_ms) << " | " << opt_fmt("%.1f", s.tflops) << " (" << opt_fmt("%.1f%%", s.percent_of_peak)
       << ") | " << best_baseline_cell(s) << " | " << fmt::format("{}", fmt::join(s.flags, ", ")) << " |\n";
  }
}

void provenance(std::ostringstream& md, const GateReport& r) {
  const Provenance& p = r.provenance;
  const bench::SmClockSummary clock = p.sm_clock.value_or(bench::SmClockSummary{});
  md << "\n## Provenance\n\n";
  md << "- GPU: " << or_unknown(p.gpu) << "; driver " << or_unknown(p.driver) << " (CUDA " << p.cuda_driver
     << "); CUDA runtime " << or_unknown(p.cuda) << "\n";
  md << "- SM clock: median " << opt_fmt("%.0f", p.sm_clock_mhz) << " MHz over the scenarios' medians ("
     << opt_fmt("%.0f", clock.lowest_median_mhz) << " to " << opt_fmt("%.0f", clock.highest_median_mhz)
     << "), lowest reading " << opt_fmt("%.0f", clock.min_mhz) << ", device maximum "
     << opt_fmt("%.0f", clock.device_max_mhz) << "; throttle reasons 0x"
     << fmt::format("{:x}", static_cast<unsigned long long>(clock.event_reasons)) << "\n";
  md << "- attngate commit: " << or_unknown(p.attngate_commit) << (p.attngate_dirty ? " (working tree differs from it)" : "")
     << "\n";
  md << "- candidate: `" << p.candidate << "`, sha256 " << p.candidate_sha256 << "\n";
  md << "- candidate tree `" << p.candidate_tree << "`: " << p.candidate_tree_sha256.value_or("not hashed")
     << " at report time; built into the worker: " << p.candidate_tree_sha256_built.value_or("unknown") << "\n";
  const HarnessRecord& h = r.harness;
  md << "- harness: ";
  if (!h.verified) md << "not verified: " << h.why;
  else if (h.modified.empty()) md << "identical to the commit";
  else md << "**modified**: " << fmt::format("{}", fmt::join(h.modified, ", "));
  md << " (" << h.sha256.size() << " files hashed, in report.json)\n";
  if (!p.base_seed.empty())
    md << "- verify base seed: " << p.base_seed << " (replay with `ATTNGATE_SEED=" << p.base_seed << "`)\n";
  const BestBaselinesInfo& bb = r.best_baselines;
  md << "- best baselines: " << (bb.note.empty() ? bb.file.value_or("") + " (updated " + bb.updated + ")" : bb.note) << "\n";
  md << "- gate wall time: " << opt_fmt("%.1f s", r.wall_s) << "\n";
}

}  // namespace

std::string render_markdown(const GateReport& r) {
  std::ostringstream md;
  summary(md, r);
  reasons(md, r);
  scenario_table(md, r);
  provenance(md, r);
  return md.str();
}

}  // namespace attngate::hooks
