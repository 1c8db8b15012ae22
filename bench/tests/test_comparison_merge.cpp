// The comparison document's types, merging shards and judging runs (attngate_stats merge|judge).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "attngate/bench/comparison_merge.hpp"
#include "attngate/bench/stats.hpp"

namespace attngate::bench {
namespace {

ComparisonScenario scenario(const std::string& id, double speedup, double width = 0.01) {
  ComparisonScenario s;
  s.id = id;
  s.flops = 1e12;
  s.speedup = speedup;
  s.speedup_ci95 = {speedup * (1 - width), speedup * (1 + width)};
  s.kernel_ms = 1.0 / speedup;
  s.base_ms = 1.0;
  s.kernel_speedup = speedup;
  s.wall_speedup = speedup;
  s.kernel_timing.name = "candidate";
  s.kernel_timing.event_ms = 1.0 / speedup;
  s.kernel_timing.kernel_ms = 0.99 / speedup;
  s.base_timing.name = "initial";
  return s;
}

ComparisonDocument shard(int index, int of, std::vector<std::pair<std::string, double>> rows,
                         const std::string& kernel = "candidate") {
  ComparisonDocument d;
  d.kernel = kernel;
  d.base = "initial";
  d.suite = "full";
  d.device = "gpu";
  d.wall_s = 3.0 + index;
  d.shard = {index, of};
  for (const auto& [id, v] : rows) d.scenarios.push_back(scenario(id, v));
  return d;
}

TEST(ComparisonDocument, RoundTripsThroughJsonWithFiguresFlat) {
  ComparisonDocument d = shard(0, 1, {{"s1", 2.0}});
  d.failed.push_back({"s2", failure_kind::kError, "boom"});
  const nlohmann::json j = d;
  EXPECT_EQ(j["schema"], kComparisonSchema);
  const auto& t = j["scenarios"][0]["kernel_timing"];
  EXPECT_DOUBLE_EQ(t["event_ms"].get<double>(), 0.5);  // a figure sits beside the names, under its counter's name
  EXPECT_TRUE(t["wall_ms"].is_null());                 // an unmeasured figure is null
  EXPECT_EQ(t["name"], "candidate");
  for (const auto& f : timing_figures()) EXPECT_TRUE(t.contains(f.key)) << f.key;  // every figure is written
  const ComparisonDocument back = parse_comparison_document(j);
  EXPECT_EQ(nlohmann::json(back), j);
  EXPECT_DOUBLE_EQ(*back.scenarios[0].kernel_timing.kernel_ms, 0.495);
  EXPECT_FALSE(back.scenarios[0].kernel_timing.wall_ms.has_value());
}

TEST(ComparisonDocument, RefusesAnotherSchemaAndWrongTypes) {
  nlohmann::json j = shard(0, 1, {{"s1", 1.0}});
  j["schema"] = "attngate.verify_result/1";
  EXPECT_THROW(parse_comparison_document(j), nlohmann::json::exception);
  j = shard(0, 1, {{"s1", 1.0}});
  j["scenarios"][0]["speedup"] = "fast";
  EXPECT_THROW(parse_comparison_document(j), nlohmann::json::exception);
  j = shard(0, 1, {{"s1", 1.0}});
  j["scenarios"][0]["kernel_timing"]["process"] = 1;
  EXPECT_THROW(parse_comparison_document(j), nlohmann::json::exception);
}

// A figure is a number or null: the counter map this replaced took a string figure as absent and a
// boolean one as a number; both are refused now, as a wrong-typed name is.
TEST(ComparisonDocument, RefusesAFigureThatIsNotANumber) {
  for (const nlohmann::json& bad : {nlohmann::json("0.5"), nlohmann::json(true), nlohmann::json::array({0.5})}) {
    nlohmann::json j = shard(0, 1, {{"s1", 1.0}});
    j["scenarios"][0]["kernel_timing"]["event_ms"] = bad;
    EXPECT_THROW(parse_comparison_document(j), nlohmann::json::type_error) << bad.dump();
  }
}

// A key KernelTiming does not name is not a figure: it is not read, so it is not written back
// (the counter map carried any number through).
TEST(ComparisonDocument, AnUnknownKeyIsNoFigure) {
  nlohmann::json j = shard(0, 1, {{"s1", 1.0}});
  j["scenarios"][0]["kernel_timing"]["no_such_figure"] = 3.0;
  const nlohmann::json back = parse_comparison_document(j);
  EXPECT_FALSE(back["scenarios"][0]["kernel_timing"].contains("no_such_figure"));
  EXPECT_EQ(timing_figure("no_such_figure"), nullptr);
  ASSERT_NE(timing_figure("event_ms"), nullptr);
  EXPECT_EQ(timing_figure("event_ms")->member, &KernelTiming::event_ms);
}

TEST(ComparisonDocument, ReadsAnH200Run) {
  std::ifstream in(ATTNGATE_H200_PERFORMANCE_JSON);
  ASSERT_TRUE(in) << ATTNGATE_H200_PERFORMANCE_JSON;
  const nlohmann::json j = nlohmann::json::parse(in);
  const ComparisonDocument d = parse_comparison_document(j);
  EXPECT_EQ(d.scenarios.size(), 28u);
  EXPECT_EQ(d.scenarios[0].kernel_timing.process, "worker");
  EXPECT_TRUE(d.scenarios[0].kernel_timing.traced_event_ms.has_value());
  // Writing it again loses nothing the run wrote; a figure it did not produce (alone_event_ms of
  // a kernel not timed alone) comes back as null.
  auto without_null_figures = [](nlohmann::json doc) {
    for (auto& s : doc["scenarios"])
      for (const char* side : {"kernel_timing", "base_timing"})
        for (const auto& f : timing_figures())
          if (auto it = s[side].find(f.key); it != s[side].end() && it->is_null()) s[side].erase(it);
    return doc;
  };
  const nlohmann::json original = without_null_figures(j), again = without_null_figures(d);
  for (const auto& [key, value] : original.items()) EXPECT_EQ(again[key], value) << key;
}

TEST(Stats, GeomeanFromIntervals) {
  const SpeedupEstimate g = geomean_from_intervals({{2.0, {1.9, 2.1}}, {0.5, {0.49, 0.51}}});
  EXPECT_NEAR(g.speedup, 1.0, 1e-12);
  EXPECT_LT(g.ci95.lo, 1.0);
  EXPECT_GT(g.ci95.hi, 1.0);
  // Identical scenarios: the interval shrinks by sqrt(n).
  const SpeedupEstimate one = geomean_from_intervals({{1.0, {0.98, 1.02}}});
  const SpeedupEstimate four = geomean_from_intervals(std::vector<SpeedupEstimate>(4, {1.0, {0.98, 1.02}}));
  EXPECT_NEAR(2 * (four.ci95.hi - four.ci95.lo), one.ci95.hi - one.ci95.lo, 1e-3);
  EXPECT_THROW(geomean_from_intervals({}), std::invalid_argument);
  EXPECT_THROW(geomean_from_intervals({{1.0, {1.1, 0.9}}}), std::invalid_argument);
}

TEST(Stats, JudgeRun) {
  auto judge = [](double cur, double cur_lo, double cur_hi, double rec, double rec_lo, double rec_hi) {
    return judge_run({cur, {cur_lo, cur_hi}}, {rec, {rec_lo, rec_hi}}, 0.02);
  };
  RunJudgement j = judge(1.00, 0.997, 1.003, 1.001, 0.998, 1.004);
  EXPECT_EQ(j.verdict, RunVerdict::same);
  EXPECT_LT(j.ci95.lo, 1.0);
  EXPECT_GT(j.ci95.hi, 1.0);
  j = judge(0.90, 0.895, 0.905, 1.00, 0.997, 1.003);
  EXPECT_EQ(j.verdict, RunVerdict::slower);
  EXPECT_TRUE(j.confirmed_slowdown);
  j = judge(0.99, 0.989, 0.991, 1.00, 0.999, 1.001);  // significant, but within the threshold
  EXPECT_EQ(j.verdict, RunVerdict::slower);
  EXPECT_FALSE(j.confirmed_slowdown);
  EXPECT_EQ(judge(1.10, 1.09, 1.11, 1.00, 0.995, 1.005).verdict, RunVerdict::faster);
  EXPECT_EQ(judge(1.00, 0.95, 1.05, 1.00, 0.99, 1.01).verdict, RunVerdict::ambiguous);
  EXPECT_THROW(judge(0.0, 0.9, 1.1, 1.0, 0.9, 1.1), std::invalid_argument);
  EXPECT_THROW(judge(1.0, 1.1, 0.9, 1.0, 0.9, 1.1), std::invalid_argument);
}

TEST(MergeComparisons, DisjointShardsMergeAndRecomputeTheGeomean) {
  const ComparisonDocument m =
      merge_comparisons({{"a.json", shard(0, 2, {{"s3", 1.0}})}, {"b.json", shard(1, 2, {{"s1", 2.0}, {"s2", 0.5}})}});
  EXPECT_TRUE(m.problems.empty());
  ASSERT_EQ(m.scenarios.size(), 3u);
  EXPECT_EQ(m.scenarios[0].id, "s1");
  EXPECT_EQ(m.scenarios[2].id, "s3");
  EXPECT_NEAR(*m.geomean_speedup, 1.0, 1e-12);
  EXPECT_LT(*m.geomean_ci95[0], 1.0);
  EXPECT_NEAR(*m.geomean_kernel_speedup, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(*m.wall_s, 4.0);
  EXPECT_EQ(m.merged_from.size(), 2u);
  EXPECT_NE(m.geomean_method, "bootstrap");
}

TEST(MergeComparisons, OverlapMissingShardOtherKernelAndFailuresAreProblems) {
  ComparisonDocument failing = shard(1, 3, {{"s1", 1.0}});
  failing.failed.push_back({"s9", failure_kind::kError, "error"});
  const ComparisonDocument m = merge_comparisons({{"a.json", shard(0, 3, {{"s1", 1.0}})},
                                                  {"b.json", failing},
                                                  {"c.json", shard(2, 3, {{"s4", 1.0}}, "other")}});
  auto has = [&](const std::string& text) {
    for (const auto& p : m.problems)
      if (p.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("scenario s1 in both a.json and b.json"));
  EXPECT_TRUE(has("2 shard files for a split into 3"));
  EXPECT_TRUE(has("c.json: measures other vs initial"));
  EXPECT_TRUE(has("1 benchmarks failed"));
  EXPECT_EQ(m.scenarios.size(), 1u);
  EXPECT_THROW(merge_comparisons({}), std::invalid_argument);
}

TEST(CompareRuns, IdenticalRunsAreSame) {
  const RunComparison c =
      compare_runs(shard(0, 1, {{"a", 1.0}, {"b", 0.9}}), shard(0, 1, {{"a", 1.001}, {"b", 0.899}}), 0.02);
  EXPECT_EQ(c.counts.at("SAME"), 2);
  EXPECT_TRUE(c.problems.empty());
  EXPECT_NEAR(*c.geomean_base_ms_ratio, 1.0, 1e-12);
}

TEST(CompareRuns, AShiftedScenarioIsAProblem) {
  const RunComparison c = compare_runs(shard(0, 1, {{"a", 1.0}, {"b", 1.0}}), shard(0, 1, {{"a", 1.0}, {"b", 0.95}}), 0.02);
  EXPECT_EQ(c.counts.at("SLOWER"), 1);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_NE(c.problems[0].find("differ beyond noise: b"), std::string::npos);
  EXPECT_TRUE(c.rows[1].confirmed_slowdown);
}

TEST(CompareRuns, MissingScenarioOtherKernelAndBadThreshold) {
  const RunComparison c = compare_runs(shard(0, 1, {{"a", 1.0}, {"b", 1.0}}), shard(0, 1, {{"a", 1.0}}, "x"), 0.02);
  EXPECT_EQ(c.only_in_reference, std::vector<std::string>{"b"});
  auto has = [&](const std::string& text) {
    for (const auto& p : c.problems)
      if (p.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("b only in the reference"));
  EXPECT_TRUE(has("kernel differs: candidate vs x"));
  EXPECT_THROW(compare_runs(shard(0, 1, {}), shard(0, 1, {}), 0.0), std::invalid_argument);
  ComparisonDocument unmeasured = shard(0, 1, {{"a", 1.0}});
  unmeasured.scenarios[0].speedup.reset();
  EXPECT_TRUE(compare_runs(shard(0, 1, {{"a", 1.0}}), unmeasured, 0.02).problems.at(0).find("cannot be judged") !=
              std::string::npos);
}

}  // namespace
}  // namespace attngate::bench
