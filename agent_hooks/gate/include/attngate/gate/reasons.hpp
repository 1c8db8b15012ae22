#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "attngate/gate/reason_codes.hpp"
#include "attngate/gate/report.hpp"

namespace attngate::hooks {

// A reason's list of names: the first `n` of `items` joined by `sep`, then "<sep>..." when there are more.
inline std::string first_listed(const std::vector<std::string>& items, std::size_t n, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < n; ++i) out += (i ? sep : "") + items[i];
  return items.size() > n ? out + sep + "..." : out;
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

}  // namespace attngate::hooks
