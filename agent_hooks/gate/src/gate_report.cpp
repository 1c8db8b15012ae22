#include "attngate/gate/reason_codes.hpp"
#include <fmt/format.h>
#include <fmt/printf.h>

#include "attngate/gate/gate_report.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "attngate/bench/comparison_document.hpp"
#include "attngate/gate/best_baselines.hpp"
#include "attngate/gate/candidate_tree.hpp"
#include "attngate/gate/git.hpp"
#include "attngate/gate/harness.hpp"

#include "attngate/gate/report.hpp"
#include "attngate/gate/digest.hpp"
#include "attngate/scenario.hpp"
#include "attngate/verify/result_document.hpp"
#include "attngate/verify/schema_check.hpp"
#include "attngate/verify/json_document.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using verify::kVerifyResultSchema;

// A build hash as the worker's build writes it: 64 lowercase hex digits. Anything else (empty, a
// NUL in front, another length) names no build.
bool is_sha256_hex(const std::string& h) {
  return h.size() == 64 && std::all_of(h.begin(), h.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A finite number at j[key], else nothing (absent, null, not a number).
std::optional<double> num(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::string str(const json& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

// "1.0" -> 1.0; anything else (empty, trailing text, NaN, out of range) is an error naming `what`.
double parse_number(const std::string& what, const std::string& text, double min, bool min_inclusive) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const bool ok = !text.empty() && end && *end == '\0' && std::isfinite(v) && (min_inclusive ? v >= min : v > min);
  if (!ok)
    throw ReportConfigError(what + "='" + text + "' is not a " +
                            (min_inclusive ? "non-negative" : "positive") + " number");
  return v;
}

const Suite& find_suite(const std::vector<Suite>& suites, const std::string& name, const fs::path& dir) {
  std::string known;
  for (const auto& s : suites) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw ReportConfigError("no suite '" + name + "' in " + dir.string() + " (have: " + known + ")");
}

std::vector<Suite> load_suites(const fs::path& dir) {
  try {
    return load_suite_dir(dir);
  } catch (const std::exception& e) {
    throw ReportConfigError(e.what());
  }
}

std::string setting(const Suite& s, const std::string& key) {
  auto it = s.settings.find(key);
  return it == s.settings.end() ? std::string{} : it->second;
}

std::string kernel_of(const ReportInputs& in, const Suite& s) {
  if (!in.kernel.empty()) return in.kernel;
  std::string k = setting(s, "candidate_kernel");
  return k.empty() ? "candidate" : k;
}

std::string baseline_of(const ReportInputs& in, const Suite& s) {
  if (!in.baseline.empty()) return in.baseline;
  std::string b = setting(s, "baseline_kernel");
  return b.empty() ? "initial" : b;
}

fs::path result_file(const ReportInputs& in, const std::string& kernel, const std::string& id) {
  return in.results_dir / verify::result_file_name(kernel, id);
}

std::optional<json> read_json(const fs::path& file, std::string* error) {
  std::ifstream f(file);
  if (!f) {
    *error = "cannot read " + file.string();
    return std::nullopt;
  }
  try {
    return json::parse(f);
  } catch (const json::exception& e) {
    *error = file.string() + ": not JSON: " + e.what();
    return std::nullopt;
  }
}

// What CTest's running log (Testing/Temporary/LastTest.log[.tmp]) says about one test.
struct LoggedTest {
  double time_s = -1;
  bool passed = false;
  std::string last_output;  // last non-empty line the test printed
};

std::map<std::string, LoggedTest> parse_ctest_log(const std::string& text) {
  std::map<std::string, LoggedTest> out;
  std::istringstream in(text);
  std::string line, current;
  bool in_output = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (in_output) {
      if (line == "<end of output>") in_output = false;
      else if (line.find_first_not_of(" \t") != std::string::npos && line.find_first_not_of('-') != std::string::npos)
        out[current].last_output = line;
      continue;
    }
    // "3/60 Test: verify.candidate.gate_x"
    if (auto p = line.find(" Test: "); p != std::string::npos && line.find('/') < p && std::isdigit(line[0])) {
      current = line.substr(p + 7);
      out[current] = LoggedTest{};
    } else if (current.empty()) {
      continue;
    } else if (line == "Output:") {
      in_output = true;
    } else if (line.rfind("Test time =", 0) == 0) {
      out[current].time_s = std::strtod(line.c_str() + 11, nullptr);
    } else if (line == "Test Passed.") {
      out[current].passed = true;
    }
  }
  return out;
}

// Accumulates reasons, one entry per code, each scenario once, in suite order (verification and the
// bench's timed-run check can both report the same scenario under one code).
class Reasons {
 public:
  void add(const std::string& code, const std::string& scenario, const std::string& detail) {
    checked_reason_code(code);
    for (auto& r : reasons_)
      if (r.code == code) {
        if (!scenario.empty() && std::find(r.scenarios.begin(), r.scenarios.end(), scenario) == r.scenarios.end())
          r.scenarios.push_back(scenario);
        return;
      }
    reasons_.push_back({code, scenario.empty() ? std::vector<std::string>{} : std::vector<std::string>{scenario}, detail});
  }
  bool empty() const { return reasons_.empty(); }
  std::vector<Reason> done() const {
    std::vector<Reason> out = reasons_;
    for (auto& r : out)
      if (r.scenarios.size() > 1) r.detail += " (the first of " + std::to_string(r.scenarios.size()) + ")";
    return out;
  }

 private:
  std::vector<Reason> reasons_;
};

// The candidate's or baseline's figures on one scenario, from the comparison's *_timing object.
// The report's summary of one kernel's figures on a scenario (the rules below read it).
Timing judged_timing(const bench::KernelTiming& t) {
  auto as_int = [&](const char* k) {
    return t.get(k) ? std::optional<std::int64_t>(std::llround(*t.get(k))) : std::nullopt;
  };
  Timing j;
  j.event_ms = t.get("event_ms");
  j.kernel_ms = t.get("kernel_ms");
  j.span_ms = t.get("span_ms");
  j.wall_ms = t.get("wall_ms");
  j.cycles = t.get("cycles");
  j.kernel_cycles = t.get("kernel_cycles");
  j.tflops = t.get("tflops");
  j.pct_peak = t.get("pct_peak");
  j.memcpy_per_call = t.get("memcpy_per_call");
  j.memset_per_call = t.get("memset_per_call");
  j.sm_clock_mhz = t.get("sm_clock_mhz");
  j.kernel_count = as_int("kernels_per_call");
  j.kernel_count_min = as_int("kernel_count_min");
  j.kernel_count_max = as_int("kernel_count_max");
  j.kernel_count_changed = t.kernel_count_changed;
  j.streams = as_int("streams");
  j.foreign_stream_kernels = as_int("foreign_stream_kernels");
  j.traced_calls = as_int("traced_samples");
  j.held_timeouts = as_int("held_timeouts");
  j.kernel_names = t.kernel_names;
  j.traced_event_ms = t.get("traced_event_ms");
  j.traced_wall_ms = t.get("traced_wall_ms");
  j.cupti_minus_traced_event_us = t.get("cupti_minus_traced_event_us");
  j.isolated = t.get("isolated");
  j.fresh_calls = t.get("fresh_calls");
  j.fresh_event_ms = t.get("fresh_event_ms");
  j.fresh_wall_ms = t.get("fresh_wall_ms");
  j.checked_calls = t.get("checked_calls");
  j.inventory_kernels = t.get("inventory_kernels");
  j.foreign_kernels = t.get("foreign_kernels");
  for (auto [field, name] : {std::pair{&Timing::judge_ms, "judge_ms"}, {&Timing::worker_event_ms, "worker_event_ms"},
                              {&Timing::pre_ms, "pre_ms"}, {&Timing::hold_gap_max_us, "hold_gap_max_us"},
                              {&Timing::handoff_us, "handoff_us"}, {&Timing::reference_handoff_us, "reference_handoff_us"},
                              {&Timing::solo_handoff_us, "solo_handoff_us"},
                              {&Timing::judge_resolution_us, "judge_resolution_us"},
                              {&Timing::judge_resolution_pct, "judge_resolution_pct"},
                              {&Timing::alone_event_ms, "alone_event_ms"},
                              {&Timing::lowest_handoff_us, "lowest_handoff_us"},
                              {&Timing::round_trip_correction_us, "round_trip_correction_us"}})
    j.*field = t.get(name);
  j.process = t.process;
  j.foreign_kernel_names = t.foreign_kernel_names;
  return j;
}

// clock / kernel time of the candidate, and its excess over kernel time beyond the baseline's.
struct Mismatch {
  bool hit = false;
  std::string detail;
};

Mismatch clock_mismatch(const json& cand, const json& base, const char* clock, const char* clock_name) {
  auto ck = num(cand, "kernel_ms"), cx = num(cand, clock);
  if (!ck || !cx || *ck <= 0) return {};
  const double ratio = *cx / *ck;
  const double excess = *cx - *ck;
  double base_excess = 0;
  if (auto bk = num(base, "kernel_ms"), bx = num(base, clock); bk && bx && *bk > 0) base_excess = *bx - *bk;
  const double allowed = std::max(kMismatchExcessShare * *ck, kMismatchExcessMinMs);
  if (ratio > kMismatchRatio && excess - base_excess > allowed)
    return {true, std::string(clock_name) + " " + fmt::format("{:.4f}", *cx) + " ms is " + fmt::format("{:.2f}", ratio) +
                      "x the CUPTI kernel time " + fmt::format("{:.4f}", *ck) + " ms; its excess " + fmt::format("{:.4f}", excess) +
                      " ms exceeds the baseline's " + fmt::format("{:.4f}", base_excess) + " ms by more than " +
                      fmt::format("{:.4f}", allowed) + " ms"};
  return {};
}

std::string opt_fmt(const char* f, const std::optional<double>& v) { return v ? fmt::sprintf(f, *v) : std::string("n/a"); }

// The gate's policy (README: "Setting targets"): the suite's settings or the defaults, each
// recorded in report.json's `policy` with its source.
struct Policy {
  double clock_tolerance = 0;  // CLOCK_DISAGREE tolerance: this share of the slower event time ...
  double clock_slack_ms = 0;   // ... plus this, for comparisons of event times (the worker's clocks)
  double wall_slack_ms = 0;    // ... or plus this, for the judge's wall clock (it carries the process round trip)
  double baseline_disturbed_us = 0;  // BASELINE_DISTURBED: the baseline's round trip may move this much
  double baseline_alone_tolerance = 0;  // ... and its time from its time alone, as a share (0: not judged)
  double baseline_alone_slack_us = 0;   // ... plus this many µs (a context switch more on tiny calls)
  double worker_clock_trust_us = 0;     // CLOCK_DISAGREE (h): the most the candidate worker's word moved its clock
  bool candidate_foreign_fail = true, baseline_foreign_fail = false, nondeterminism_fail = true, sandbox_fail = true;
  // Library-backed controls (the in-process cuDNN kernel): kernels under test that may launch
  // kernels outside their inventory. The shipped gate names none, so a candidate never may.
  std::set<std::string> library_controls;
  PolicyRecord record;
};

Policy read_policy(const Suite& suite, const std::string& suite_file) {
  Policy p;
  PolicyRecord& r = p.record;
  auto value_of = [&](const char* key, const char* def, std::string* source) {
    std::string v = setting(suite, key);
    *source = v.empty() ? std::string("default") : suite_file + " settings." + key;
    return v.empty() ? std::string(def) : v;
  };
  auto number = [&](const char* key, const char* def, double* value, std::string* source) {
    const std::string v = value_of(key, def, source);
    *value = parse_number(*source == "default" ? std::string("default ") + key : *source, v, 0, true);
    return *value;
  };
  auto fail_or_allow = [&](const char* key, const char* def, std::string* value, std::string* source) {
    *value = value_of(key, def, source);
    if (*value != "fail" && *value != "allow") throw ReportConfigError(*source + "='" + *value + "' is not fail or allow");
    return *value == "fail";
  };
  p.clock_tolerance = number("clock_tolerance", kDefaultClockTolerance, &r.clock_tolerance, &r.clock_tolerance_source);
  p.clock_slack_ms = number("clock_slack_ms", kDefaultClockSlackMs, &r.clock_slack_ms, &r.clock_slack_ms_source);
  p.wall_slack_ms = number("wall_slack_ms", kDefaultWallSlackMs, &r.wall_slack_ms, &r.wall_slack_ms_source);
  p.baseline_disturbed_us = number("baseline_disturbed_us", kDefaultBaselineDisturbedUs, &r.baseline_disturbed_us,
                                   &r.baseline_disturbed_us_source);
  p.baseline_alone_tolerance = number("baseline_alone_tolerance", kDefaultBaselineAloneTolerance,
                                      &r.baseline_alone_tolerance, &r.baseline_alone_tolerance_source);
  p.baseline_alone_slack_us = number("baseline_alone_slack_us", kDefaultBaselineAloneSlackUs,
                                     &r.baseline_alone_slack_us, &r.baseline_alone_slack_us_source);
  p.worker_clock_trust_us = number("worker_clock_trust_us", kDefaultWorkerClockTrustUs, &r.worker_clock_trust_us,
                                   &r.worker_clock_trust_us_source);
  p.candidate_foreign_fail = fail_or_allow("candidate_foreign_kernels", kDefaultCandidateForeignKernels,
                                           &r.candidate_foreign_kernels, &r.candidate_foreign_kernels_source);
  p.baseline_foreign_fail = fail_or_allow("baseline_foreign_kernels", kDefaultBaselineForeignKernels,
                                          &r.baseline_foreign_kernels, &r.baseline_foreign_kernels_source);
  p.nondeterminism_fail = fail_or_allow("nondeterminism", kDefaultNondeterminism, &r.nondeterminism,
                                        &r.nondeterminism_source);
  p.sandbox_fail = fail_or_allow("sandbox", kDefaultSandbox, &r.sandbox, &r.sandbox_source);
  std::stringstream list(value_of("library_controls", "", &r.library_controls_source));
  for (std::string k; std::getline(list, k, ',');)
    if (!k.empty()) p.library_controls.insert(k);
  r.library_controls.assign(p.library_controls.begin(), p.library_controls.end());
  r.clock_rule =
      "per pair of clocks, |(candidate X - Y) - (baseline X - Y)| <= clock_tolerance * max(event_ms) + clock_slack_ms "
      "(event-time pairs) or + wall_slack_ms (wall vs event; 3 x wall_slack_ms for the wall time of the few fresh calls)";
  r.plausibility_rule =
      "no clock of the candidate below 1e3 * max(flops / (peak_tflops * 1e12), min_bytes / (hbm_tbps * 1e12)) ms";
  r.isolation = "required: the candidate runs in a worker process";
  return p;
}

// CLOCK_DISAGREE: each pair of the candidate's clocks must differ as the baseline's do (the
// baseline's difference is what the harness and noise explain), in either direction. Returns the
// comparisons that failed, each naming itself (a-d) and its figures. A figure the candidate lacks
// and the baseline has is a disagreement; one the baseline lacks is not compared.
// The judge's clock of two kernels in workers (bench/README.md): (e) the worker's own events must
// agree with it as the baseline's do; (f) the judge's work before its clock starts (poison, fresh
// contents, flush) takes as long for both, since GPU work of another context in that window would be
// work outside the clock; (g) the judge's hold kernel was not kept off the GPU longer than the
// baseline's (a time slice of another context is about 0.14 ms or more on the H200).
void judge_clock_disagreements(const json& c, const json& b, double tol, double trust_us, std::vector<std::string>& out) {
  const auto wc = num(c, "worker_event_ms"), ec = num(c, "event_ms"), wb = num(b, "worker_event_ms"),
             eb = num(b, "event_ms");
  if (wc && ec && wb && eb && std::abs((*wc - *ec) - (*wb - *eb)) > tol)
    out.push_back("(e) the worker's events vs the judge's clock: worker event time minus judge time is " +
                  fmt::format("{:+.4f}", *wc - *ec) + " ms for the candidate, " + fmt::format("{:+.4f}", *wb - *eb) +
                  " ms for the baseline; they differ by more than " + fmt::format("{:.4f}", tol) + " ms");
  const auto pc = num(c, "pre_ms"), pb = num(b, "pre_ms");
  if (pc && pb && std::abs(*pc - *pb) > tol)
    out.push_back("(f) the judge's work before its clock starts took " + fmt::format("{:.4f}", *pc) + " ms for the candidate, " +
                  fmt::format("{:.4f}", *pb) + " ms for the baseline (tolerance " + fmt::format("{:.4f}", tol) +
                  " ms): GPU work of another context ran in that window, outside the clock");
  const auto gc = num(c, "hold_gap_max_us"), gb = num(b, "hold_gap_max_us");
  if (gc && gb && *gc > *gb + 1e3 * tol)
    out.push_back("(g) the judge's hold kernel was kept off the GPU for " + fmt::format("{:.1f}", *gc) + " us during a call of "
                  "the candidate's (the baseline's longest: " + fmt::format("{:.1f}", *gb) + " us): another context ran while the "
                  "judge held its stream, before the clock started");
  // (h) The bench moves the candidate worker's figures by its own word on its round trip, at most
  // worker_clock_trust_us (gate.yaml, read by attngate_bench too); the baseline's, never.
  const auto hc = num(c, "round_trip_correction_us"), hb = num(b, "round_trip_correction_us");
  if (hc && std::abs(*hc) > trust_us + 1e-6)
    out.push_back("(h) the candidate's round trip was corrected by " + fmt::format("{:+.2f}", *hc) +
                  " us, more than worker_clock_trust_us (" + fmt::format("{:.2f}", trust_us) + " us)");
  if (hb && std::abs(*hb) > 1e-6)
    out.push_back("(h) the baseline's round trip was corrected by " + fmt::format("{:+.2f}", *hb) + " us; its clock is never moved");
}

// FORBIDDEN_SYMBOL: what the timed workers' kernel libraries define that they must not (a function
// of the CUDA runtime, CUPTI, libc... that the worker would call instead of the real one), "" when
// nothing. Either role: an interposing baseline would forge the clock the candidate is held to.
std::string forbidden_symbols(const bench::ComparisonDocument& P) {
  std::set<std::string> found;
  for (const auto& s : P.scenarios)
    for (const auto* t : {&s.kernel_timing, &s.base_timing})
      for (const auto& f : t->forbidden_symbols) found.insert(t->name + ": " + f);
  if (found.empty()) return "";
  std::vector<std::string> first(found.begin(), std::next(found.begin(), long(std::min<size_t>(found.size(), 4))));
  return std::to_string(found.size()) + " symbol(s) defined by a worker's kernel library that a library the worker "
         "links or its own code also defines (kernels/worker/cmake/symbols.cmake): " + fmt::format("{}", fmt::join(first, "; ")) +
         (found.size() > first.size() ? "; ..." : "");
}

// SANDBOX_UNAVAILABLE: what of the workers' seal was missing in the timed run, "" when nothing.
std::string sandbox_gaps(const bench::SandboxRecord& s) {
  if (!s.enabled) return "the sandbox (ATTNGATE_SANDBOX=off)";
  if (s.mechanisms.empty()) return "a record of their sandbox";
  std::vector<std::string> missing;
  for (const auto& m : s.mechanisms)
    if (!m.available) missing.push_back(m.name + " (" + m.detail + ")");
  return fmt::format("{}", fmt::join(missing, ", "));
}

// BASELINE_DISTURBED: "" when the baseline's figures show nothing else ran on the GPU while it was
// timed. Judged only for a baseline in a worker (an in-process one has no round trip).
std::string baseline_disturbance(const json& b, const Policy& p) {
  if (num(b, "isolated").value_or(0) <= 0) return "";
  const auto solo = num(b, "solo_handoff_us"), seen = num(b, "reference_handoff_us"), gap = num(b, "hold_gap_max_us");
  if (!solo || *solo <= 0)
    return "the round trip to the baseline's worker was not measured alone (its worker must be the judge's first), "
           "so a disturbed baseline could not be told";
  std::vector<std::string> what;
  if (!seen || std::abs(*seen - *solo) > p.baseline_disturbed_us)
    what.push_back("its round trip to the judge was " + opt_fmt("%.1f", seen) + " us in this scenario against " +
                   fmt::format("{:.1f}", *solo) + " us measured alone (tolerance " + fmt::format("{:.1f}", p.baseline_disturbed_us) + " us)");
  if (gap && *gap > p.baseline_disturbed_us + 50)
    what.push_back("the judge's hold kernel was kept off the GPU for " + fmt::format("{:.1f}", *gap) + " us during its calls");
  if (p.baseline_alone_tolerance > 0) {
    const auto alone = num(b, "alone_event_ms"), seen_ms = num(b, "event_ms");
    if (!alone || *alone <= 0)
      what.push_back("its time alone, before the candidate's worker existed, was not measured");
    else if (!seen_ms ||
             std::abs(*seen_ms - *alone) > p.baseline_alone_tolerance * *alone + 1e-3 * p.baseline_alone_slack_us)
      what.push_back("its median time was " + opt_fmt("%.4f", seen_ms) + " ms beside the candidate against " +
                     fmt::format("{:.4f}", *alone) + " ms alone (tolerance " + fmt::format("{:.1f}", 100 * p.baseline_alone_tolerance) +
                     " % + " + fmt::format("{:.1f}", p.baseline_alone_slack_us) + " us)");
  }
  return what.empty() ? "" : "the baseline was disturbed while it was timed: " + fmt::format("{}", fmt::join(what, "; ")) +
                                 " (another context ran on the GPU)";
}

// The reason code of a scenario the bench could not time: its checks of the timed calls name what
// they caught (bench/README.md, failure_kind.hpp); anything else is a missing measurement.
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

std::vector<std::string> clock_disagreements(const json& c, const json& b, const Policy& p) {
  std::vector<std::string> out;
  const auto ec = num(c, "event_ms"), eb = num(b, "event_ms");
  if (!ec || !eb || *ec <= 0 || *eb <= 0) {
    out.push_back("the event times cannot be compared (candidate " + opt_fmt("%.4f", ec) + " ms, baseline " +
                  opt_fmt("%.4f", eb) + " ms)");
    return out;
  }
  const double tol = p.clock_tolerance * std::max(*ec, *eb) + p.clock_slack_ms;
  // The judge's wall clock spans the round trip to the worker: 0.5-0.9 ms on the H200, whose median
  // differed by up to 0.17 ms between two identical kernels (2026-12-01), so it gets its own slack.
  const double wall_tol = p.clock_tolerance * std::max(*ec, *eb) + p.wall_slack_ms;
  auto compare = [&](const std::string& label, const char* x, const char* ref, const std::string& x_name,
                     const std::string& ref_name, double tol) {
    const auto xc = num(c, x), xb = num(b, x), rc = num(c, ref), rb = num(b, ref);
    if (!xb || *xb <= 0 || !rb) return;
    if (!xc || *xc <= 0 || !rc) {
      out.push_back(label + ": the candidate has no " + x_name + " (" + x + "), the baseline " + fmt::format("{:.4f}", *xb) + " ms");
      return;
    }
    const double dc = *xc - *rc, db = *xb - *rb;
    if (std::abs(dc - db) > tol)
      out.push_back(label + ": " + x_name + " minus " + ref_name + " is " + fmt::format("{:+.4f}", dc) + " ms for the candidate, " +
                    fmt::format("{:+.4f}", db) + " ms for the baseline; they differ by " + fmt::format("{:.4f}", std::abs(dc - db)) +
                    " ms > tolerance " + fmt::format("{:.4f}", tol) + " ms");
  };
  compare("(a) wall vs event", "wall_ms", "event_ms", "wall time", "event time", wall_tol);
  // Traced calls' wall time carries the worker's CUPTI flush (about 1.7 ms, varying by 0.5 ms), so
  // traced and untraced calls are compared on event time; (a) holds the untraced events to the wall.
  compare("(b) traced vs untraced", "traced_event_ms", "event_ms", "traced event time", "untraced event time", tol);
  if (auto kc = num(c, "kernel_ms"); !kc || *kc <= 0) {
    out.push_back("(c) CUPTI vs events: CUPTI saw no kernel time in the candidate's traced calls");
  } else if (auto db = num(b, "cupti_minus_traced_event_us")) {
    const auto dc = num(c, "cupti_minus_traced_event_us");
    if (!dc)
      out.push_back("(c) CUPTI vs events: the candidate has no cupti_minus_traced_event_us");
    else if (std::abs(*dc - *db) * 1e-3 > tol)
      out.push_back("(c) CUPTI vs events: CUPTI kernel time minus the event time of the same traced calls is " +
                    fmt::format("{:+.1f}", *dc) + " us for the candidate, " + fmt::format("{:+.1f}", *db) + " us for the baseline; they " +
                    "differ by " + fmt::format("{:.4f}", std::abs(*dc - *db) * 1e-3) + " ms > tolerance " + fmt::format("{:.4f}", tol) + " ms");
  }
  if (auto fc = num(c, "fresh_calls"), fb = num(b, "fresh_calls"); fc && fb && *fc > 0 && *fb > 0) {
    compare("(d) fresh inputs vs the rest", "fresh_event_ms", "event_ms", "event time on fresh inputs", "event time", tol);
    compare("(d) fresh inputs vs the rest", "fresh_wall_ms", "wall_ms", "wall time on fresh inputs", "wall time",
            wall_tol + 2 * p.wall_slack_ms);
  }
  if (num(c, "isolated").value_or(0) > 0 && num(b, "isolated").value_or(0) > 0) judge_clock_disagreements(c, b, tol, p.worker_clock_trust_us, out);
  return out;
}

// IMPLAUSIBLE: no call can beat doing the scenario's FLOPs at the dense peak or moving its minimum
// bytes at HBM bandwidth; every clock of the candidate is held to that floor. Without the figures
// to bound it the scenario fails too (hit with a "cannot be judged" detail).
struct Plausibility {
  bool hit = false;
  std::string detail;
  std::optional<double> floor_ms;
};

Plausibility plausibility(const bench::ComparisonDocument& P, const bench::ComparisonScenario& ps, const json& c,
                          const json& b, double wall_slack_ms) {
  const auto peak = P.peak_tflops, hbm = P.hbm_tbps, flops = ps.flops, bytes = ps.min_bytes, ec = num(c, "event_ms");
  std::vector<std::string> missing;
  if (!peak || *peak <= 0) missing.push_back("peak_tflops");
  if (!hbm || *hbm <= 0) missing.push_back("hbm_tbps");
  if (!flops || *flops <= 0) missing.push_back("flops");
  if (!bytes || *bytes <= 0) missing.push_back("min_bytes");
  if (!ec) missing.push_back("the candidate's event_ms");
  if (!missing.empty())
    return {true, "cannot be judged: the comparison has no " + fmt::format("{}", fmt::join(missing, ", ")) +
                      "; the gate does not pass a time it cannot bound", std::nullopt};
  const double compute_ms = 1e3 * *flops / (*peak * 1e12), memory_ms = 1e3 * *bytes / (*hbm * 1e12);
  const double floor_ms = std::max(compute_ms, memory_ms);
  std::vector<std::string> below;
  auto claim = [&](const std::string& what, double ms) {
    if (ms < floor_ms) below.push_back(what + " " + fmt::format("{:.4f}", ms) + " ms");
  };
  claim("event time", *ec);
  if (auto v = num(c, "span_ms"); v && *v > 0) claim("CUPTI span", *v);
  if (auto v = num(c, "kernel_ms"); v && *v > 0) claim("CUPTI kernel time", *v);
  // The judge's wall clock less the baseline's round trip, given the round trip's noise (wall_slack_ms):
  // on a tiny shape the difference alone can be below zero for an honest kernel.
  if (auto wc = num(c, "wall_ms"), wb = num(b, "wall_ms"), eb = num(b, "event_ms"); wc && wb && eb)
    claim("wall time less the baseline's overhead (" + fmt::format("{:.4f}", *wb - *eb) + " ms) plus the wall slack (" +
              fmt::format("{:.2f}", wall_slack_ms) + " ms)",
          *wc - (*wb - *eb) + wall_slack_ms);
  if (below.empty()) return {false, "", floor_ms};
  return {true, "the candidate claims " + fmt::format("{}", fmt::join(below, ", ")) + ": below " + fmt::format("{:.4f}", floor_ms) +
                    " ms, which no call can beat (" + fmt::format("{:.4g}", *flops) + " FLOP at the dense peak " +
                    fmt::format("{:.1f}", *peak) + " TFLOPS take " + fmt::format("{:.4f}", compute_ms) + " ms; " + fmt::format("{:.4g}", *bytes) +
                    " bytes at " + fmt::format("{:.2f}", *hbm) + " TB/s take " + fmt::format("{:.4f}", memory_ms) + " ms)",
          floor_ms};
}

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

std::string pair_ms(const json& c, const json& b, const char* key) {
  return opt_fmt("%.4f", num(c, key)) + " / " + opt_fmt("%.4f", num(b, key));
}

// "cudnn 610.0 (52%)": the scenario's best measured baseline and the candidate's fraction of it.
std::string best_baseline_cell(const json& s) {
  const json& b = s.value("best_baseline", json());
  if (!b.is_object()) return "n/a";
  return str(b, "library") + " " + opt_fmt("%.1f", num(b, "tflops")) + " (" +
         (num(s, "fraction_of_best") ? fmt::format("{:.0f}%", 100 * *num(s, "fraction_of_best")) : std::string("n/a")) + ")";
}

// Adds each scenario's best measured baseline (bench/baselines/<gpu>.json) and the candidate's
// fraction of its TFLOPS; returns the report's `baselines`: library -> scenario id -> TFLOPS.
Baselines apply_best_baselines(std::vector<ScenarioResult>& scenarios, const BestBaselines& best) {
  Baselines by_library;
  for (auto& row : scenarios) {
    auto it = best.scenarios.find(row.id);
    if (it == best.scenarios.end()) continue;
    const BestBaseline& b = it->second;
    row.best_baseline = BestBaselineRef{b.library, b.tflops, b.date};
    if (row.tflops) row.fraction_of_best = *row.tflops / b.tflops;
    by_library[b.library][row.id] = b.tflops;
  }
  return by_library;
}

BestBaselinesInfo best_baselines_info(const BestBaselines& best) {
  BestBaselinesInfo info;
  if (!best.file.empty()) info.file = best.file.string();
  info.gpu = best.gpu;
  info.updated = best.updated;
  info.scenarios = std::int64_t(best.scenarios.size());
  info.note = best.note;
  return info;
}

// The judge's clock over the timed scenarios (bench/README.md): the round trip it subtracted and
// its resolution, the worst scenario's share of its call. "" when no scenario has the figures.
std::string judge_clock_line(const json& scenarios) {
  std::optional<double> worst, handoff, solo;
  std::string where;
  for (const auto& s : scenarios) {
    const json& b = s["baseline"];
    const auto pct = num(b, "judge_resolution_pct");
    if (!pct) continue;
    if (!worst || *pct > *worst) worst = pct, where = str(s, "id");
    handoff = num(b, "handoff_us");
    solo = num(b, "solo_handoff_us");
  }
  if (!worst) return "";
  return "- the judge's clock: a round trip of " + opt_fmt("%.1f", handoff) + " us subtracted from every call (alone: " +
         opt_fmt("%.1f", solo) + " us); its resolution at most " + fmt::format("{:.3f}", *worst) + " % of a call (" + where + ")\n";
}

std::string markdown(const json& r, const Reasons& reasons) {
  std::ostringstream md;
  const bool pass = r["verdict"] == "pass";
  const json& t = r["target"];
  const json& g = r["geomean"];
  md << "# attngate gate report: " << (pass ? "PASS" : "FAIL") << "\n\n";
  md << "Kernel `" << str(t, "kernel") << "` against `" << str(t, "baseline") << "` on suite `" << str(r, "suite")
     << "` (" << r["scenarios"].size() << " scenarios).\n\n";
  md << "- geomean speedup (event time): **" << opt_fmt("%.4fx", num(g, "speedup")) << "**, 95% CI ["
     << opt_fmt("%.4f", num(g, "ci_low")) << ", " << opt_fmt("%.4f", num(g, "ci_high")) << "]\n";
  md << "- target: CI lower bound >= " << opt_fmt("%.4fx", num(t, "geomean")) << " (" << str(t, "geomean_source")
     << "); scenario floor " << opt_fmt("%.4fx", num(t, "scenario_floor")) << " (" << str(t, "scenario_floor_source")
     << ")\n";
  md << "- geomean on CUPTI kernel time: " << opt_fmt("%.4fx", num(g, "kernel_speedup"))
     << "; on wall time: " << opt_fmt("%.4fx", num(g, "wall_speedup")) << "\n";
  md << judge_clock_line(r["scenarios"]);
  if (r.contains("correctness")) {
    const json& c = r["correctness"];
    std::vector<std::string> names;
    for (const auto& n : c.value("suites", json::array())) names.push_back(n.get<std::string>());
    md << "- correctness: " << c.value("passed", 0) << " of " << c.value("scenarios", 0) << " scenarios correct over the suites "
       << fmt::format("{}", fmt::join(names, ", ")) << " (the gate suite is also timed)\n";
  }
  const json& pol = r.contains("policy") ? r["policy"] : json::object();
  md << "- policy: the candidate runs in a worker process; its clocks agree with the baseline's within "
     << opt_fmt("%.3g", num(pol, "clock_tolerance")) << " x the slower event time + "
     << opt_fmt("%.3g", num(pol, "clock_slack_ms")) << " ms (event-time pairs) or + "
     << opt_fmt("%.3g", num(pol, "wall_slack_ms")) << " ms (the judge's wall clock); no clock below the device's floor; foreign kernels: "
     << "candidate " << str(pol, "candidate_foreign_kernels") << ", baseline " << str(pol, "baseline_foreign_kernels")
     << "; nondeterminism: " << str(pol, "nondeterminism") << "\n\n";

  md << "## Reasons\n\n";
  if (reasons.empty()) md << "None: every check passed.\n";
  for (const auto& reason : reasons.done()) {
    md << "- **" << reason.code << "**";
    if (!reason.scenarios.empty()) md << " [" << fmt::format("{}", fmt::join(reason.scenarios, ", ")) << "]";
    if (!reason.detail.empty()) md << ": " << reason.detail;
    md << "\n";
  }

  md << "\n## Scenarios\n\n"
     << "Times are medians per call, candidate / baseline. Speedup: baseline event time / candidate event time, "
        "95% bootstrap CI.\n\n"
     << "| scenario | correct | O max err | speedup [95% CI] | event ms | kernel ms | wall ms | TFLOPS (% peak) | "
        "best baseline TFLOPS (fraction) | flags |\n"
     << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& s : r["scenarios"]) {
    const json& c = s["candidate"];
    const json& b = s["baseline"];
    const json ok = s.value("correct", json());  // absent when there is no result from this run
    std::string correct = ok.is_boolean() ? (ok.get<bool>() ? "yes" : "**no**") : str(s, "status");
    std::vector<std::string> flags = s["flags"].get<std::vector<std::string>>();
    md << "| " << str(s, "id") << " | " << correct << " | " << opt_fmt("%.3g", num(s, "o_max_abs")) << " | "
       << opt_fmt("%.4f", num(s, "speedup")) << " [" << opt_fmt("%.4f", num(s, "ci_low")) << ", "
       << opt_fmt("%.4f", num(s, "ci_high")) << "] | " << pair_ms(c, b, "event_ms") << " | "
       << pair_ms(c, b, "kernel_ms") << " | " << pair_ms(c, b, "wall_ms") << " | " << opt_fmt("%.1f", num(s, "tflops"))
       << " (" << opt_fmt("%.1f%%", num(s, "percent_of_peak")) << ") | " << best_baseline_cell(s) << " | "
       << (flags.empty() ? "" : fmt::format("{}", fmt::join(flags, ", "))) << " |\n";
  }

  const json& p = r["provenance"];
  const json& clock = p.contains("sm_clock") ? p["sm_clock"] : json::object();
  md << "\n## Provenance\n\n";
  md << "- GPU: " << (str(p, "gpu").empty() ? "unknown" : str(p, "gpu")) << "; driver "
     << (str(p, "driver").empty() ? "unknown" : str(p, "driver")) << " (CUDA " << str(p, "cuda_driver")
     << "); CUDA runtime " << (str(p, "cuda").empty() ? "unknown" : str(p, "cuda")) << "\n";
  md << "- SM clock: median " << opt_fmt("%.0f", num(p, "sm_clock_mhz")) << " MHz over the scenarios' medians ("
     << opt_fmt("%.0f", num(clock, "lowest_median_mhz")) << " to " << opt_fmt("%.0f", num(clock, "highest_median_mhz"))
     << "), lowest reading " << opt_fmt("%.0f", num(clock, "min_mhz")) << ", device maximum "
     << opt_fmt("%.0f", num(clock, "device_max_mhz")) << "; throttle reasons 0x";
  {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(num(clock, "event_reasons").value_or(0)));
    md << buf;
  }
  md << "\n";
  md << "- attngate commit: " << (str(p, "attngate_commit").empty() ? "unknown" : str(p, "attngate_commit"))
     << (p.value("attngate_dirty", false) ? " (working tree differs from it)" : "") << "\n";
  md << "- candidate: `" << str(p, "candidate") << "`, sha256 " << str(p, "candidate_sha256") << "\n";
  md << "- candidate tree `" << str(p, "candidate_tree") << "`: "
     << (str(p, "candidate_tree_sha256").empty() ? std::string("not hashed") : str(p, "candidate_tree_sha256"))
     << " at report time; built into the worker: "
     << (str(p, "candidate_tree_sha256_built").empty() ? std::string("unknown") : str(p, "candidate_tree_sha256_built"))
     << "\n";
  const json& h = r["harness"];
  md << "- harness: ";
  if (!h.value("verified", false)) md << "not verified: " << str(h, "why");
  else if (h["modified"].empty()) md << "identical to the commit";
  else md << "**modified**: " << fmt::format("{}", fmt::join(h["modified"].get<std::vector<std::string>>(), ", "));
  md << " (" << h["sha256"].size() << " files hashed, in report.json)\n";
  if (auto seed = str(p, "base_seed"); !seed.empty())
    md << "- verify base seed: " << seed << " (replay with `ATTNGATE_SEED=" << seed << "`)\n";
  const json& bb = r["best_baselines"];
  md << "- best baselines: "
     << (str(bb, "note").empty() ? str(bb, "file") + " (updated " + str(bb, "updated") + ")" : str(bb, "note")) << "\n";
  md << "- gate wall time: " << opt_fmt("%.1f s", num(r, "wall_s")) << "\n";
  return md.str();
}

}  // namespace

// The comparison document (performance.json) against its schema, read from the repository (a
// harness file: the gate checks it is unmodified). A missing schema is a problem too.
constexpr const char* kComparisonSchemaFile = "bench/schema/comparison.schema.json";
static std::vector<std::string> comparison_problems(const fs::path& repo, const json& doc) {
  std::string err;
  const std::optional<json> schema = read_json(repo / kComparisonSchemaFile, &err);
  if (!schema) return {"cannot read the schema: " + err};
  return verify::schema_problems(*schema, doc);
}

// The typed document of a file that passed the schema check; nothing, with the reason in *error,
// where a field has another type than the reader's (the schema leaves some open).
static std::optional<bench::ComparisonDocument> parse_comparison(const json& doc, std::string* error) {
  try {
    return bench::parse_comparison_document(doc);
  } catch (const json::exception& e) {
    *error = std::string("not a readable attngate.comparison/1 document: ") + e.what();
    return std::nullopt;
  }
}

ReportInputs resolve_inputs(ReportInputs in, const fs::path& build_dir) {
  if (in.results_dir.empty()) in.results_dir = build_dir / "verify" / "results";
  if (in.out_dir.empty()) in.out_dir = build_dir / "gate";
  if (in.perf.empty()) in.perf = in.out_dir / "performance.json";
  if (in.started_after.empty()) in.started_after = in.out_dir / "started";
  if (in.ctest_log_dir.empty()) in.ctest_log_dir = build_dir / "Testing" / "Temporary";
  return in;
}

// The suites the gate judges correctness on: its own, then settings.correctness_suites in order.
static std::vector<const Suite*> correctness_suites(const std::vector<Suite>& suites, const Suite& gate,
                                                   const fs::path& dir) {
  std::vector<const Suite*> out = {&gate};
  std::string list = setting(gate, "correctness_suites"), item;
  for (char c : list + ",") {
    if (c != ',' && c != ' ') {
      item += c;
      continue;
    }
    if (item.empty()) continue;
    const Suite* s = &find_suite(suites, item, dir);
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    item.clear();
  }
  return out;
}

GateCheckPlan gate_check_plan(const fs::path& scenarios_dir) {
  const auto suites = load_suites(scenarios_dir);
  const Suite& gate = find_suite(suites, "gate", scenarios_dir);
  GateCheckPlan plan{kernel_of(ReportInputs{}, gate), 0};
  for (const Suite* s : correctness_suites(suites, gate, scenarios_dir)) plan.scenarios += int(s->scenarios.size());
  return plan;
}

void prepare_gate(const ReportInputs& in) {
  const auto suites = load_suites(in.scenarios_dir);
  const Suite& suite = find_suite(suites, in.suite, in.scenarios_dir);
  const std::string kernel = kernel_of(in, suite);
  std::error_code ec;
  for (const Suite* checked : correctness_suites(suites, suite, in.scenarios_dir))
    for (const auto& s : checked->scenarios) fs::remove(result_file(in, kernel, s.id), ec);
  for (const fs::path& f : {in.perf, in.out_dir / "report.json", in.out_dir / "report.md"}) fs::remove(f, ec);
  fs::create_directories(in.out_dir, ec);
  fs::create_directories(in.started_after.parent_path(), ec);
  std::ofstream marker(in.started_after, std::ios::trunc);
  marker << "attngate gate started " << now_iso8601() << "\n";
  if (!marker.flush()) throw std::runtime_error("cannot write " + in.started_after.string());
}

// Targets: the suite's settings, overridden by the environment (README: "Setting targets").
Target read_target(const Suite& suite, const std::string& suite_file, const std::string& kernel,
                   const std::string& baseline) {
  Target target;
  target.kernel = kernel;
  target.baseline = baseline;
  if (const char* env = std::getenv("ATTNGATE_GEOMEAN_TARGET"); env && *env) {
    target.geomean = parse_number("ATTNGATE_GEOMEAN_TARGET", env, 0, false);
    target.geomean_source = "ATTNGATE_GEOMEAN_TARGET";
  } else if (auto v = setting(suite, "geomean_target"); !v.empty()) {
    target.geomean = parse_number(suite_file + " settings.geomean_target", v, 0, false);
    target.geomean_source = suite_file + " settings.geomean_target";
  } else {
    throw ReportConfigError("no geomean target: set settings.geomean_target in " + suite.file +
                            " or ATTNGATE_GEOMEAN_TARGET");
  }
  if (const char* env = std::getenv("ATTNGATE_SCENARIO_FLOOR"); env && *env) {
    target.scenario_floor = parse_number("ATTNGATE_SCENARIO_FLOOR", env, 0, true);
    target.scenario_floor_source = "ATTNGATE_SCENARIO_FLOOR";
  } else if (auto v = setting(suite, "scenario_floor"); !v.empty()) {
    target.scenario_floor = parse_number(suite_file + " settings.scenario_floor", v, 0, true);
    target.scenario_floor_source = suite_file + " settings.scenario_floor";
  } else {
    target.scenario_floor = 0;
    target.scenario_floor_source = "none (no settings.scenario_floor)";
  }
  target.rule = "geomean CI lower bound >= geomean; every scenario's speedup >= scenario_floor";
  return target;
}

// Freshness: only files written after gate.setup's marker belong to this run; CTest's log of the
// run says why a test left no outcome.
class Freshness {
 public:
  explicit Freshness(const ReportInputs& in) : marker_(in.started_after) {
    std::error_code ec;
    if (auto t = fs::last_write_time(in.started_after, ec); !ec) started_ = t;
    if (!started_)
      stale_note = " (no marker " + in.started_after.string() + ": gate.setup did not run, so no file counts as fresh)";
    for (const char* name : {"LastTest.log.tmp", "LastTest.log"}) {
      const fs::path log = in.ctest_log_dir / name;
      if (in.ctest_log_dir.empty() || !fresh(log)) continue;
      if (auto text = read_file(log)) {
        logged_ = parse_ctest_log(*text);
        break;
      }
    }
  }
  bool fresh(const fs::path& f) const {
    std::error_code e;
    auto t = fs::last_write_time(f, e);
    return !e && started_ && t >= *started_;
  }
  // Why a test left no outcome: a timeout when CTest's log says it ran as long as its limit.
  std::pair<std::string, std::string> missing(const std::string& test, double timeout_s, const std::string& what) const {
    auto it = logged_.find(test);
    if (it == logged_.end())
      return {"TEST_CRASHED", what + ": " + test + " did not run in this ctest run, or died before writing it" + stale_note};
    const LoggedTest& l = it->second;
    if (timeout_s > 0 && l.time_s >= 0.99 * timeout_s)
      return {"TEST_TIMEOUT", what + ": " + test + " ran " + fmt::format("{:.0f}", l.time_s) + " s, its timeout is " +
                                  fmt::format("{:.0f}", timeout_s) + " s"};
    if (l.last_output.find("SKIPPED") != std::string::npos)
      return {"TEST_CRASHED", what + ": " + test + " was skipped: " + l.last_output.substr(0, 300)};
    std::string d = what + ": " + test + " ended after " + fmt::format("{:.1f}", std::max(l.time_s, 0.0)) + " s without writing it";
    if (!l.last_output.empty()) d += "; its last output: " + l.last_output.substr(0, 300);
    return {"TEST_CRASHED", d};
  }
  // Seconds since gate.setup's marker: the gate run's wall time so far.
  std::optional<double> seconds_since_start() const {
    if (!started_) return std::nullopt;
    return std::chrono::duration<double>(fs::file_time_type::clock::now() - *started_).count();
  }
  std::string stale_note;  // appended where a file is refused as stale: why nothing counts as fresh

 private:
  fs::path marker_;
  std::optional<fs::file_time_type> started_;
  std::map<std::string, LoggedTest> logged_;
};

// The comparison of kernel against baseline (bench/include/attngate/bench/comparison_document.hpp),
// fresh from this run and schema-valid, or nothing with the reason why.
std::optional<bench::ComparisonDocument> load_comparison(const ReportInputs& in, const std::string& kernel,
                                                         const std::string& baseline, const Freshness& freshness,
                                                         Reasons& reasons) {
  std::string perr;
  std::optional<json> perf_json;
  std::optional<bench::ComparisonDocument> perf;
  if (!fs::exists(in.perf)) {
    auto [code, detail] = freshness.missing("gate.performance", in.perf_timeout_s, "no " + in.perf.string());
    reasons.add(code == "TEST_TIMEOUT" ? code : "NO_PERF", "", detail);
  } else if (!freshness.fresh(in.perf)) {
    reasons.add("NO_PERF", "", in.perf.string() + " is older than this gate run: gate.performance did not run" + freshness.stale_note);
  } else if (!(perf_json = read_json(in.perf, &perr))) {
    reasons.add("NO_PERF", "", perr);
  } else if (auto problems = comparison_problems(in.repo, *perf_json); !problems.empty()) {
    reasons.add("NO_PERF", "", in.perf.string() + " is not an attngate.comparison/1 document (" + kComparisonSchemaFile +
                                   "): " + fmt::format("{}", fmt::join(std::vector<std::string>(problems.begin(),
                                                                         problems.begin() + std::min<size_t>(problems.size(), 3)), "; ")));
  } else if (!(perf = parse_comparison(*perf_json, &perr))) {
    reasons.add("NO_PERF", "", in.perf.string() + ": " + perr);
  } else if (perf->kernel != kernel || perf->base != baseline) {
    reasons.add("NO_PERF", "", in.perf.string() + " compares " + perf->kernel + " against " + perf->base +
                                   "; the gate needs " + kernel + " against " + baseline);
    perf.reset();
  }
  return perf;
}

// FOREIGN_KERNEL's detail for one kernel's timing, "" when it launched only its inventory's kernels.
std::string foreign_kernels(const json& t, const std::string& role, const std::string& name, const char* key) {
  std::vector<std::string> names;
  for (const auto& n : t["foreign_kernel_names"]) names.push_back(n.get<std::string>());
  const double count = std::max(double(names.size()), num(t, "foreign_kernels").value_or(0));
  if (count <= 0) return "";
  std::vector<std::string> first(names.begin(), names.begin() + std::min<std::size_t>(names.size(), 3));
  return role + " '" + name + "' launched " + fmt::format("{:.0f}", count) + " kernel(s) its worker's build-time inventory lacks" +
         (first.empty() ? std::string() : ": " + fmt::format("{}", fmt::join(first, ", "))) + (names.size() > first.size() ? ", ..." : "") +
         " (settings." + key + ": fail)";
}

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

// The timing rules of one scenario (agent_hooks/README.md, "Reason codes"): each hit flags the row
// and, unless it is informational, fails the gate with its code.
void judge_timed_row(ScenarioResult& row, const bench::ComparisonDocument& P, const bench::ComparisonScenario& ps,
                     const Policy& policy, double floor, const std::string& kernel, const std::string& baseline,
                     Reasons& reasons) {
  const std::string& id = row.id;
  const json cand = row.candidate, base = row.baseline;  // the rules read the figures by name
  std::vector<std::string>& flags = row.flags;
  auto flag = [&](const std::string& code, const std::string& detail, bool failure = true) {
    flags.push_back(checked_reason_code(code));
    if (failure) reasons.add(code, id, id + ": " + detail);
  };
  if (auto sp = ps.speedup; sp && *sp < floor)
    flag("SCENARIO_BELOW_FLOOR", "speedup " + fmt::format("{:.4f}", *sp) + " < floor " + fmt::format("{:.4f}", floor));
  const auto foreign = num(cand, "foreign_stream_kernels").value_or(0);
  const auto streams = num(cand, "streams").value_or(0);
  if (foreign > 0 || streams > 1)
    flag("SIDE_STREAM_WORK", fmt::format("{:.0f}", foreign) + " kernel(s) over the traced calls ran on a stream other than "
                             "the harness stream; " + fmt::format("{:.0f}", streams) + " stream(s) used (baseline: " +
                             fmt::format("{:.0f}", num(base, "foreign_stream_kernels").value_or(0)) + " such kernels)");
  if (cand["kernel_count_changed"].get<bool>())
    flag("KERNEL_COUNT_CHANGED", "kernels per call varied from " + cand["kernel_count_min"].dump() + " to " +
                                     cand["kernel_count_max"].dump() + " between traced calls (baseline: " +
                                     base["kernel_count_min"].dump() + " to " + base["kernel_count_max"].dump() + ")");
  if (auto k = num(cand, "kernel_ms"); !k || *k <= 0) {
    flag("WALL_KERNEL_MISMATCH", "CUPTI recorded no kernel time for the candidate's traced calls");
  } else {
    // A worker's wall time carries the process round trip: CLOCK_DISAGREE (a) judges it instead.
    const bool isolated = cand.value("process", "") == "worker";
    for (const auto& [clock, name] : {std::pair{"event_ms", "event time"}, std::pair{"wall_ms", "wall time"}}) {
      if (isolated && std::string(clock) == "wall_ms") continue;
      Mismatch m = clock_mismatch(cand, base, clock, name);
      if (m.hit) {
        flag("WALL_KERNEL_MISMATCH", m.detail);
        break;
      }
    }
  }
  // A call is the kernel's work alone: no copies, no memsets, whatever the baseline does; a
  // library control's copies and memsets are the library's (cuDNN makes one memset a call).
  const bool library_control = policy.library_controls.count(kernel) > 0;
  if (!library_control && num(cand, "memcpy_per_call").value_or(0) > 0)
    flag("MEMCPY_IN_CALL", fmt::format("{:.2f}", num(cand, "memcpy_per_call").value_or(0)) +
                               " memcpy per traced call of the candidate (baseline: " +
                               fmt::format("{:.2f}", num(base, "memcpy_per_call").value_or(0)) + ")");
  if (!library_control && num(cand, "memset_per_call").value_or(0) > 0)
    flag("MEMSET_IN_CALL", fmt::format("{:.2f}", num(cand, "memset_per_call").value_or(0)) +
                               " memset per traced call of the candidate (baseline: " +
                               fmt::format("{:.2f}", num(base, "memset_per_call").value_or(0)) + ")");

  // The GPU to itself: another process's work perturbs every clock of both kernels.
  if (auto seen = ps.gpu_processes; seen && *seen > ps.gpu_processes_expected)
    flag("GPU_SHARED", std::to_string(*seen) + " CUDA processes held the GPU while it was timed, the gate's own are " +
                           std::to_string(ps.gpu_processes_expected) + " (the judge and its workers): another process shared it; "
                           "run the gate on an idle GPU");
  // Isolation: the candidate's code never shares the judge's process.
  if (const std::string process = str(cand, "process");
      process != "worker" || num(cand, "isolated").value_or(0) != 1)
    flag("NOT_ISOLATED", "the candidate ran " +
                             (process.empty() ? std::string("in an unrecorded process") : "'" + process + "'") +
                             " (isolated=" + opt_fmt("%.0f", num(cand, "isolated")) +
                             "); the gate requires it to run in a worker process apart from the judge");
  // Every clock agrees with the others as the baseline's do.
  if (auto d = clock_disagreements(cand, base, policy); !d.empty()) flag("CLOCK_DISAGREE", fmt::format("{}", fmt::join(d, "; ")));
  // The baseline ran undisturbed: its round trip to the judge in this scenario is the one
  // measured before the candidate's worker existed, and no other context kept the judge's hold
  // kernel off the GPU during its calls (a GPU hog elsewhere slows every clock of the baseline).
  if (auto d = baseline_disturbance(base, policy); !d.empty()) flag("BASELINE_DISTURBED", d);
  // No clock beats the device.
  const Plausibility pl = plausibility(P, ps, cand, base, policy.wall_slack_ms);
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

// What the timed rows say beyond each row: the geomean and the builds the workers named.
struct TimingTally {
  Geomean geomean;
  PerformanceInfo perf_info;
  std::set<std::string> built_trees;        // kernel_tree_sha256 of the candidate's worker, per row
  std::vector<std::string> timed_unhashed;  // rows timed in a worker that named no build
  bool timed_in_worker = false;
  std::string built_tree_dir;  // the folder that worker hashed, relative to the repository
};

// Timing: every scenario of the suite timed against the baseline, each row judged by the timing
// rules, the geomean's CI lower bound against the target (only when every scenario was timed).
TimingTally judge_timing(const ReportInputs& in, const bench::ComparisonDocument& P,
                         std::vector<ScenarioResult>& scenarios, const Policy& policy, const Target& target,
                         Reasons& reasons) {
  TimingTally t;
  const double geomean_target = *target.geomean, floor = target.scenario_floor.value_or(0);
  std::map<std::string, const bench::ComparisonScenario*> by_id;
  for (const auto& ps : P.scenarios) by_id[ps.id] = &ps;
  std::map<std::string, const bench::FailedScenario*> failed;
  for (const auto& f : P.failed) failed[f.id] = &f;
  // A failure of no scenario of the suite (the bench's suite summary): nothing it wrote can be judged.
  for (const auto& f : P.failed)
    if (std::none_of(scenarios.begin(), scenarios.end(), [&](const auto& row) { return row.id == f.id; }))
      reasons.add("NO_PERF", "", in.perf.filename().string() + ": " + f.id + ": " + f.error);
  bool perf_complete = true;
  for (auto& row : scenarios) {
    const std::string id = row.id;
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      perf_complete = false;
      auto f = failed.find(id);
      reasons.add(f != failed.end() ? untimed_code(*f->second) : "NO_PERF", id,
                  f != failed.end() ? id + " was not timed: " + f->second->error
                                    : id + " is missing from " + in.perf.filename().string());
      continue;
    }
    const bench::ComparisonScenario& ps = *it->second;
    // A hash that is not 64 hex digits (blanked, truncated) names no build, as a verify result's.
    if (const auto& tree = ps.kernel_timing.kernel_tree_sha256; is_sha256_hex(tree)) t.built_trees.insert(tree);
    else if (ps.kernel_timing.process == "worker") t.timed_unhashed.push_back(id);
    t.timed_in_worker |= ps.kernel_timing.process == "worker";
    if (const auto& dir = ps.kernel_timing.kernel_tree_dir; !dir.empty()) t.built_tree_dir = dir;
    fill_timed_row(row, ps);
    judge_timed_row(row, P, ps, policy, floor, target.kernel, target.baseline, reasons);
  }
  t.geomean.speedup = P.geomean_speedup;
  t.geomean.kernel_speedup = P.geomean_kernel_speedup;
  t.geomean.wall_speedup = P.geomean_wall_speedup;
  t.geomean.scenarios = std::int64_t(P.scenarios.size());
  t.geomean.bootstrap_resamples = P.bootstrap_resamples;
  if (P.geomean_ci95[0] && P.geomean_ci95[1]) {
    t.geomean.ci_low = P.geomean_ci95[0];
    t.geomean.ci_high = P.geomean_ci95[1];
  }
  if (perf_complete) {
    auto lo = t.geomean.ci_low;
    if (!lo)
      reasons.add("GEOMEAN_BELOW_TARGET", "", "the comparison has no confidence interval of the t.geomean");
    else if (*lo < geomean_target)
      reasons.add("GEOMEAN_BELOW_TARGET", "",
                  "t.geomean " + opt_fmt("%.4f", t.geomean.speedup) + ", 95% CI [" + fmt::format("{:.4f}", *lo) + ", " +
                      opt_fmt("%.4f", t.geomean.ci_high) + "]: the lower bound " + fmt::format("{:.4f}", *lo) +
                      " does not clear the target " + fmt::format("{:.4f}", geomean_target));
  }
  if (const std::string found = forbidden_symbols(P); !found.empty()) reasons.add("FORBIDDEN_SYMBOL", "", found);
  if (const std::string missing = sandbox_gaps(P.sandbox); !missing.empty() && policy.sandbox_fail)
    reasons.add("SANDBOX_UNAVAILABLE", "", "the workers ran without " + missing + " (settings.sandbox: fail)");
  t.perf_info = {in.perf.string(), P.wall_s, P.noise_target};
  return t;
}

// What the verify results say beyond each scenario's row.
struct VerifyTally {
  std::string base_seed;                       // the first result's, for replay
  std::string no_device_detail;                // a result skipped for want of a CUDA device
  std::set<std::string> verified_trees;        // kernel_tree_sha256 of the worker each result came from
  std::vector<std::string> verified_unhashed;  // results that ran but name no build
};

// Correctness of one scenario: its verify result read as verify::ResultDocument, fresh from this
// run, and judged (passed, failed, nondeterministic by policy, skipped, crashed).
ScenarioResult judge_verify_result(const ReportInputs& in, const std::string& kernel, const Scenario& s,
                                   const Policy& policy, const Freshness& freshness, Reasons& reasons,
                                   VerifyTally& tally) {
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
      err = file.string() + ": not a " + kVerifyResultSchema + ": " + e.what();
    }
    return doc.has_value();
  };
  if (!fs::exists(file)) {
    row.status = "missing";
    auto [code, detail] = freshness.missing(test, in.verify_timeout_s, "no result " + file.filename().string());
    reasons.add(code, s.id, detail);
  } else if (!freshness.fresh(file)) {
    row.status = "stale";
    reasons.add("TEST_CRASHED", s.id, file.string() + " is older than this gate run: the test did not run" + freshness.stale_note);
  } else if (!(res = read_json(file, &err)) || !parse()) {
    row.status = "unreadable";
    reasons.add("TEST_CRASHED", s.id, err);
  } else {
    const verify::ResultDocument& r = *doc;
    if (r.kernel_tree_sha256 && is_sha256_hex(*r.kernel_tree_sha256)) tally.verified_trees.insert(*r.kernel_tree_sha256);
    else if (r.status == "passed" || r.status == "failed") tally.verified_unhashed.push_back(s.id);
    const std::string& status = r.status;
    const std::string result_seed = r.base_seed.value_or("");
    row.status = status;
    if (tally.base_seed.empty()) tally.base_seed = result_seed;
    std::optional<double> o_max, lse_max;
    std::string first_reason;
    auto finite = [](double v) { return std::isfinite(v) ? std::optional<double>(v) : std::nullopt; };
    for (const auto& run : r.runs) {
      if (auto v = finite(run.o.max_abs)) o_max = std::max(o_max.value_or(0), *v);
      if (auto v = finite(run.lse.max_abs)) lse_max = std::max(lse_max.value_or(0), *v);
      if (first_reason.empty() && !run.pass)
        first_reason = run.distribution + ": " + (run.reasons.empty() ? std::string("failed") : run.reasons[0]);
    }
    row.o_max_abs = o_max;
    row.lse_max_abs = lse_max;
    row.base_seed = result_seed;
    if (status == "passed") {
      row.correct = true;
    } else if (status == "failed" && only_nondeterministic(r)) {
      // Within the error bounds, but a repeated call differs: its own reason, and a policy.
      row.nondeterministic = true;
      row.correct = !policy.nondeterminism_fail;
      row.flags = {"NONDETERMINISTIC"};
      if (policy.nondeterminism_fail)
        reasons.add("NONDETERMINISTIC", s.id,
                    s.id + " (" + first_reason + "); replay: ATTNGATE_SEED=" + result_seed + " ctest -R '" +
                        test + "$' (settings.nondeterminism: fail)");
    } else if (status == "failed") {
      row.correct = false;
      reasons.add("CORRECTNESS_FAILED", s.id,
                  s.id + " (" + (first_reason.empty() ? std::string("see the test output") : first_reason) +
                      "); replay: ATTNGATE_SEED=" + result_seed + " ctest -R '" + test + "$'");
    } else if (status == "skipped") {
      reasons.add("TEST_SKIPPED", s.id, test + " was skipped: " + r.detail);
      if (r.skip_reason == "no_device" && tally.no_device_detail.empty())
        tally.no_device_detail = r.detail;
    } else if (status == "error") {
      reasons.add("TEST_CRASHED", s.id, test + " threw: " + r.detail);
    } else {
      reasons.add("TEST_CRASHED", s.id, test + " wrote an unknown status '" + status + "'");
    }
  }
  return row;
}

// CANDIDATE_CHANGED: the folder judged now is the one compiled into the measured worker, and the
// build verification judged is the build that was timed. Records the folder's hashes in `prov`.
void judge_candidate_tree(const ReportInputs& in, const std::string& kernel, const TimingTally& timing,
                          const VerifyTally& tally, Provenance& prov, Reasons& reasons) {
  const std::set<std::string>& built_trees = timing.built_trees;
  std::error_code rel_ec;
  // The folder the worker hashed when it was built (kernels/candidate for the candidate; the
  // adversarial library's for a planted cheat), else the candidate source's folder.
  const fs::path tree_dir = !in.candidate_tree.empty() ? in.candidate_tree
                            : !timing.built_tree_dir.empty() ? in.repo / timing.built_tree_dir
                                                       : in.candidate.parent_path();
  std::string tree_rel = fs::relative(tree_dir, in.repo, rel_ec).generic_string();
  if (rel_ec || tree_rel.empty()) tree_rel = tree_dir.string();
  std::string tree_now, tree_error;
  try {
    tree_now = candidate_tree_sha256(tree_dir);
  } catch (const std::exception& e) {
    tree_error = e.what();
  }
  prov.candidate_tree = tree_rel;
  if (!tree_now.empty()) prov.candidate_tree_sha256 = tree_now;
  prov.candidate_tree_error = tree_error;
  if (built_trees.size() == 1) prov.candidate_tree_sha256_built = *built_trees.begin();
  if (built_trees.size() > 1) {
    const std::vector<std::string> trees(built_trees.begin(), built_trees.end());
    reasons.add("CANDIDATE_CHANGED", "", in.perf.filename().string() + "'s scenarios were measured with " +
                                             std::to_string(trees.size()) + " different builds of " + tree_rel +
                                             " (kernel_tree_sha256 " + fmt::format("{}", fmt::join(trees, ", ")) + ")");
  } else if (built_trees.size() == 1 && tree_now.empty()) {
    reasons.add("CANDIDATE_CHANGED", "", "the worker was built from " + tree_rel + " tree " + *built_trees.begin() +
                                             ", but the folder cannot be hashed now: " + tree_error);
  } else if (built_trees.size() == 1 && *built_trees.begin() != tree_now) {
    reasons.add("CANDIDATE_CHANGED", "", "the worker was built from " + tree_rel + " tree " + *built_trees.begin() +
                                             ", but " + tree_rel + " hashes to " + tree_now +
                                             " now: the candidate changed after it was built");
  }
  // The build verification judged must be the build that was timed.
  if (tally.verified_trees.size() > 1 ||
      (tally.verified_trees.size() == 1 && built_trees.size() == 1 && *tally.verified_trees.begin() != *built_trees.begin())) {
    const std::vector<std::string> trees(tally.verified_trees.begin(), tally.verified_trees.end());
    reasons.add("CANDIDATE_CHANGED", "", "verification judged build(s) " + fmt::format("{}", fmt::join(trees, ", ")) + " of " + tree_rel +
                                             (built_trees.size() == 1 ? ", the timing build " + *built_trees.begin() : "") +
                                             ": the candidate was rebuilt between the gate's tests");
  }
  // A worker names the build it was compiled from at its hello; one that names none (its hash blanked
  // or never compiled in) cannot be tied to the folder judged.
  if (!timing.timed_unhashed.empty())
    reasons.add("CANDIDATE_CHANGED", "", std::to_string(timing.timed_unhashed.size()) + " scenario(s) of " + kernel +
                                             " were timed in a worker that named no build of " + tree_rel +
                                             " (first: " + timing.timed_unhashed.front() +
                                             "): the timing cannot be tied to the folder judged");
  // A worker was timed, so verification ran one too: a result naming no build cannot be tied to it.
  if (timing.timed_in_worker && !tally.verified_unhashed.empty())
    reasons.add("CANDIDATE_CHANGED", "", std::to_string(tally.verified_unhashed.size()) + " verify result(s) of " + kernel +
                                             " name no build of " + tree_rel + " (first: " + tally.verified_unhashed.front() +
                                             "), while the timed worker was built from " +
                                             (built_trees.empty() ? std::string("no named build") : *built_trees.begin()) +
                                             ": verification cannot be tied to the timed build");
}

// HARNESS_UNVERIFIED / HARNESS_MODIFIED: every harness file is the commit's (the kernel's own
// folders excluded).
HarnessRecord judge_harness(const ReportInputs& in, const std::string& kernel, const std::string& cand_rel,
                            const std::string& commit, Reasons& reasons) {
  std::vector<std::string> excluded = {"kernels/" + kernel};
  if (cand_rel.rfind("../", 0) != 0 && fs::path(cand_rel).has_parent_path())
    excluded.push_back(fs::path(cand_rel).parent_path().generic_string());
  HarnessCheck h = check_harness(in.repo, excluded);
  if (!h.verified) {
    reasons.add("HARNESS_UNVERIFIED", "", h.why);
  } else if (!h.modified.empty()) {
    std::vector<std::string> first(h.modified.begin(), h.modified.begin() + std::min<std::size_t>(h.modified.size(), 8));
    reasons.add("HARNESS_MODIFIED", "", std::to_string(h.modified.size()) + " harness file(s) differ from commit " +
                                            commit.substr(0, 12) + ": " + fmt::format("{}", fmt::join(first, ", ")) +
                                            (h.modified.size() > first.size() ? ", ..." : ""));
  }
  return {h.verified, h.why, h.modified, excluded, harness_roots(), h.sha256};
}

// The device, driver and clocks the comparison was measured with.
Provenance device_provenance(const std::optional<bench::ComparisonDocument>& perf) {
  Provenance prov;
  if (!perf) return prov;
  const bench::ComparisonDocument& P = *perf;
  prov.gpu = P.device;
  prov.device_sm = P.device_sm;
  prov.driver = P.driver_version;
  prov.cuda_driver = P.cuda_driver_version;
  prov.cuda = P.cuda_runtime_version;
  prov.peak_tflops = P.peak_tflops;
  prov.sm_clock = P.sm_clock;
  prov.sm_clock_mhz = P.sm_clock.median_mhz;
  return prov;
}

GateReportOutput build_gate_report(const ReportInputs& in) {
  const auto suites = load_suites(in.scenarios_dir);
  const Suite& suite = find_suite(suites, in.suite, in.scenarios_dir);
  const std::string kernel = kernel_of(in, suite);
  const std::string baseline = baseline_of(in, suite);
  const std::string suite_file = fs::path(suite.file).filename().string();

  const Target target = read_target(suite, suite_file, kernel, baseline);
  const Policy policy = read_policy(suite, suite_file);

  const Freshness freshness(in);

  Reasons reasons;
  std::vector<ScenarioResult> scenarios;
  VerifyTally tally;

  // Correctness: one verify result per scenario of every suite the gate checks; the gate suite's
  // rows also carry its timing (below), the others' are counted in `correctness`.
  const std::vector<const Suite*> checked = correctness_suites(suites, suite, in.scenarios_dir);
  Correctness correctness;
  for (const Suite* cs : checked) correctness.suites.push_back(cs->name);
  for (const Suite* cs : checked)
  for (const auto& s : cs->scenarios) {
    ScenarioResult row = judge_verify_result(in, kernel, s, policy, freshness, reasons, tally);
    ++correctness.scenarios;
    if (row.correct.value_or(false)) ++correctness.passed;
    else correctness.failed.push_back(s.id);
    if (cs == &suite) scenarios.push_back(std::move(row));
  }
  if (!tally.no_device_detail.empty())
    reasons.add("NO_DEVICE", "", tally.no_device_detail + " (gate.device fails for the same reason)");

  // Performance: the comparison of kernel against baseline, interleaved, on every scenario.
  const std::optional<bench::ComparisonDocument> perf = load_comparison(in, kernel, baseline, freshness, reasons);
  const TimingTally timing = perf ? judge_timing(in, *perf, scenarios, policy, target, reasons) : TimingTally{};
  // The fastest library measured on this GPU, per scenario (a missing file is fine: the report says so).
  const BestBaselines best = load_best_baselines(in.repo, perf ? perf->device : std::string{});
  const Baselines baselines = apply_best_baselines(scenarios, best);

  // Provenance and tamper evidence.
  Provenance prov = device_provenance(perf);
  std::error_code rel_ec;
  std::string cand_rel = fs::relative(in.candidate, in.repo, rel_ec).generic_string();
  if (rel_ec || cand_rel.empty()) cand_rel = in.candidate.string();
  GitState git = git_state(in.repo, cand_rel);
  prov.attngate_commit = git.commit;
  prov.attngate_dirty = git.dirty;
  prov.candidate = cand_rel;
  prov.candidate_sha256 = sha256_file(in.candidate).value_or("");
  prov.base_seed = tally.base_seed;
  if (prov.candidate_sha256.empty())
    reasons.add("TEST_CRASHED", "", "cannot read the candidate source " + in.candidate.string());

  judge_candidate_tree(in, kernel, timing, tally, prov, reasons);
  const HarnessRecord harness = judge_harness(in, kernel, cand_rel, git.commit, reasons);

  GateReport report;
  report.verdict = reasons.empty() ? "pass" : "fail";
  report.reasons = reasons.done();
  report.suite = suite.name;
  report.target = target;
  report.policy = policy.record;
  report.geomean = timing.geomean;
  report.scenarios = std::move(scenarios);
  report.correctness = correctness;
  report.baselines = baselines;
  report.best_baselines = best_baselines_info(best);
  report.provenance = prov;
  report.harness = harness;
  report.performance = timing.perf_info;
  report.inputs = {in.results_dir.string(), in.perf.string(), in.started_after.string(), in.scenarios_dir.string()};
  report.time = now_iso8601();
  if (auto since = freshness.seconds_since_start()) report.wall_s = *since;

  GateReportOutput out;
  out.pass = reasons.empty();
  out.report = report;
  out.markdown = markdown(out.report, reasons);
  return out;
}

void write_gate_report(const GateReportOutput& out, const fs::path& out_dir) {
  fs::create_directories(out_dir);
  write_file_atomically(out_dir / "report.json", out.report.dump(1) + "\n");
  write_file_atomically(out_dir / "report.md", out.markdown);
}

}  // namespace attngate::hooks
