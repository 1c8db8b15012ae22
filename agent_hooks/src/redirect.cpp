#include "attngate/hooks/redirect.hpp"
#include <fmt/printf.h>


#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace attngate::hooks {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

// The digits after `prefix` in a token that is exactly prefix + digits ("d128" for "d").
std::optional<long> number_after(const std::string& token, const std::string& prefix) {
  if (token.size() <= prefix.size() || token.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const std::string digits = token.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) return std::nullopt;
  return std::stol(digits);
}

// head_dim, seqlen and causal from tokens: shape ("d=", "sq=", "sk=") or id ("d", "s") style.
std::optional<ScenarioGroup> group_from(const std::vector<std::string>& tokens, const std::string& d,
                                        const std::string& sq, const std::string& sk) {
  std::optional<long> head, seq;
  bool causal = false;
  for (const auto& t : tokens) {
    if (auto v = number_after(t, d)) head = v;
    for (const auto& p : {sq, sk})
      if (auto v = number_after(t, p)) seq = std::max(seq.value_or(0), *v);
    causal = causal || t == "causal";
  }
  if (!head || !seq) return std::nullopt;
  return ScenarioGroup{static_cast<int>(*head), causal, *seq > kShortSeqlenMax};
}

std::string version_line(const Record& r) {
  std::string line = "v" + std::to_string(r.version) + " " + r.verdict + " " +
                     (r.geomean.speedup ? fmt::format("{:.3f}x", *r.geomean.speedup) : std::string("-"));
  return r.note.empty() ? line : line + " \"" + r.note + "\"";
}

// Which groups moved by more than cfg.redirect.group_move between prev and cur.
std::string groups_moved(const Record& prev, const Record& cur, const SupervisorConfig& cfg) {
  const auto a = group_geomeans(prev), b = group_geomeans(cur);
  const std::string span = "from version " + std::to_string(prev.version) + " to " + std::to_string(cur.version);
  if (a.empty() || b.empty()) return "no per-scenario speedups to compare " + span;
  std::vector<std::string> moved;
  for (const auto& [g, after] : b) {
    auto it = a.find(g);
    if (it == a.end() || !(it->second > 0) || std::abs(after / it->second - 1) <= cfg.redirect.group_move) continue;
    moved.push_back(g.name() + " " + fmt::format("{:.3f}x", it->second) + " -> " + fmt::format("{:.3f}x", after) + " (" +
                    fmt::format("{:+.1f}%", 100 * (after / it->second - 1)) + ")");
  }
  if (moved.empty()) return "no scenario group moved by more than " + fmt::format("{:.1f}%", 100 * cfg.redirect.group_move) + " " + span;
  std::string out = "groups that moved " + span + ": ";
  for (std::size_t i = 0; i < moved.size(); ++i) out += (i ? "; " : "") + moved[i];
  return out;
}

// How many stall signals in a row, `cur`'s included.
int stalls_in_a_row(const std::vector<Record>& earlier) {
  int n = 1;
  for (auto it = earlier.rbegin(); it != earlier.rend(); ++it) {
    if (it->source == "record") continue;  // a hand-recorded report neither extends nor breaks the streak
    if (std::find(it->triggers.begin(), it->triggers.end(), "stall") == it->triggers.end()) break;
    ++n;
  }
  return n;
}

// "restore: <command>", or why there is none; the version being recorded is the folder as it is.
std::string restore_text(const Record& r, const Record& cur, const RestoreCommand& restore) {
  if (r.version == cur.version) return "it is the candidate folder as it is now";
  const std::string cmd = restore ? restore(r) : std::string{};
  return cmd.empty() ? "its source is not kept (not committed, not in the versions store)" : "restore: " + cmd;
}

// The best version overall, then up to three elites of other versions, one line each.
std::string restart_detail(int run, const std::vector<Record>& all, const RestoreCommand& restore) {
  const Record* best = nullptr;
  for (const auto& r : all)
    if (is_scored(r) && (!best || *r.geomean.speedup > *best->geomean.speedup)) best = &r;
  std::string out = std::to_string(run) + " stall signals in a row: ";
  if (!best) return out + "no scored version to restart from yet (git checkout HEAD restores the committed candidate)";
  out += "restart from the best version " + std::to_string(best->version) + " (geomean " +
         fmt::format("{:.3f}x", *best->geomean.speedup) + "; " + restore_text(*best, all.back(), restore) + ")";
  std::set<int> named = {best->version};
  for (const auto& e : elites(all)) {
    if (named.count(e.version) || named.size() > 3) continue;
    named.insert(e.version);
    auto it = std::find_if(all.begin(), all.end(), [&](const Record& r) { return r.version == e.version; });
    out += "\n      or from the elite version " + std::to_string(e.version) + ", best on " + e.group.name() + " (" +
           fmt::format("{:.3f}x", e.group_geomean) + "; " + restore_text(*it, all.back(), restore) + ")";
  }
  return out;
}

}  // namespace

std::string ScenarioGroup::name() const {
  return "d" + std::to_string(head_dim) + (causal ? " causal" : " noncausal") + (long_seq ? " long" : " short");
}

std::optional<ScenarioGroup> scenario_group(const ScenarioResult& s) {
  if (auto g = group_from(split(s.shape, ' '), "d=", "sq=", "sk=")) return g;
  return group_from(split(s.id, '_'), "d", "s", "sk");
}

std::map<ScenarioGroup, double> group_geomeans(const Record& r) {
  std::map<ScenarioGroup, std::pair<double, int>> sums;
  for (const auto& s : r.scenarios) {
    auto g = scenario_group(s);
    if (!g || !s.speedup || !(*s.speedup > 0)) continue;
    sums[*g].first += std::log(*s.speedup);
    sums[*g].second += 1;
  }
  std::map<ScenarioGroup, double> out;
  for (const auto& [g, sum] : sums) out[g] = std::exp(sum.first / sum.second);
  return out;
}

std::vector<Elite> elites(const std::vector<Record>& evaluations) {
  std::map<ScenarioGroup, Elite> best;
  for (const auto& r : evaluations) {
    if (!is_scored(r)) continue;
    for (const auto& [g, gm] : group_geomeans(r)) {
      auto it = best.find(g);
      if (it == best.end() || gm > it->second.group_geomean) best[g] = Elite{g, r.version, gm, r.geomean.speedup};
    }
  }
  std::vector<Elite> out;
  for (const auto& [g, e] : best) out.push_back(e);
  return out;
}

std::string trajectory_digest(const std::vector<Record>& earlier, const Record& cur, const SupervisorConfig& cfg) {
  const std::size_t n = static_cast<std::size_t>(std::max(cfg.redirect.digest_versions, 1));
  std::vector<const Record*> last;
  for (std::size_t i = earlier.size() - std::min(earlier.size(), n - 1); i < earlier.size(); ++i)
    last.push_back(&earlier[i]);
  last.push_back(&cur);
  std::string out = "trajectory (last " + std::to_string(last.size()) + " versions): ";
  for (std::size_t i = 0; i < last.size(); ++i) out += (i ? "; " : "") + version_line(*last[i]);
  if (!earlier.empty()) out += "\n      " + groups_moved(earlier.back(), cur, cfg);
  return out;
}

std::vector<Signal> redirect_signals(const std::vector<Record>& earlier, const Record& cur,
                                     const std::vector<Signal>& signals, const SupervisorConfig& cfg,
                                     const RestoreCommand& restore) {
  auto fired = [&](const char* t) {
    return std::any_of(signals.begin(), signals.end(), [&](const Signal& s) { return s.trigger == t; });
  };
  const bool stall = fired("stall");
  std::vector<Signal> out;
  if (!stall && !fired("cycle")) return out;
  out.push_back({stall ? "stall" : "cycle", "digest", trajectory_digest(earlier, cur, cfg)});
  if (!stall) return out;
  const int run = stalls_in_a_row(earlier);
  std::vector<Record> all = earlier;
  all.push_back(cur);
  if (run >= cfg.redirect.restart_after) out.push_back({"stall", "restart", restart_detail(run, all, restore)});
  if (run >= cfg.redirect.human_after)
    out.push_back({"human", "escalate",
                   std::to_string(run) + " stall signals in a row: stop and ask a human which direction to take; "
                                         "show them this digest and `attngate history --elites`"});
  return out;
}

}  // namespace attngate::hooks
