// Deterministic split of a suite into N shards of about equal work, so that GPUs of one host or a CI
// matrix of runners share a suite and their results merge without overlap.
#pragma once

#include <string>
#include <vector>

#include "attngate/scenario.hpp"

namespace attngate {

struct ShardSpec {
  int index = 0;
  int count = 1;
};

// Parses "i/N" (0 <= i < N); throws std::invalid_argument naming the text otherwise.
ShardSpec parse_shard(const std::string& text);

// The work of one scenario in FLOP-equivalents: its FLOPs plus a fixed cost per scenario
// (allocation, input fill, process round trips), so many small scenarios weigh what they take.
double scenario_cost(const Scenario& s);

// Scenarios of shard `spec`, in suite order. Assignment: largest cost first (ties by id), each to
// the shard with the least work so far (ties to the lowest index): the same suite always splits
// the same way, and every scenario lands in exactly one shard.
std::vector<Scenario> shard_scenarios(const std::vector<Scenario>& all, ShardSpec spec);

}  // namespace attngate
