#include "attngate/gate/rules_timing.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <fmt/printf.h>

#include "attngate/gate/reason_codes.hpp"

namespace attngate::hooks {

namespace {

// A figure the rules may use: present and finite (a NaN or inf names nothing).
std::optional<double> fin(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? v : std::nullopt;
}
std::optional<double> fin(const std::optional<std::int64_t>& v) {
  return v ? std::optional<double>(double(*v)) : std::nullopt;
}
std::string opt_fmt(const char* f, const std::optional<double>& v) { return v ? fmt::sprintf(f, *v) : std::string("n/a"); }
std::string opt_int(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string("null"); }

using Field = std::optional<double> Timing::*;

// (e)-(h): the judge's clock of two kernels in workers (bench/README.md). (e) the worker's own events
// must agree with it as the baseline's do; (f) the judge's work before its clock starts (poison,
// fresh contents, flush) takes as long for both, since GPU work of another context in that window
// would be work outside the clock; (g) the judge's hold kernel was not kept off the GPU longer than
// the baseline's (a time slice of another context is about 0.14 ms or more on the H200); (h) the
// bench moves the candidate worker's figures by its own word on its round trip, at most
// worker_clock_trust_us (gate.yaml, read by attngate_bench too); the baseline's, never.
void judge_clock_disagreements(const Timing& c, const Timing& b, double tol, double trust_us,
                               std::vector<std::string>& out) {
  const auto wc = fin(c.worker_event_ms), ec = fin(c.event_ms), wb = fin(b.worker_event_ms), eb = fin(b.event_ms);
  if (wc && ec && wb && eb && std::abs((*wc - *ec) - (*wb - *eb)) > tol)
    out.push_back(fmt::format("(e) the worker's events vs the judge's clock: worker event time minus judge time is "
                              "{:+.4f} ms for the candidate, {:+.4f} ms for the baseline; they differ by more than {:.4f} ms",
                              *wc - *ec, *wb - *eb, tol));
  const auto pc = fin(c.pre_ms), pb = fin(b.pre_ms);
  if (pc && pb && std::abs(*pc - *pb) > tol)
    out.push_back(fmt::format("(f) the judge's work before its clock starts took {:.4f} ms for the candidate, {:.4f} ms for "
                              "the baseline (tolerance {:.4f} ms): GPU work of another context ran in that window, outside "
                              "the clock", *pc, *pb, tol));
  const auto gc = fin(c.hold_gap_max_us), gb = fin(b.hold_gap_max_us);
  if (gc && gb && *gc > *gb + 1e3 * tol)
    out.push_back(fmt::format("(g) the judge's hold kernel was kept off the GPU for {:.1f} us during a call of the "
                              "candidate's (the baseline's longest: {:.1f} us): another context ran while the judge held "
                              "its stream, before the clock started", *gc, *gb));
  const auto hc = fin(c.round_trip_correction_us), hb = fin(b.round_trip_correction_us);
  if (hc && std::abs(*hc) > trust_us + 1e-6)
    out.push_back(fmt::format("(h) the candidate's round trip was corrected by {:+.2f} us, more than "
                              "worker_clock_trust_us ({:.2f} us)", *hc, trust_us));
  if (hb && std::abs(*hb) > 1e-6)
    out.push_back(fmt::format("(h) the baseline's round trip was corrected by {:+.2f} us; its clock is never moved", *hb));
}

}  // namespace

Timing judged_timing(const bench::KernelTiming& t) {
  using K = bench::KernelTiming;
  auto as_int = [](const std::optional<double>& v) {
    return v ? std::optional<std::int64_t>(std::llround(*v)) : std::nullopt;
  };
  Timing j;
  // The figures the rules read under the comparison's own names.
  using Copy = std::pair<std::optional<double> Timing::*, bench::Figure K::*>;
  for (auto [to, from] :
       {Copy{&Timing::event_ms, &K::event_ms}, {&Timing::kernel_ms, &K::kernel_ms}, {&Timing::span_ms, &K::span_ms},
        {&Timing::wall_ms, &K::wall_ms}, {&Timing::cycles, &K::cycles}, {&Timing::kernel_cycles, &K::kernel_cycles},
        {&Timing::tflops, &K::tflops}, {&Timing::pct_peak, &K::pct_peak},
        {&Timing::memcpy_per_call, &K::memcpy_per_call}, {&Timing::memset_per_call, &K::memset_per_call},
        {&Timing::sm_clock_mhz, &K::sm_clock_mhz}, {&Timing::traced_event_ms, &K::traced_event_ms},
        {&Timing::traced_wall_ms, &K::traced_wall_ms},
        {&Timing::cupti_minus_traced_event_us, &K::cupti_minus_traced_event_us}, {&Timing::isolated, &K::isolated},
        {&Timing::fresh_calls, &K::fresh_calls}, {&Timing::fresh_event_ms, &K::fresh_event_ms},
        {&Timing::fresh_wall_ms, &K::fresh_wall_ms}, {&Timing::checked_calls, &K::checked_calls},
        {&Timing::inventory_kernels, &K::inventory_kernels}, {&Timing::foreign_kernels, &K::foreign_kernels},
        {&Timing::judge_ms, &K::judge_ms}, {&Timing::worker_event_ms, &K::worker_event_ms},
        {&Timing::pre_ms, &K::pre_ms}, {&Timing::hold_gap_max_us, &K::hold_gap_max_us},
        {&Timing::handoff_us, &K::handoff_us}, {&Timing::reference_handoff_us, &K::reference_handoff_us},
        {&Timing::solo_handoff_us, &K::solo_handoff_us}, {&Timing::judge_resolution_us, &K::judge_resolution_us},
        {&Timing::judge_resolution_pct, &K::judge_resolution_pct}, {&Timing::alone_event_ms, &K::alone_event_ms},
        {&Timing::lowest_handoff_us, &K::lowest_handoff_us},
        {&Timing::round_trip_correction_us, &K::round_trip_correction_us}})
    j.*to = t.*from;
  // Counts as integers, under the report's names.
  j.kernel_count = as_int(t.kernels_per_call);
  j.kernel_count_min = t.kernel_count_min;
  j.kernel_count_max = t.kernel_count_max;
  j.kernel_count_changed = t.kernel_count_changed;
  j.streams = as_int(t.streams);
  j.foreign_stream_kernels = as_int(t.foreign_stream_kernels);
  j.traced_calls = as_int(t.traced_samples);
  j.held_timeouts = as_int(t.held_timeouts);
  j.kernel_names = t.kernel_names;
  j.process = t.process;
  j.foreign_kernel_names = t.foreign_kernel_names;
  return j;
}

Mismatch clock_mismatch(const Timing& cand, const Timing& base, bool wall_clock) {
  const Field clock = wall_clock ? &Timing::wall_ms : &Timing::event_ms;
  const char* clock_name = wall_clock ? "wall time" : "event time";
  auto ck = fin(cand.kernel_ms), cx = fin(cand.*clock);
  if (!ck || !cx || *ck <= 0) return {};
  const double ratio = *cx / *ck;
  const double excess = *cx - *ck;
  double base_excess = 0;
  if (auto bk = fin(base.kernel_ms), bx = fin(base.*clock); bk && bx && *bk > 0) base_excess = *bx - *bk;
  const double allowed = std::max(kMismatchExcessShare * *ck, kMismatchExcessMinMs);
  if (ratio > kMismatchRatio && excess - base_excess > allowed)
    return {true, fmt::format("{} {:.4f} ms is {:.2f}x the CUPTI kernel time {:.4f} ms; its excess {:.4f} ms exceeds the "
                              "baseline's {:.4f} ms by more than {:.4f} ms",
                              clock_name, *cx, ratio, *ck, excess, base_excess, allowed)};
  return {};
}

// (a)-(d): a figure the candidate lacks and the baseline has is a disagreement; one the baseline
// lacks is not compared.
std::vector<std::string> clock_disagreements(const Timing& c, const Timing& b, const Policy& p) {
  std::vector<std::string> out;
  const auto ec = fin(c.event_ms), eb = fin(b.event_ms);
  if (!ec || !eb || *ec <= 0 || *eb <= 0) {
    out.push_back(fmt::format("the event times cannot be compared (candidate {} ms, baseline {} ms)", opt_fmt("%.4f", ec),
                              opt_fmt("%.4f", eb)));
    return out;
  }
  const double tol = p.clock_tolerance * std::max(*ec, *eb) + p.clock_slack_ms;
  // The judge's wall clock spans the round trip to the worker: 0.5-0.9 ms on the H200, whose median
  // differed by up to 0.17 ms between two identical kernels (2026-12-01), so it gets its own slack.
  const double wall_tol = p.clock_tolerance * std::max(*ec, *eb) + p.wall_slack_ms;
  auto compare = [&](const std::string& label, Field x, Field ref, const char* x_key, const std::string& x_name,
                     const std::string& ref_name, double tol) {
    const auto xc = fin(c.*x), xb = fin(b.*x), rc = fin(c.*ref), rb = fin(b.*ref);
    if (!xb || *xb <= 0 || !rb) return;
    if (!xc || *xc <= 0 || !rc) {
      out.push_back(fmt::format("{}: the candidate has no {} ({}), the baseline {:.4f} ms", label, x_name, x_key, *xb));
      return;
    }
    const double dc = *xc - *rc, db = *xb - *rb;
    if (std::abs(dc - db) > tol)
      out.push_back(fmt::format("{}: {} minus {} is {:+.4f} ms for the candidate, {:+.4f} ms for the baseline; they differ "
                                "by {:.4f} ms > tolerance {:.4f} ms", label, x_name, ref_name, dc, db, std::abs(dc - db), tol));
  };
  compare("(a) wall vs event", &Timing::wall_ms, &Timing::event_ms, "wall_ms", "wall time", "event time", wall_tol);
  // Traced calls' wall time carries the worker's CUPTI flush (about 1.7 ms, varying by 0.5 ms), so
  // traced and untraced calls are compared on event time; (a) holds the untraced events to the wall.
  compare("(b) traced vs untraced", &Timing::traced_event_ms, &Timing::event_ms, "traced_event_ms", "traced event time",
          "untraced event time", tol);
  if (auto kc = fin(c.kernel_ms); !kc || *kc <= 0) {
    out.push_back("(c) CUPTI vs events: CUPTI saw no kernel time in the candidate's traced calls");
  } else if (auto db = fin(b.cupti_minus_traced_event_us)) {
    const auto dc = fin(c.cupti_minus_traced_event_us);
    if (!dc)
      out.push_back("(c) CUPTI vs events: the candidate has no cupti_minus_traced_event_us");
    else if (std::abs(*dc - *db) * 1e-3 > tol)
      out.push_back(fmt::format("(c) CUPTI vs events: CUPTI kernel time minus the event time of the same traced calls is "
                                "{:+.1f} us for the candidate, {:+.1f} us for the baseline; they differ by {:.4f} ms > "
                                "tolerance {:.4f} ms", *dc, *db, std::abs(*dc - *db) * 1e-3, tol));
  }
  if (auto fc = fin(c.fresh_calls), fb = fin(b.fresh_calls); fc && fb && *fc > 0 && *fb > 0) {
    compare("(d) fresh inputs vs the rest", &Timing::fresh_event_ms, &Timing::event_ms, "fresh_event_ms",
            "event time on fresh inputs", "event time", tol);
    compare("(d) fresh inputs vs the rest", &Timing::fresh_wall_ms, &Timing::wall_ms, "fresh_wall_ms",
            "wall time on fresh inputs", "wall time", wall_tol + 2 * p.wall_slack_ms);
  }
  if (fin(c.isolated).value_or(0) > 0 && fin(b.isolated).value_or(0) > 0)
    judge_clock_disagreements(c, b, tol, p.worker_clock_trust_us, out);
  return out;
}

// Judged only for a baseline in a worker (an in-process one has no round trip).
std::string baseline_disturbance(const Timing& b, const Policy& p) {
  if (fin(b.isolated).value_or(0) <= 0) return "";
  const auto solo = fin(b.solo_handoff_us), seen = fin(b.reference_handoff_us), gap = fin(b.hold_gap_max_us);
  if (!solo || *solo <= 0)
    return "the round trip to the baseline's worker was not measured alone (its worker must be the judge's first), "
           "so a disturbed baseline could not be told";
  std::vector<std::string> what;
  if (!seen || std::abs(*seen - *solo) > p.baseline_disturbed_us)
    what.push_back(fmt::format("its round trip to the judge was {} us in this scenario against {:.1f} us measured alone "
                               "(tolerance {:.1f} us)", opt_fmt("%.1f", seen), *solo, p.baseline_disturbed_us));
  if (gap && *gap > p.baseline_disturbed_us + 50)
    what.push_back(fmt::format("the judge's hold kernel was kept off the GPU for {:.1f} us during its calls", *gap));
  if (p.baseline_alone_tolerance > 0) {
    const auto alone = fin(b.alone_event_ms), seen_ms = fin(b.event_ms);
    if (!alone || *alone <= 0)
      what.push_back("its time alone, before the candidate's worker existed, was not measured");
    else if (!seen_ms ||
             std::abs(*seen_ms - *alone) > p.baseline_alone_tolerance * *alone + 1e-3 * p.baseline_alone_slack_us)
      what.push_back(fmt::format("its median time was {} ms beside the candidate against {:.4f} ms alone (tolerance {:.1f} % "
                                 "+ {:.1f} us)", opt_fmt("%.4f", seen_ms), *alone, 100 * p.baseline_alone_tolerance,
                                 p.baseline_alone_slack_us));
  }
  return what.empty() ? "" : fmt::format("the baseline was disturbed while it was timed: {} (another context ran on the GPU)",
                                         fmt::join(what, "; "));
}

// No call can beat doing the scenario's FLOPs at the dense peak or moving its minimum bytes at HBM
// bandwidth; every clock of the candidate is held to that floor. Without the figures to bound it
// the scenario fails too (hit with a "cannot be judged" detail).
Plausibility plausibility(const DeviceFloor& d, const Timing& c, const Timing& b, double wall_slack_ms) {
  const auto peak = fin(d.peak_tflops), hbm = fin(d.hbm_tbps), flops = fin(d.flops), bytes = fin(d.min_bytes),
             ec = fin(c.event_ms);
  std::vector<std::string> missing;
  if (!peak || *peak <= 0) missing.push_back("peak_tflops");
  if (!hbm || *hbm <= 0) missing.push_back("hbm_tbps");
  if (!flops || *flops <= 0) missing.push_back("flops");
  if (!bytes || *bytes <= 0) missing.push_back("min_bytes");
  if (!ec) missing.push_back("the candidate's event_ms");
  if (!missing.empty())
    return {true, fmt::format("cannot be judged: the comparison has no {}; the gate does not pass a time it cannot bound",
                              fmt::join(missing, ", ")), std::nullopt};
  const double compute_ms = 1e3 * *flops / (*peak * 1e12), memory_ms = 1e3 * *bytes / (*hbm * 1e12);
  const double floor_ms = std::max(compute_ms, memory_ms);
  std::vector<std::string> below;
  auto claim = [&](const std::string& what, double ms) {
    if (ms < floor_ms) below.push_back(fmt::format("{} {:.4f} ms", what, ms));
  };
  claim("event time", *ec);
  if (auto v = fin(c.span_ms); v && *v > 0) claim("CUPTI span", *v);
  if (auto v = fin(c.kernel_ms); v && *v > 0) claim("CUPTI kernel time", *v);
  // The judge's wall clock less the baseline's round trip, given the round trip's noise (wall_slack_ms):
  // on a tiny shape the difference alone can be below zero for an honest kernel.
  if (auto wc = fin(c.wall_ms), wb = fin(b.wall_ms), eb = fin(b.event_ms); wc && wb && eb)
    claim(fmt::format("wall time less the baseline's overhead ({:.4f} ms) plus the wall slack ({:.2f} ms)", *wb - *eb,
                      wall_slack_ms), *wc - (*wb - *eb) + wall_slack_ms);
  if (below.empty()) return {false, "", floor_ms};
  return {true, fmt::format("the candidate claims {}: below {:.4f} ms, which no call can beat ({:.4g} FLOP at the dense "
                            "peak {:.1f} TFLOPS take {:.4f} ms; {:.4g} bytes at {:.2f} TB/s take {:.4f} ms)",
                            fmt::join(below, ", "), floor_ms, *flops, *peak, compute_ms, *bytes, *hbm, memory_ms),
          floor_ms};
}

std::string foreign_kernels(const Timing& t, const std::string& role, const std::string& name, const char* key) {
  const std::vector<std::string>& names = t.foreign_kernel_names;
  const double count = std::max(double(names.size()), fin(t.foreign_kernels).value_or(0));
  if (count <= 0) return "";
  return fmt::format("{} '{}' launched {:.0f} kernel(s) its worker's build-time inventory lacks{} (settings.{}: fail)", role,
                     name, count, names.empty() ? "" : ": " + first_listed(names, 3, ", "), key);
}

// Either role: an interposing baseline would forge the clock the candidate is held to.
std::string forbidden_symbols(const bench::ComparisonDocument& P) {
  std::set<std::string> found;
  for (const auto& s : P.scenarios)
    for (const auto* t : {&s.kernel_timing, &s.base_timing})
      for (const auto& f : t->forbidden_symbols) found.insert(t->name + ": " + f);
  if (found.empty()) return "";
  return fmt::format("{} symbol(s) defined by a worker's kernel library that a library the worker links or its own code "
                     "also defines (kernels/worker/cmake/symbols.cmake): {}", found.size(),
                     first_listed({found.begin(), found.end()}, 4, "; "));
}

std::string sandbox_gaps(const bench::SandboxRecord& s) {
  if (!s.enabled) return "the sandbox (ATTNGATE_SANDBOX=off)";
  if (s.mechanisms.empty()) return "a record of their sandbox";
  std::vector<std::string> missing;
  for (const auto& m : s.mechanisms)
    if (!m.available) missing.push_back(m.name + " (" + m.detail + ")");
  return fmt::format("{}", fmt::join(missing, ", "));
}

// The bench's checks of the timed calls name what they caught (bench/README.md, failure_kind.hpp);
// anything else is a missing measurement.
std::string untimed_code(const bench::FailedScenario& f) {
  namespace kind = bench::failure_kind;
  static const std::map<std::string, std::string> code_of = {{kind::kSideStream, "SIDE_STREAM_WORK"},
                                                              {kind::kWrongOutput, "CORRECTNESS_FAILED"},
                                                              {kind::kStreamState, "STREAM_STATE"},
                                                              {kind::kJudgeClock, "CLOCK_DISAGREE"},
                                                              {kind::kBaselineClock, "BASELINE_DISTURBED"}};
  const auto it = code_of.find(f.kind);
  return it == code_of.end() ? "NO_PERF" : it->second;
}

namespace {

// A timed scenario's figures: both kernels' timings as the rules read them, the speedups and rates.
void fill_timed_row(ScenarioResult& row, const bench::ComparisonScenario& ps) {
  row.candidate = judged_timing(ps.kernel_timing);
  row.baseline = judged_timing(ps.base_timing);
  row.speedup = ps.speedup;
  row.ci_low = ps.speedup_ci95[0];
  row.ci_high = ps.speedup_ci95[1];
  row.kernel_speedup = ps.kernel_speedup;
  row.wall_speedup = ps.wall_speedup;
  row.tflops = row.candidate.tflops;
  row.percent_of_peak = row.candidate.pct_peak;
  row.calls = ps.calls;
}

using Flag = std::function<void(const std::string& code, const std::string& detail)>;

// What the candidate's call did besides its kernel's work: other streams, a varying kernel count,
// clocks far beyond its kernels' time, copies and memsets (a library control's are the library's:
// cuDNN makes one memset a call).
void judge_call_behaviour(const Timing& cand, const Timing& base, bool library_control, const Flag& flag) {
  const auto foreign = fin(cand.foreign_stream_kernels).value_or(0), streams = fin(cand.streams).value_or(0);
  if (foreign > 0 || streams > 1)
    flag("SIDE_STREAM_WORK", fmt::format("{:.0f} kernel(s) over the traced calls ran on a stream other than the harness "
                                         "stream; {:.0f} stream(s) used (baseline: {:.0f} such kernels)", foreign, streams,
                                         fin(base.foreign_stream_kernels).value_or(0)));
  if (cand.kernel_count_changed)
    flag("KERNEL_COUNT_CHANGED", fmt::format("kernels per call varied from {} to {} between traced calls (baseline: {} to {})",
                                             opt_int(cand.kernel_count_min), opt_int(cand.kernel_count_max),
                                             opt_int(base.kernel_count_min), opt_int(base.kernel_count_max)));
  if (auto k = fin(cand.kernel_ms); !k || *k <= 0) {
    flag("WALL_KERNEL_MISMATCH", "CUPTI recorded no kernel time for the candidate's traced calls");
  } else {
    // A worker's wall time carries the process round trip: CLOCK_DISAGREE (a) judges it instead.
    Mismatch m = clock_mismatch(cand, base, false);
    if (!m.hit && cand.process != "worker") m = clock_mismatch(cand, base, true);
    if (m.hit) flag("WALL_KERNEL_MISMATCH", m.detail);
  }
  auto copies = [&](const char* code, const char* what, Field per_call) {
    if (const double n = fin(cand.*per_call).value_or(0); !library_control && n > 0)
      flag(code, fmt::format("{:.2f} {} per traced call of the candidate (baseline: {:.2f})", n, what,
                             fin(base.*per_call).value_or(0)));
  };
  copies("MEMCPY_IN_CALL", "memcpy", &Timing::memcpy_per_call);
  copies("MEMSET_IN_CALL", "memset", &Timing::memset_per_call);
}

}  // namespace

void judge_timed_row(ScenarioResult& row, const bench::ComparisonDocument& P, const bench::ComparisonScenario& ps,
                     const Policy& policy, double floor, const std::string& kernel, const std::string& baseline,
                     Reasons& reasons) {
  const Timing &cand = row.candidate, &base = row.baseline;
  const Flag flag = [&](const std::string& code, const std::string& detail) {
    row.flags.push_back(checked_reason_code(code));
    reasons.add(code, row.id, row.id + ": " + detail);
  };
  if (auto sp = ps.speedup; sp && *sp < floor)
    flag("SCENARIO_BELOW_FLOOR", fmt::format("speedup {:.4f} < floor {:.4f}", *sp, floor));
  const bool library_control = policy.library_control(kernel);
  judge_call_behaviour(cand, base, library_control, flag);
  // The GPU to itself: another process's work perturbs every clock of both kernels.
  if (auto seen = ps.gpu_processes; seen && *seen > ps.gpu_processes_expected)
    flag("GPU_SHARED", fmt::format("{} CUDA processes held the GPU while it was timed, the gate's own are {} (the judge "
                                   "and its workers): another process shared it; run the gate on an idle GPU", *seen,
                                   ps.gpu_processes_expected));
  // Isolation: the candidate's code never shares the judge's process.
  if (cand.process != "worker" || fin(cand.isolated).value_or(0) != 1)
    flag("NOT_ISOLATED", fmt::format("the candidate ran {} (isolated={}); the gate requires it to run in a worker process "
                                     "apart from the judge", cand.process.empty() ? "in an unrecorded process"
                                                                                  : "'" + cand.process + "'",
                                     opt_fmt("%.0f", fin(cand.isolated))));
  // Every clock agrees with the others as the baseline's do; the baseline ran undisturbed.
  if (auto d = clock_disagreements(cand, base, policy); !d.empty()) flag("CLOCK_DISAGREE", fmt::format("{}", fmt::join(d, "; ")));
  if (auto d = baseline_disturbance(base, policy); !d.empty()) flag("BASELINE_DISTURBED", d);
  // No clock beats the device.
  const Plausibility pl = plausibility({P.peak_tflops, P.hbm_tbps, ps.flops, ps.min_bytes}, cand, base, policy.wall_slack_ms);
  row.floor_ms = pl.floor_ms;
  if (pl.hit) flag("IMPLAUSIBLE", pl.detail);
  // Kernels the worker's own build did not define (a library call, a kernel loaded at run time).
  if (policy.candidate_foreign_fail && !library_control)
    if (auto d = foreign_kernels(cand, "the candidate", kernel, "candidate_foreign_kernels"); !d.empty())
      flag("FOREIGN_KERNEL", d);
  if (policy.baseline_foreign_fail)
    if (auto d = foreign_kernels(base, "the baseline", baseline, "baseline_foreign_kernels"); !d.empty())
      flag("FOREIGN_KERNEL", d);
}

namespace {

// The geomean's CI lower bound against the target.
void judge_geomean(const Geomean& g, double target, Reasons& reasons) {
  if (!g.ci_low)
    reasons.add("GEOMEAN_BELOW_TARGET", "", "the comparison has no confidence interval of the geomean");
  else if (*g.ci_low < target)
    reasons.add("GEOMEAN_BELOW_TARGET", "",
                fmt::format("geomean {}, 95% CI [{:.4f}, {}]: the lower bound {:.4f} does not clear the target {:.4f}",
                            opt_fmt("%.4f", g.speedup), *g.ci_low, opt_fmt("%.4f", g.ci_high), *g.ci_low, target));
}

Geomean geomean_of(const bench::ComparisonDocument& P) {
  Geomean g;
  g.speedup = P.geomean_speedup;
  g.kernel_speedup = P.geomean_kernel_speedup;
  g.wall_speedup = P.geomean_wall_speedup;
  g.scenarios = std::int64_t(P.scenarios.size());
  g.bootstrap_resamples = P.bootstrap_resamples;
  if (P.geomean_ci95[0] && P.geomean_ci95[1]) g.ci_low = P.geomean_ci95[0], g.ci_high = P.geomean_ci95[1];
  return g;
}

}  // namespace

TimingTally judge_timing(const std::string& perf_file, const bench::ComparisonDocument& P,
                         std::vector<ScenarioResult>& scenarios, const Policy& policy, const Target& target,
                         Reasons& reasons) {
  TimingTally t;
  std::map<std::string, const bench::ComparisonScenario*> by_id;
  for (const auto& ps : P.scenarios) by_id[ps.id] = &ps;
  std::map<std::string, const bench::FailedScenario*> failed;
  for (const auto& f : P.failed) failed[f.id] = &f;
  // A failure of no scenario of the suite (the bench's suite summary): nothing it wrote can be judged.
  for (const auto& f : P.failed)
    if (std::none_of(scenarios.begin(), scenarios.end(), [&](const auto& row) { return row.id == f.id; }))
      reasons.add("NO_PERF", "", perf_file + ": " + f.id + ": " + f.error);
  bool perf_complete = true;
  for (auto& row : scenarios) {
    const std::string& id = row.id;
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      perf_complete = false;
      auto f = failed.find(id);
      reasons.add(f != failed.end() ? untimed_code(*f->second) : "NO_PERF", id,
                  f != failed.end() ? id + " was not timed: " + f->second->error : id + " is missing from " + perf_file);
      continue;
    }
    const bench::ComparisonScenario& ps = *it->second;
    // A hash that is not 64 hex digits (blanked, truncated) names no build, as a verify result's.
    if (const auto& tree = ps.kernel_timing.kernel_tree_sha256; is_sha256_hex(tree)) t.built_trees.insert(tree);
    else if (ps.kernel_timing.process == "worker") t.timed_unhashed.push_back(id);
    t.timed_in_worker |= ps.kernel_timing.process == "worker";
    if (const auto& dir = ps.kernel_timing.kernel_tree_dir; !dir.empty()) t.built_tree_dir = dir;
    fill_timed_row(row, ps);
    judge_timed_row(row, P, ps, policy, target.scenario_floor.value_or(0), target.kernel, target.baseline, reasons);
  }
  t.geomean = geomean_of(P);
  if (perf_complete) judge_geomean(t.geomean, *target.geomean, reasons);
  if (const std::string found = forbidden_symbols(P); !found.empty()) reasons.add("FORBIDDEN_SYMBOL", "", found);
  if (const std::string missing = sandbox_gaps(P.sandbox); !missing.empty() && policy.sandbox_fail)
    reasons.add("SANDBOX_UNAVAILABLE", "", "the workers ran without " + missing + " (settings.sandbox: fail)");
  return t;
}

}  // namespace attngate::hooks
