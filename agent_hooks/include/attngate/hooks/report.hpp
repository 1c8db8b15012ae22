#pragma once
// The gate report (<build>/gate/report.json, schema attngate.gate_report/1) as read by the hooks.
// Fields the gate may omit or write as null (a scenario that never ran has no timings) are optional.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attngate::hooks {

inline constexpr const char* kReportSchema = "attngate.gate_report/1";

struct Timing {
  std::optional<double> event_ms, kernel_ms, wall_ms, cycles;
  std::optional<std::int64_t> kernel_count, streams;
};

struct ScenarioResult {
  std::string id;
  std::string shape;  // "b=4 sq=4096 sk=4096 hq=.. hkv=.. d=128 causal bf16"; empty when not reported
  std::optional<bool> correct;
  std::optional<double> o_max_abs, lse_max_abs;
  std::optional<double> speedup, ci_low, ci_high, tflops, percent_of_peak;
  Timing candidate, baseline;
  std::vector<std::string> flags;
  // The best measured baseline on this GPU (bench/baselines/<gpu>.json) and tflops / its TFLOPS.
  std::string best_baseline_library, best_baseline_date;
  std::optional<double> best_baseline_tflops, fraction_of_best;
};

struct Reason {
  std::string code;
  std::vector<std::string> scenarios;
  std::string detail;
};

struct Target {
  std::optional<double> geomean, scenario_floor;
  std::string baseline;
};

struct Geomean {
  std::optional<double> speedup, ci_low, ci_high, kernel_speedup, wall_speedup;
};

// baseline name -> scenario id -> TFLOPS.
using Baselines = std::map<std::string, std::map<std::string, double>>;

struct GateReport {
  std::string verdict;  // "pass" or "fail"
  std::vector<Reason> reasons;
  Target target;
  Geomean geomean;
  std::vector<ScenarioResult> scenarios;
  nlohmann::json provenance = nlohmann::json::object();
  Baselines baselines;
  std::optional<double> wall_s;
};

// Throws std::runtime_error naming the offending field.
GateReport parse_report(const nlohmann::json& j);
GateReport load_report(const std::filesystem::path& file);
// A fail report made by attngate itself when the gate produced none (build failed, no report).
GateReport synthesized_failure(const std::string& code, const std::string& detail);

bool has_reason(const std::vector<Reason>& reasons, const std::string& code);

void to_json(nlohmann::json& j, const Timing& t);
void from_json(const nlohmann::json& j, Timing& t);
void to_json(nlohmann::json& j, const ScenarioResult& s);
void from_json(const nlohmann::json& j, ScenarioResult& s);
void to_json(nlohmann::json& j, const Reason& r);
void from_json(const nlohmann::json& j, Reason& r);
void to_json(nlohmann::json& j, const Target& t);
void from_json(const nlohmann::json& j, Target& t);
void to_json(nlohmann::json& j, const Geomean& g);
void from_json(const nlohmann::json& j, Geomean& g);

}  // namespace attngate::hooks
