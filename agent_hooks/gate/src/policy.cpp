#include "attngate/gate/policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
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
  using R = PolicyRecord;
  Policy p;
  auto value_of = [&](const char* key, const char* def, std::string& source) {
    std::string v = setting(suite, key);
    source = v.empty() ? std::string("default") : suite_file + " settings." + key;
    return v.empty() ? std::string(def) : v;
  };
  // Each number: settings.<key> or its default, recorded with its source.
  struct NumberSetting {
    const char* key;
    const char* fallback;
    double R::*value;
    std::string R::*source;
  };
  static constexpr NumberSetting kNumbers[] = {
      {"clock_tolerance", kDefaultClockTolerance, &R::clock_tolerance, &R::clock_tolerance_source},
      {"clock_slack_ms", kDefaultClockSlackMs, &R::clock_slack_ms, &R::clock_slack_ms_source},
      {"wall_slack_ms", kDefaultWallSlackMs, &R::wall_slack_ms, &R::wall_slack_ms_source},
      {"baseline_disturbed_us", kDefaultBaselineDisturbedUs, &R::baseline_disturbed_us, &R::baseline_disturbed_us_source},
      {"baseline_alone_tolerance", kDefaultBaselineAloneTolerance, &R::baseline_alone_tolerance,
       &R::baseline_alone_tolerance_source},
      {"baseline_alone_slack_us", kDefaultBaselineAloneSlackUs, &R::baseline_alone_slack_us,
       &R::baseline_alone_slack_us_source},
      {"worker_clock_trust_us", kDefaultWorkerClockTrustUs, &R::worker_clock_trust_us, &R::worker_clock_trust_us_source},
  };
  for (const NumberSetting& n : kNumbers) {
    const std::string v = value_of(n.key, n.fallback, p.*n.source);
    p.*n.value = parse_number(p.*n.source == "default" ? std::string("default ") + n.key : p.*n.source, v, 0, true);
  }
  // Each fail-or-allow choice likewise, and whether it fails.
  struct ChoiceSetting {
    const char* key;
    const char* fallback;
    std::string R::*value;
    std::string R::*source;
    bool Policy::*fails;
  };
  static constexpr ChoiceSetting kChoices[] = {
      {"candidate_foreign_kernels", kDefaultCandidateForeignKernels, &R::candidate_foreign_kernels,
       &R::candidate_foreign_kernels_source, &Policy::candidate_foreign_fail},
      {"baseline_foreign_kernels", kDefaultBaselineForeignKernels, &R::baseline_foreign_kernels,
       &R::baseline_foreign_kernels_source, &Policy::baseline_foreign_fail},
      {"nondeterminism", kDefaultNondeterminism, &R::nondeterminism, &R::nondeterminism_source, &Policy::nondeterminism_fail},
      {"sandbox", kDefaultSandbox, &R::sandbox, &R::sandbox_source, &Policy::sandbox_fail},
  };
  for (const ChoiceSetting& c : kChoices) {
    const std::string& v = p.*c.value = value_of(c.key, c.fallback, p.*c.source);
    if (v != "fail" && v != "allow") throw ReportConfigError(p.*c.source + "='" + v + "' is not fail or allow");
    p.*c.fails = v == "fail";
  }
  std::set<std::string> controls;  // sorted, each once
  std::stringstream list(value_of("library_controls", "", p.library_controls_source));
  for (std::string k; std::getline(list, k, ',');)
    if (!k.empty()) controls.insert(k);
  p.library_controls.assign(controls.begin(), controls.end());
  p.clock_rule =
      "per pair of clocks, |(candidate X - Y) - (baseline X - Y)| <= clock_tolerance * max(event_ms) + clock_slack_ms "
      "(event-time pairs) or + wall_slack_ms (wall vs event; 3 x wall_slack_ms for the wall time of the few fresh calls)";
  p.plausibility_rule =
      "no clock of the candidate below 1e3 * max(flops / (peak_tflops * 1e12), min_bytes / (hbm_tbps * 1e12)) ms";
  p.isolation = "required: the candidate runs in a worker process";
  return p;
}

namespace {

// A target: the environment variable, else settings.<key>, else `fallback` (or, without one, a
// configuration error). `min_inclusive`: whether 0 is a valid value.
void read_one_target(const Suite& suite, const std::string& suite_file, const char* env_name, const char* key,
                     bool min_inclusive, std::optional<double>& value, std::string& source,
                     const std::optional<std::string>& none_source) {
  if (const char* env = std::getenv(env_name); env && *env) {
    value = parse_number(env_name, env, 0, min_inclusive);
    source = env_name;
  } else if (auto v = setting(suite, key); !v.empty()) {
    source = suite_file + " settings." + key;
    value = parse_number(source, v, 0, min_inclusive);
  } else if (none_source) {
    value = 0;
    source = *none_source;
  } else {
    throw ReportConfigError(std::string("no geomean target: set settings.") + key + " in " + suite.file + " or " + env_name);
  }
}

}  // namespace

// Targets: the suite's settings, overridden by the environment (README: "Setting targets").
Target read_target(const Suite& suite, const std::string& suite_file, const std::string& kernel,
                   const std::string& baseline) {
  Target target;
  target.kernel = kernel;
  target.baseline = baseline;
  read_one_target(suite, suite_file, "ATTNGATE_GEOMEAN_TARGET", "geomean_target", false, target.geomean,
                  target.geomean_source, std::nullopt);
  read_one_target(suite, suite_file, "ATTNGATE_SCENARIO_FLOOR", "scenario_floor", true, target.scenario_floor,
                  target.scenario_floor_source, std::string("none (no settings.scenario_floor)"));
  target.rule = "geomean CI lower bound >= geomean; every scenario's speedup >= scenario_floor";
  return target;
}

}  // namespace attngate::hooks
