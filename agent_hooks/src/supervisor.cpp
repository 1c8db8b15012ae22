#include "attngate/hooks/supervisor.hpp"
#include <fmt/printf.h>

#include "attngate/hooks/yaml_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <type_traits>
#include <map>
#include <set>
#include <tuple>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

namespace attngate::hooks {
namespace {

std::string where(const std::filesystem::path& file, const YAML::Node& n) {
  return file.string() + ":" + std::to_string(n.Mark().line + 1);
}

template <class T>
void read_value(const YAML::Node& n, T& out, const std::filesystem::path& file, const std::string& key) {
  try {
    out = n.as<T>();
  } catch (const YAML::Exception&) {
    throw std::runtime_error(where(file, n) + ": '" + key + "' has the wrong type");
  }
  // A NaN would pass every min() against the shipped value and fail or skip every comparison.
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(out) || out < 0)
      throw std::runtime_error(where(file, n) + ": '" + key + "' must be a finite number >= 0");
}

std::string fx(double v) { return fmt::format("{:.3f}x", v); }

// How far the candidate's wall time agrees with its kernel time, as predicted / measured wall time
// (geomean over the scenarios), where the prediction is the candidate's kernel time plus the
// baseline's own wall-minus-kernel time per call. Each call's wall time carries a fixed cost beyond
// its kernels (about 1.45 ms of wall minus kernel time per gate call on the H200: the worker's
// round trip, the judge's checks), so an honest kernel twice as fast has a wall-clock speedup far
// below its kernel-time speedup; comparing the two speedups raised this signal on every honest fast
// kernel. What stays suspicious is wall time the kernel time does not account for (below 1: work
// outside the traced kernels, or a kernel time that is too short) or the reverse. A geomean, since
// honest per-scenario excesses spread by +-0.1 ms: advisory, it catches a suite-wide gap; one
// scenario's is bounded by the gate's own rules (CLOCK_DISAGREE, WALL_KERNEL_MISMATCH). Without
// per-scenario times: the ratio of the two geomean speedups, as before.
std::optional<double> wall_agreement(const Record& r) {
  double log_sum = 0;
  int n = 0;
  for (const auto& s : r.scenarios) {
    const Timing &c = s.candidate, &b = s.baseline;
    if (!c.wall_ms || !c.kernel_ms || !b.wall_ms || !b.kernel_ms || !(*c.wall_ms > 0)) continue;
    const double predicted = *c.kernel_ms + (*b.wall_ms - *b.kernel_ms);
    if (!(predicted > 0)) continue;
    log_sum += std::log(predicted / *c.wall_ms);
    ++n;
  }
  if (n > 0) return std::exp(log_sum / n);
  if (r.geomean.wall_speedup && r.geomean.kernel_speedup && *r.geomean.kernel_speedup > 0)
    return *r.geomean.wall_speedup / *r.geomean.kernel_speedup;
  return std::nullopt;
}

// Codes after which the measured speedups do not describe a correct, honestly timed kernel.
bool invalidates_measurement(const std::string& code) {
  return code != "GEOMEAN_BELOW_TARGET" && code != "SCENARIO_BELOW_FLOOR";
}

struct Best {
  const Record* record = nullptr;
  double speedup = 0;
  std::size_t index = 0;  // position in the evaluation sequence
};

}  // namespace

void apply_supervisor_file(SupervisorConfig& c, const std::filesystem::path& file) {
  const YAML::Node root = load_yaml_file(file);
  if (root.IsNull()) return;
  if (!root.IsMap()) throw std::runtime_error(where(file, root) + ": expected a map of sections");

  using Setter = std::function<void(const YAML::Node&, const std::string&)>;
  auto num = [&](auto& field) -> Setter {
    return [&field, &file](const YAML::Node& n, const std::string& k) { read_value(n, field, file, k); };
  };
  const std::map<std::string, std::map<std::string, Setter>> sections = {
      {"stall",
       {{"evaluations", num(c.stall.evaluations)}, {"minutes", num(c.stall.minutes)}, {"min_gain", num(c.stall.min_gain)}}},
      {"cycle",
       {{"repeat_hash", num(c.cycle.repeat_hash)},
        {"oscillation_window", num(c.cycle.oscillation_window)},
        {"oscillation_band", num(c.cycle.oscillation_band)},
        {"churn_threshold", num(c.cycle.churn_threshold)},
        {"churn_min_added_lines", num(c.cycle.churn_min_added_lines)}}},
      {"suspicious",
       {{"step_speedup", num(c.suspicious.step_speedup)},
        {"confirm_gap", num(c.suspicious.confirm_gap)},
        {"peak_percent", num(c.suspicious.peak_percent)},
        {"wall_kernel_gap", num(c.suspicious.wall_kernel_gap)},
        {"kernel_count_change", num(c.suspicious.kernel_count_change)},
        {"side_stream_work", num(c.suspicious.side_stream_work)}}},
      {"regression", {{"tolerance", num(c.regression.tolerance)}}},
      {"redirect",
       {{"digest_versions", num(c.redirect.digest_versions)},
        {"group_move", num(c.redirect.group_move)},
        {"restart_after", num(c.redirect.restart_after)},
        {"human_after", num(c.redirect.human_after)}}},
  };
  for (const auto& section : root) {
    auto name = section.first.as<std::string>();
    auto s = sections.find(name);
    if (s == sections.end()) throw std::runtime_error(where(file, section.first) + ": unknown section '" + name + "'");
    if (section.second.IsNull()) continue;
    if (!section.second.IsMap()) throw std::runtime_error(where(file, section.second) + ": '" + name + "' must be a map");
    for (const auto& kv : section.second) {
      auto key = kv.first.as<std::string>();
      auto setter = s->second.find(key);
      if (setter == s->second.end())
        throw std::runtime_error(where(file, kv.first) + ": unknown key '" + name + "." + key + "'");
      setter->second(kv.second, name + "." + key);
    }
  }
  if (c.cycle.oscillation_window < 3)
    throw std::runtime_error(file.string() + ": cycle.oscillation_window must be at least 3");
  if (c.stall.evaluations < 1) throw std::runtime_error(file.string() + ": stall.evaluations must be at least 1");
  if (c.redirect.digest_versions < 1 || c.redirect.restart_after < 1 || c.redirect.human_after < 1)
    throw std::runtime_error(file.string() + ": redirect.digest_versions, restart_after and human_after must be at least 1");
}

bool is_scored(const Record& r) {
  if (!r.is_evaluation() || !r.geomean.speedup || !std::isfinite(*r.geomean.speedup)) return false;
  // A report recorded by hand (`attngate record`) was not measured by this gate: it may not set the
  // best, an elite or the bar the stall and regression signals measure against.
  if (r.source == "record") return false;
  for (const auto& reason : r.reasons)
    if (invalidates_measurement(reason.code)) return false;
  for (const auto& s : r.scenarios)
    if (s.correct && !*s.correct) return false;
  return true;
}

namespace {

// What every signal rule reads: the lineage before this version, this version, the settings, the
// committed bar, and the best before this version with the index of the evaluation that last set a
// new best (a gain under stall.min_gain is noise, not a new best).
struct SignalInputs {
  const std::vector<Record>& earlier;
  const Record& cur;
  const SupervisorConfig& cfg;
  const StepBar& committed;
  Best best;
  std::optional<std::size_t> last_new_best;
  bool scored = false;  // this version has a score the rules may compare
  double g = 0;         // its geomean (0 when it has none)
};

SignalInputs signal_inputs(const std::vector<Record>& earlier, const Record& cur, const SupervisorConfig& cfg,
                           const StepBar& committed) {
  SignalInputs in{earlier, cur, cfg, committed, {}, std::nullopt, is_scored(cur), cur.geomean.speedup.value_or(0)};
  for (std::size_t i = 0; i < earlier.size(); ++i) {
    if (!is_scored(earlier[i])) continue;
    const double g = *earlier[i].geomean.speedup;
    if (!in.best.record || g > in.best.speedup * (1 + cfg.stall.min_gain)) in.last_new_best = i;
    if (!in.best.record || g > in.best.speedup) in.best = {&earlier[i], g, i};
  }
  if (in.scored && (!in.best.record || in.g > in.best.speedup * (1 + cfg.stall.min_gain)))
    in.last_new_best = earlier.size();
  return in;
}

std::string joined(const std::vector<std::string>& items) { return fmt::format("{}", fmt::join(items, ", ")); }

// Stall: counted in evaluations (all of them, failed builds included) and in minutes.
void stall_signals(const SignalInputs& in, std::vector<Signal>& out) {
  const auto& [earlier, cur, cfg] = std::tie(in.earlier, in.cur, in.cfg);
  const std::size_t since = in.last_new_best ? earlier.size() - *in.last_new_best : earlier.size() + 1;
  const Record* anchor = in.last_new_best ? (*in.last_new_best < earlier.size() ? &earlier[*in.last_new_best] : &cur)
                                          : (earlier.empty() ? &cur : &earlier.front());
  if (static_cast<long>(since) >= cfg.stall.evaluations) {
    out.push_back({"stall", "no_new_best",
                   "no new best geomean in the last " + std::to_string(since) + " evaluations" +
                       (in.best.record ? " (best " + fx(in.best.speedup) + ", version " +
                                             std::to_string(in.best.record->version) + ")"
                                       : std::string(" (no scored version yet)"))});
    return;
  }
  auto t0 = parse_iso8601(anchor->time), t1 = parse_iso8601(cur.time);
  if (t0 && t1 && since > 0 && static_cast<double>(*t1 - *t0) >= cfg.stall.minutes * 60)
    out.push_back({"stall", "no_new_best_time",
                   "no new best geomean for " + fmt::format("{:.0f}", static_cast<double>(*t1 - *t0) / 60) +
                       " minutes (since version " + std::to_string(anchor->version) + ")"});
}

// Cycle: the same source again, scores going back and forth, or old lines coming back.
void cycle_signals(const SignalInputs& in, std::vector<Signal>& out) {
  const auto& [earlier, cur, cfg] = std::tie(in.earlier, in.cur, in.cfg);
  if (cfg.cycle.repeat_hash && !cur.candidate_sha256.empty()) {
    std::vector<std::string> same;
    for (const auto& r : earlier)
      if (r.candidate_sha256 == cur.candidate_sha256) same.push_back(std::to_string(r.version));
    if (!same.empty()) out.push_back({"cycle", "repeat", "this source was already evaluated as version(s) " + joined(same)});
  }
  std::vector<double> gs;
  for (const auto& r : earlier)
    if (is_scored(r)) gs.push_back(*r.geomean.speedup);
  if (in.scored) gs.push_back(in.g);
  const std::size_t w = static_cast<std::size_t>(cfg.cycle.oscillation_window);
  if (in.scored && gs.size() >= w) {
    std::vector<double> tail(gs.end() - static_cast<long>(w), gs.end());
    bool alternating = true;
    for (std::size_t k = 1; k < w && alternating; ++k) {
      double d = tail[k] - tail[k - 1];
      double prev = k >= 2 ? tail[k - 1] - tail[k - 2] : -d;
      alternating = d != 0 && (d > 0) != (prev > 0);
    }
    auto [lo, hi] = std::minmax_element(tail.begin(), tail.end());
    if (alternating && *lo > 0 && (*hi - *lo) / *lo <= cfg.cycle.oscillation_band)
      out.push_back({"cycle", "oscillation",
                     "the last " + std::to_string(w) + " geomeans alternate up and down between " + fx(*lo) + " and " +
                         fx(*hi)});
  }
  if (cur.churn && cur.churn->added >= static_cast<std::size_t>(std::max(cfg.cycle.churn_min_added_lines, 1)) &&
      cur.churn->share() > cfg.cycle.churn_threshold)
    out.push_back({"cycle", "churn",
                   std::to_string(cur.churn->readded) + " of " + std::to_string(cur.churn->added) + " added lines (" +
                       fmt::format("{:.0f}%", 100 * cur.churn->share()) + ") were deleted earlier in the lineage"});
}

// Suspicious gain, in the score: a step over the best (or the committed bar), a scenario above the
// device's peak, wall time that its kernel time does not explain.
void suspicious_score_signals(const SignalInputs& in, std::vector<Signal>& out) {
  const auto& [cur, cfg] = std::tie(in.cur, in.cfg);
  if (cur.geomean.speedup) {
    double ref = 1.0;
    std::string ref_what = "baseline";
    if (in.best.record) ref = in.best.speedup, ref_what = "best so far (version " + std::to_string(in.best.record->version) + ")";
    if (in.committed.speedup > ref) ref = in.committed.speedup, ref_what = in.committed.what;
    if (ref > 0 && in.g / ref > cfg.suspicious.step_speedup)
      out.push_back({"suspicious", "step", "geomean " + fx(in.g) + " is " + fx(in.g / ref) + " the " + ref_what});
  }
  std::vector<std::string> over;
  for (const auto& s : cur.scenarios)
    if (s.percent_of_peak && *s.percent_of_peak > cfg.suspicious.peak_percent)
      over.push_back(s.id + " " + fmt::format("{:.1f}%", *s.percent_of_peak));
  if (!over.empty()) out.push_back({"suspicious", "above_peak", "above the device's peak: " + joined(over)});
  if (auto agreement = wall_agreement(cur); agreement && std::abs(*agreement - 1) > cfg.suspicious.wall_kernel_gap)
    out.push_back({"suspicious", "wall_vs_kernel",
                   "the candidate's wall time is " + fx(1 / *agreement) +
                       " what its kernel time predicts (its kernel time plus the baseline's own wall-minus-kernel time "
                       "per call, geomean over scenarios); wall-clock speedup " +
                       (cur.geomean.wall_speedup ? fx(*cur.geomean.wall_speedup) : std::string("n/a")) +
                       " vs kernel-time speedup " + (cur.geomean.kernel_speedup ? fx(*cur.geomean.kernel_speedup) : "n/a")});
}

// Suspicious gain, in how the candidate launches: another number of kernels per call than the
// last version that reported one, or work on other streams.
void suspicious_launch_signals(const SignalInputs& in, std::vector<Signal>& out) {
  const auto& [earlier, cur, cfg] = std::tie(in.earlier, in.cur, in.cfg);
  if (cfg.suspicious.kernel_count_change) {
    const Record* prev = nullptr;
    for (auto it = earlier.rbegin(); it != earlier.rend() && !prev; ++it)
      for (const auto& s : it->scenarios)
        if (s.candidate.kernel_count) {
          prev = &*it;
          break;
        }
    if (prev) {
      std::map<std::string, std::int64_t> before;
      for (const auto& s : prev->scenarios)
        if (s.candidate.kernel_count) before[s.id] = *s.candidate.kernel_count;
      std::vector<std::string> changed;
      for (const auto& s : cur.scenarios) {
        auto it = before.find(s.id);
        if (s.candidate.kernel_count && it != before.end() && it->second != *s.candidate.kernel_count)
          changed.push_back(s.id + " " + std::to_string(it->second) + "->" + std::to_string(*s.candidate.kernel_count));
      }
      if (!changed.empty())
        out.push_back({"suspicious", "kernel_count",
                       "kernel launches per call changed since version " + std::to_string(prev->version) + ": " +
                           joined(changed)});
    }
  }
  if (cfg.suspicious.side_stream_work) {
    std::set<std::string> ids;
    for (const auto& s : cur.scenarios)
      if (std::find(s.flags.begin(), s.flags.end(), "SIDE_STREAM_WORK") != s.flags.end()) ids.insert(s.id);
    for (const auto& r : cur.reasons)
      if (r.code == "SIDE_STREAM_WORK") {
        ids.insert(r.scenarios.begin(), r.scenarios.end());
        if (r.scenarios.empty()) ids.insert("(report-wide)");
      }
    if (!ids.empty())
      out.push_back({"suspicious", "side_stream_work",
                     "work on other streams: " + joined(std::vector<std::string>(ids.begin(), ids.end()))});
  }
}

// Regression against the best version.
void regression_signal(const SignalInputs& in, std::vector<Signal>& out) {
  if (in.scored && in.best.record && in.g < in.best.speedup * (1 - in.cfg.regression.tolerance))
    out.push_back({"regression", "below_best",
                   "geomean " + fx(in.g) + " is " + fmt::format("{:.1f}%", 100 * (1 - in.g / in.best.speedup)) +
                       " below the best " + fx(in.best.speedup) + " (version " + std::to_string(in.best.record->version) +
                       ")"});
}

}  // namespace

std::vector<Signal> compute_signals(const std::vector<Record>& earlier, const Record& cur,
                                    const SupervisorConfig& cfg, const StepBar& committed) {
  const SignalInputs in = signal_inputs(earlier, cur, cfg, committed);
  std::vector<Signal> out;
  stall_signals(in, out);
  cycle_signals(in, out);
  suspicious_score_signals(in, out);
  suspicious_launch_signals(in, out);
  regression_signal(in, out);
  return out;
}

std::vector<std::string> triggers_of(const std::vector<Signal>& signals) {
  static const std::vector<std::string> order = {"stall", "human", "cycle", "suspicious", "regression"};
  std::vector<std::string> out;
  for (const auto& t : order)
    for (const auto& s : signals)
      if (s.trigger == t) {
        out.push_back(t);
        break;
      }
  return out;
}

}  // namespace attngate::hooks
