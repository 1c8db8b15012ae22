#include <gtest/gtest.h>

#include <set>

#include "attngate/shard.hpp"

using namespace attngate;

TEST(Shard, ParsesAndRejects) {
  const ShardSpec s = parse_shard("1/3");
  EXPECT_EQ(s.index, 1);
  EXPECT_EQ(s.count, 3);
  for (const char* bad : {"3/3", "-1/2", "1", "a/2", "1/0", "1/2x", "/2"})
    EXPECT_THROW(parse_shard(bad), std::invalid_argument) << bad;
}

TEST(Shard, EveryScenarioInExactlyOneShardAndBalanced) {
  const auto suites = load_suite_dir(ATTNGATE_SCENARIO_DIR);
  for (const Suite& suite : suites) {
    for (int n : {1, 2, 3, 8}) {
      std::multiset<std::string> seen;
      double max_load = 0, total = 0;
      for (int i = 0; i < n; ++i) {
        double load = 0;
        for (const Scenario& s : shard_scenarios(suite.scenarios, {i, n})) {
          seen.insert(s.id);
          load += s.flops();
        }
        max_load = std::max(max_load, load);
        total += load;
      }
      ASSERT_EQ(seen.size(), suite.scenarios.size()) << suite.name << " n=" << n;
      for (const Scenario& s : suite.scenarios) EXPECT_EQ(seen.count(s.id), 1u) << s.id;
      // Greedy largest-first stays within the largest scenario of an even split.
      double largest = 0;
      for (const Scenario& s : suite.scenarios) largest = std::max(largest, s.flops());
      EXPECT_LE(max_load, total / n + largest) << suite.name << " n=" << n;
    }
  }
}

TEST(Shard, SameSplitEveryTime) {
  const auto suites = load_suite_dir(ATTNGATE_SCENARIO_DIR);
  const auto a = shard_scenarios(suites[0].scenarios, {0, 2});
  const auto b = shard_scenarios(suites[0].scenarios, {0, 2});
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].id, b[i].id);
}
