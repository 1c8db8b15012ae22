#include "attngate/bench/comparison_merge.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "attngate/bench/stats.hpp"

namespace attngate::bench {

namespace {

// The geometric mean of one figure over the scenarios; nothing when any scenario lacks it.
Figure geomean_of(const std::vector<ComparisonScenario>& rows, Figure ComparisonScenario::*field) {
  std::vector<double> v;
  for (const auto& r : rows) {
    const Figure& x = r.*field;
    if (!x || !(*x > 0)) return std::nullopt;
    v.push_back(*x);
  }
  return v.empty() ? std::nullopt : Figure(geomean(v));
}

void min_into(Figure& into, const Figure& x) {
  if (x && (!into || *x < *into)) into = x;
}
void max_into(Figure& into, const Figure& x) {
  if (x && (!into || *x > *into)) into = x;
}

// The shards' clock summaries together: their extremes are known, a median of all calls is not.
SmClockSummary merge_clocks(const std::vector<const ComparisonDocument*>& docs) {
  SmClockSummary c;
  for (const auto* d : docs) {
    const SmClockSummary& s = d->sm_clock;
    c.available = c.available || s.available;
    c.scenarios += s.scenarios;
    min_into(c.lowest_median_mhz, s.lowest_median_mhz);
    max_into(c.highest_median_mhz, s.highest_median_mhz);
    min_into(c.min_mhz, s.min_mhz);
    max_into(c.device_max_mhz, s.device_max_mhz);
    c.event_reasons |= s.event_reasons;
    c.scenarios_clock_dropped += s.scenarios_clock_dropped;
    c.scenarios_below_max += s.scenarios_below_max;
  }
  if (docs.size() == 1) c.median_mhz = docs.front()->sm_clock.median_mhz;
  return c;
}

SpeedupEstimate estimate_of(const ComparisonScenario& s) {
  if (!s.speedup || !s.speedup_ci95[0] || !s.speedup_ci95[1])
    throw std::invalid_argument("scenario " + s.id + " has no speedup with an interval");
  return {*s.speedup, {*s.speedup_ci95[0], *s.speedup_ci95[1]}};
}

Figure ratio(const Figure& num, const Figure& den) {
  return num && den && *num > 0 && *den > 0 ? Figure(*num / *den) : std::nullopt;
}

}  // namespace

ComparisonDocument merge_comparisons(const std::vector<NamedComparison>& shards) {
  if (shards.empty()) throw std::invalid_argument("merge: no shard given");
  ComparisonDocument m = shards.front().doc;
  m.scenarios.clear();
  m.failed.clear();
  m.problems.clear();
  m.merged_from.clear();
  m.shard = {};
  m.wall_s.reset();
  std::map<std::string, std::string> seen;  // scenario -> file
  std::vector<const ComparisonDocument*> used;
  std::set<int> split_into;
  for (const auto& [file, d] : shards) {
    if (std::tie(d.kernel, d.base, d.suite) != std::tie(m.kernel, m.base, m.suite)) {
      m.problems.push_back(file + ": measures " + d.kernel + " vs " + d.base + " on " + d.suite + ", not " + m.kernel +
                           " vs " + m.base + " on " + m.suite);
      continue;
    }
    used.push_back(&d);
    m.merged_from.push_back({file, d.shard, d.device, d.wall_s});
    split_into.insert(d.shard.of);
    max_into(m.wall_s, d.wall_s);
    m.failed.insert(m.failed.end(), d.failed.begin(), d.failed.end());
    for (const auto& s : d.scenarios) {
      if (auto [it, fresh] = seen.emplace(s.id, file); !fresh) {
        m.problems.push_back("scenario " + s.id + " in both " + it->second + " and " + file);
        continue;
      }
      m.scenarios.push_back(s);
    }
  }
  if (split_into.size() == 1 && *split_into.begin() != int(m.merged_from.size()))
    m.problems.push_back(std::to_string(m.merged_from.size()) + " shard files for a split into " +
                         std::to_string(*split_into.begin()));
  if (!m.failed.empty()) m.problems.push_back(std::to_string(m.failed.size()) + " benchmarks failed");
  std::sort(m.scenarios.begin(), m.scenarios.end(), [](const auto& a, const auto& b) { return a.id < b.id; });

  std::vector<SpeedupEstimate> estimates;
  for (const auto& s : m.scenarios) estimates.push_back(estimate_of(s));
  m.geomean_speedup.reset();
  m.geomean_ci95 = {};
  if (!estimates.empty()) {
    const SpeedupEstimate g = geomean_from_intervals(estimates);
    m.geomean_speedup = g.speedup;
    m.geomean_ci95 = {g.ci95.lo, g.ci95.hi};
  }
  m.geomean_method = "merged shards: normal approximation in log space from the per-scenario intervals";
  m.geomean_kernel_speedup = geomean_of(m.scenarios, &ComparisonScenario::kernel_speedup);
  m.geomean_wall_speedup = geomean_of(m.scenarios, &ComparisonScenario::wall_speedup);
  m.sm_clock = merge_clocks(used);
  return m;
}

RunComparison compare_runs(const ComparisonDocument& reference, const ComparisonDocument& run, double threshold) {
  if (!(threshold > 0 && threshold < 1)) throw std::invalid_argument("the threshold must be in (0, 1)");
  RunComparison c;
  c.kernel = run.kernel;
  c.base = run.base;
  c.suite = run.suite;
  c.threshold = threshold;
  c.reference = {reference.geomean_speedup, reference.geomean_ci95, reference.wall_s};
  c.run = {run.geomean_speedup, run.geomean_ci95, run.wall_s};
  for (const auto& [key, a, b] : {std::tuple{"kernel", reference.kernel, run.kernel},
                                  std::tuple{"base", reference.base, run.base},
                                  std::tuple{"suite", reference.suite, run.suite}})
    if (a != b) c.problems.push_back(std::string(key) + " differs: " + a + " vs " + b);

  std::map<std::string, const ComparisonScenario*> ref_by_id, run_by_id;
  for (const auto& s : reference.scenarios) ref_by_id[s.id] = &s;
  for (const auto& s : run.scenarios) run_by_id[s.id] = &s;
  for (const auto& [id, s] : ref_by_id)
    if (!run_by_id.count(id)) c.only_in_reference.push_back(id);
  for (const auto& [id, s] : run_by_id)
    if (!ref_by_id.count(id)) c.only_in_run.push_back(id);
  for (const auto& id : c.only_in_reference) c.problems.push_back(id + " only in the reference");
  for (const auto& id : c.only_in_run) c.problems.push_back(id + " only in the run");

  std::vector<std::string> differ;
  std::vector<double> kernel_ratios, base_ratios;
  for (const auto& [id, x] : ref_by_id) {
    auto it = run_by_id.find(id);
    if (it == run_by_id.end()) continue;
    const ComparisonScenario& y = *it->second;
    RunRow row;
    row.id = id;
    try {
      const RunJudgement j = judge_run(estimate_of(y), estimate_of(*x), threshold);
      row.verdict = to_string(j.verdict);
      row.ratio = j.ratio;
      row.ci95 = {j.ci95.lo, j.ci95.hi};
      row.confirmed_slowdown = j.confirmed_slowdown;
    } catch (const std::invalid_argument& e) {
      c.problems.push_back(id + " cannot be judged: " + e.what());
      continue;
    }
    row.ref_speedup = *x->speedup;
    row.run_speedup = *y.speedup;
    row.kernel_ms_ratio = ratio(y.kernel_ms, x->kernel_ms);
    row.base_ms_ratio = ratio(y.base_ms, x->base_ms);
    if (row.kernel_ms_ratio) kernel_ratios.push_back(*row.kernel_ms_ratio);
    if (row.base_ms_ratio) base_ratios.push_back(*row.base_ms_ratio);
    ++c.counts[row.verdict];
    if (row.verdict == "FASTER" || row.verdict == "SLOWER") differ.push_back(id);
    c.rows.push_back(std::move(row));
  }
  if (!kernel_ratios.empty() && kernel_ratios.size() == c.rows.size()) c.geomean_kernel_ms_ratio = geomean(kernel_ratios);
  if (!base_ratios.empty() && base_ratios.size() == c.rows.size()) c.geomean_base_ms_ratio = geomean(base_ratios);
  if (!differ.empty()) {
    std::string list;
    for (const auto& id : differ) list += (list.empty() ? "" : ", ") + id;
    c.problems.push_back(std::to_string(differ.size()) + " scenarios differ beyond noise: " + list);
  }
  return c;
}

}  // namespace attngate::bench
