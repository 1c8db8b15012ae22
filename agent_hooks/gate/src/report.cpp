#include "attngate/gate/reason_codes.hpp"
#include "attngate/gate/report.hpp"

#include <chrono>
#include <ctime>
#include <fstream>
#include <stdexcept>

namespace attngate::hooks {
namespace {

using nlohmann::json;

template <class T>
void get_or(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) out = it->get<T>();
}

}  // namespace

void to_json(json& j, const Reason& r) {
  j = json{{"code", r.code}, {"scenarios", r.scenarios}, {"detail", r.detail}};
}

void from_json(const json& j, Reason& r) {
  j.at("code").get_to(r.code);
  get_or(j, "scenarios", r.scenarios);
  get_or(j, "detail", r.detail);
}

GateReport parse_report(const json& j) {
  if (!j.is_object()) throw std::runtime_error("the report is not a JSON object");
  GateReport r;
  try {
    if (auto it = j.find("schema"); it != j.end() && it->get<std::string>() != kReportSchema)
      throw std::runtime_error("unsupported schema '" + it->get<std::string>() + "' (expected " + kReportSchema + ")");
    if (!j.contains("verdict")) throw std::runtime_error("malformed report: no verdict");
    r = j.get<GateReport>();
  } catch (const json::exception& e) {
    // nlohmann's message names the key or the type it expected.
    throw std::runtime_error(std::string("malformed report: ") + e.what());
  }
  if (r.verdict != "pass" && r.verdict != "fail")
    throw std::runtime_error("verdict must be \"pass\" or \"fail\", got \"" + r.verdict + "\"");
  return r;
}

std::optional<json> read_json(const std::filesystem::path& file, std::string* error) {
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

GateReport load_report(const std::filesystem::path& file) {
  std::string error;
  const std::optional<json> j = read_json(file, &error);
  if (!j) throw std::runtime_error(error);
  try {
    return parse_report(*j);
  } catch (const std::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
}

GateReport synthesized_failure(const std::string& code, const std::string& detail) {
  GateReport r;
  r.verdict = "fail";
  r.reasons.push_back({checked_reason_code(code), {}, detail});
  return r;
}

bool has_reason(const std::vector<Reason>& reasons, const std::string& code) {
  for (const auto& r : reasons)
    if (r.code == code) return true;
  return false;
}

std::string now_iso8601() { return iso8601_utc(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())); }

std::string iso8601_utc(std::time_t t) {
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<long long> parse_iso8601(const std::string& text) {
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return static_cast<long long>(::timegm(&tm));
}

}  // namespace attngate::hooks
