#include "attngate/shard.hpp"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <stdexcept>

namespace attngate {

ShardSpec parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  ShardSpec s;
  auto parse = [&](std::string_view part, int& out) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    return ec == std::errc() && end == part.data() + part.size() && !part.empty();
  };
  const std::string_view v(text);
  if (slash == std::string::npos || !parse(v.substr(0, slash), s.index) || !parse(v.substr(slash + 1), s.count) ||
      s.count < 1 || s.index < 0 || s.index >= s.count)
    throw std::invalid_argument("bad shard '" + text + "': expected i/N with 0 <= i < N");
  return s;
}

double scenario_cost(const Scenario& s) { return s.flops() + 5e11; }

std::vector<Scenario> shard_scenarios(const std::vector<Scenario>& all, ShardSpec spec) {
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double fa = scenario_cost(all[a]), fb = scenario_cost(all[b]);
    return fa != fb ? fa > fb : all[a].id < all[b].id;
  });
  std::vector<double> load(spec.count, 0.0);
  std::vector<int> owner(all.size());
  for (size_t i : order) {
    const int least = int(std::min_element(load.begin(), load.end()) - load.begin());
    owner[i] = least;
    load[least] += scenario_cost(all[i]);
  }
  std::vector<Scenario> out;
  for (size_t i = 0; i < all.size(); ++i)
    if (owner[i] == spec.index) out.push_back(all[i]);
  return out;
}

}  // namespace attngate
