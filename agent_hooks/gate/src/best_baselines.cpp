#include "attngate/gate/best_baselines.hpp"

#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include "attngate/gate/digest.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string text_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

// One scenario's entry; nullopt when it cannot serve as the bar (incorrect, no positive TFLOPS).
std::optional<BestBaselineRef> entry_of(const json& e) {
  if (!e.is_object()) return std::nullopt;
  if (auto c = e.find("correct"); c != e.end() && c->is_boolean() && !c->get<bool>()) return std::nullopt;
  auto tf = e.find("tflops");
  if (tf == e.end() || !tf->is_number() || !std::isfinite(tf->get<double>()) || tf->get<double>() <= 0)
    return std::nullopt;
  BestBaselineRef b{text_of(e, "library"), tf->get<double>(), text_of(e, "date")};
  if (b.library.empty()) b.library = "unknown";
  return b;
}

}  // namespace

std::string gpu_slug(const std::string& device) {
  std::string out;
  for (unsigned char c : device) out += std::isalnum(c) ? static_cast<char>(std::tolower(c)) : '_';
  return out;
}

fs::path best_baselines_file(const fs::path& repo, const std::string& device) {
  return repo / "bench" / "baselines" / (gpu_slug(device) + ".json");
}

BestBaselines load_best_baselines(const fs::path& repo, const std::string& device) {
  BestBaselines out;
  BestBaselinesInfo& info = out.info;
  if (device.empty()) {
    info.note = "no best-baseline file: the performance JSON names no GPU";
    return out;
  }
  const fs::path file = best_baselines_file(repo, device);
  info.file = file.string();
  const std::optional<std::string> text = read_file(file);
  if (!text) {
    info.note = "no best-baseline file for " + device + " (" + file.string() + ")";
    return out;
  }
  const json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || text_of(j, "schema") != kBestBaselinesSchema) {
    info.note = file.string() + " is not a " + kBestBaselinesSchema + " document; best baselines not read";
    return out;
  }
  info.gpu = text_of(j, "gpu");
  info.updated = text_of(j, "updated");
  if (auto s = j.find("scenarios"); s != j.end() && s->is_object())
    for (const auto& [id, e] : s->items())
      if (auto b = entry_of(e)) out.scenarios[id] = *b;
  info.scenarios = std::int64_t(out.scenarios.size());
  return out;
}

}  // namespace attngate::hooks
