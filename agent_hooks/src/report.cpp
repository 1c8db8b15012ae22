#include "attngate/hooks/report.hpp"

#include <fstream>
#include <stdexcept>

namespace attngate::hooks {
namespace {

using nlohmann::json;

// The gate writes NaN/absent figures as null; both read as "not measured".
template <class T>
void get_opt(const json& j, const char* key, std::optional<T>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    out.reset();
    return;
  }
  out = it->get<T>();
}

template <class T>
void put_opt(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

template <class T>
void get_or(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) out = it->get<T>();
}

}  // namespace

void to_json(json& j, const Timing& t) {
  j = json::object();
  put_opt(j, "event_ms", t.event_ms);
  put_opt(j, "kernel_ms", t.kernel_ms);
  put_opt(j, "wall_ms", t.wall_ms);
  put_opt(j, "cycles", t.cycles);
  put_opt(j, "kernel_count", t.kernel_count);
  put_opt(j, "streams", t.streams);
}

void from_json(const json& j, Timing& t) {
  get_opt(j, "event_ms", t.event_ms);
  get_opt(j, "kernel_ms", t.kernel_ms);
  get_opt(j, "wall_ms", t.wall_ms);
  get_opt(j, "cycles", t.cycles);
  get_opt(j, "kernel_count", t.kernel_count);
  get_opt(j, "streams", t.streams);
}

void to_json(json& j, const ScenarioResult& s) {
  j = json{{"id", s.id}};
  if (!s.shape.empty()) j["shape"] = s.shape;
  put_opt(j, "correct", s.correct);
  put_opt(j, "o_max_abs", s.o_max_abs);
  put_opt(j, "lse_max_abs", s.lse_max_abs);
  put_opt(j, "speedup", s.speedup);
  put_opt(j, "ci_low", s.ci_low);
  put_opt(j, "ci_high", s.ci_high);
  put_opt(j, "tflops", s.tflops);
  put_opt(j, "percent_of_peak", s.percent_of_peak);
  j["candidate"] = s.candidate;
  j["baseline"] = s.baseline;
  j["flags"] = s.flags;
  if (!s.best_baseline_library.empty())
    j["best_baseline"] = {{"library", s.best_baseline_library},
                          {"tflops", s.best_baseline_tflops ? json(*s.best_baseline_tflops) : json(nullptr)},
                          {"date", s.best_baseline_date}};
  put_opt(j, "fraction_of_best", s.fraction_of_best);
}

void from_json(const json& j, ScenarioResult& s) {
  j.at("id").get_to(s.id);
  if (auto it = j.find("shape"); it != j.end() && it->is_string()) s.shape = it->get<std::string>();
  get_opt(j, "correct", s.correct);
  get_opt(j, "o_max_abs", s.o_max_abs);
  get_opt(j, "lse_max_abs", s.lse_max_abs);
  get_opt(j, "speedup", s.speedup);
  get_opt(j, "ci_low", s.ci_low);
  get_opt(j, "ci_high", s.ci_high);
  get_opt(j, "tflops", s.tflops);
  get_opt(j, "percent_of_peak", s.percent_of_peak);
  get_or(j, "candidate", s.candidate);
  get_or(j, "baseline", s.baseline);
  get_or(j, "flags", s.flags);
  if (auto it = j.find("best_baseline"); it != j.end() && it->is_object()) {
    get_or(*it, "library", s.best_baseline_library);
    get_or(*it, "date", s.best_baseline_date);
    get_opt(*it, "tflops", s.best_baseline_tflops);
  }
  get_opt(j, "fraction_of_best", s.fraction_of_best);
}

void to_json(json& j, const Reason& r) {
  j = json{{"code", r.code}, {"scenarios", r.scenarios}, {"detail", r.detail}};
}

void from_json(const json& j, Reason& r) {
  j.at("code").get_to(r.code);
  get_or(j, "scenarios", r.scenarios);
  get_or(j, "detail", r.detail);
}

void to_json(json& j, const Target& t) {
  j = json::object();
  put_opt(j, "geomean", t.geomean);
  put_opt(j, "scenario_floor", t.scenario_floor);
  if (!t.baseline.empty()) j["baseline"] = t.baseline;
}

void from_json(const json& j, Target& t) {
  get_opt(j, "geomean", t.geomean);
  get_opt(j, "scenario_floor", t.scenario_floor);
  get_or(j, "baseline", t.baseline);
}

void to_json(json& j, const Geomean& g) {
  j = json::object();
  put_opt(j, "speedup", g.speedup);
  put_opt(j, "ci_low", g.ci_low);
  put_opt(j, "ci_high", g.ci_high);
  put_opt(j, "kernel_speedup", g.kernel_speedup);
  put_opt(j, "wall_speedup", g.wall_speedup);
}

void from_json(const json& j, Geomean& g) {
  get_opt(j, "speedup", g.speedup);
  get_opt(j, "ci_low", g.ci_low);
  get_opt(j, "ci_high", g.ci_high);
  get_opt(j, "kernel_speedup", g.kernel_speedup);
  get_opt(j, "wall_speedup", g.wall_speedup);
}

GateReport parse_report(const json& j) {
  if (!j.is_object()) throw std::runtime_error("the report is not a JSON object");
  GateReport r;
  try {
    if (auto it = j.find("schema"); it != j.end()) {
      auto schema = it->get<std::string>();
      if (schema != kReportSchema)
        throw std::runtime_error("unsupported schema '" + schema + "' (expected " + kReportSchema + ")");
    }
    j.at("verdict").get_to(r.verdict);
    if (r.verdict != "pass" && r.verdict != "fail")
      throw std::runtime_error("verdict must be \"pass\" or \"fail\", got \"" + r.verdict + "\"");
    get_or(j, "reasons", r.reasons);
    get_or(j, "target", r.target);
    get_or(j, "geomean", r.geomean);
    get_or(j, "scenarios", r.scenarios);
    if (auto it = j.find("provenance"); it != j.end() && it->is_object()) r.provenance = *it;
    get_or(j, "baselines", r.baselines);
    get_opt(j, "wall_s", r.wall_s);
  } catch (const json::exception& e) {
    // nlohmann's message names the missing key or the type it expected.
    throw std::runtime_error(std::string("malformed report: ") + e.what());
  }
  return r;
}

GateReport load_report(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw std::runtime_error(file.string() + ": not JSON: " + e.what());
  }
  try {
    return parse_report(j);
  } catch (const std::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
}

GateReport synthesized_failure(const std::string& code, const std::string& detail) {
  GateReport r;
  r.verdict = "fail";
  r.reasons.push_back({code, {}, detail});
  return r;
}

bool has_reason(const std::vector<Reason>& reasons, const std::string& code) {
  for (const auto& r : reasons)
    if (r.code == code) return true;
  return false;
}

}  // namespace attngate::hooks
