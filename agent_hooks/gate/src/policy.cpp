#include "attngate/gate/policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace attngate::hooks {
namespace fs = std::filesystem;

namespace {

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

}  // namespace

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

// The suites the gate judges correctness on: its own, then settings.correctness_suites in order.
std::vector<const Suite*> correctness_suites(const std::vector<Suite>& suites, const Suite& gate, const fs::path& dir) {
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

}  // namespace attngate::hooks
