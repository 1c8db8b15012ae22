// Comparison documents combined (attngate_stats merge) and judged against each other
// (attngate_stats judge), with the statistics of stats.hpp. ci/merge_shards.py,
// ci/compare_runs.py and ci/regression.py print what these return.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/bench/comparison_document.hpp"

namespace attngate::bench {

struct NamedComparison {
  std::string file;  // where it was read from, for the messages
  ComparisonDocument doc;
};

// The shards of one comparison (attngate_bench --shard=i/N) as one document: every scenario once,
// sorted by id, the geomean and its interval from the per-scenario intervals (geomean_method says
// so), the kernel-time and wall-time geomeans over the merged scenarios, the SM clock's extremes.
// What does not fit (another kernel, base or suite; a scenario twice; a shard missing; failed
// benchmarks) is listed in `problems`; a shard of another comparison is left out. Throws
// std::invalid_argument when given no shard.
ComparisonDocument merge_comparisons(const std::vector<NamedComparison>& shards);

inline constexpr const char* kRunComparisonSchema = "attngate.run_comparison/1";

// One scenario of a run against the reference run.
struct RunRow {
  std::string id;
  std::string verdict;  // SAME, FASTER, SLOWER, AMBIGUOUS (stats.hpp RunVerdict)
  double ratio = 0;     // run speedup / reference speedup
  std::array<double, 2> ci95{};
  double ref_speedup = 0, run_speedup = 0;
  Figure kernel_ms_ratio, base_ms_ratio;  // absolute median times, run / reference: move with the clock, not judged
  bool confirmed_slowdown = false;        // SLOWER by more than the threshold
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunRow, id, verdict, ratio, ci95, ref_speedup, run_speedup,
                                                kernel_ms_ratio, base_ms_ratio, confirmed_slowdown)

struct RunSide {
  Figure geomean_speedup;
  std::array<Figure, 2> geomean_ci95;
  Figure wall_s;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunSide, geomean_speedup, geomean_ci95, wall_s)

struct RunComparison {
  std::string schema = kRunComparisonSchema;
  std::string kernel, base, suite;
  double threshold = 0.02;
  RunSide reference, run;
  std::vector<RunRow> rows;
  std::map<std::string, int> counts;  // verdict -> scenarios
  std::vector<std::string> only_in_reference, only_in_run;
  Figure geomean_kernel_ms_ratio, geomean_base_ms_ratio;
  // Another kernel, base or suite; a scenario on one side only; FASTER or SLOWER scenarios; a
  // scenario without a speedup to judge. Empty: the runs agree within noise.
  std::vector<std::string> problems;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunComparison, schema, kernel, base, suite, threshold, reference, run,
                                                rows, counts, only_in_reference, only_in_run,
                                                geomean_kernel_ms_ratio, geomean_base_ms_ratio, problems)

// Every scenario of `run` judged against the same scenario of `reference` (stats.hpp judge_run).
// Throws std::invalid_argument unless 0 < threshold < 1.
RunComparison compare_runs(const ComparisonDocument& reference, const ComparisonDocument& run, double threshold);

}  // namespace attngate::bench
