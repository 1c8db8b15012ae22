// The supervisor that redirects (redirect.hpp): scenario groups, elites, the trajectory digest and
// the escalation from a stall to a restart from an elite and then to a human.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "attngate/hooks/redirect.hpp"
#include "attngate/hooks/supervisor.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

using test::scored;

ScenarioResult scenario(const std::string& id, double speedup, const std::string& shape = "") {
  ScenarioResult s;
  s.id = id;
  s.shape = shape;
  s.correct = true;
  s.speedup = speedup;
  return s;
}

// A scored version with two groups: d64 noncausal short (gate_mha_d64_s512) and d128 causal long.
Record two_groups(int version, double short64, double long128, const std::string& note = "") {
  Record r = scored(version, std::sqrt(short64 * long128));
  r.scenarios = {scenario("gate_mha_d64_s512", short64), scenario("gate_mha_d128_s4096_causal", long128)};
  r.note = note;
  return r;
}

std::vector<Signal> of_kind(const std::vector<Signal>& s, const std::string& kind) {
  std::vector<Signal> out;
  std::copy_if(s.begin(), s.end(), std::back_inserter(out), [&](const Signal& x) { return x.kind == kind; });
  return out;
}

TEST(Redirect, GroupsFromTheShapeElseTheId) {
  auto g = scenario_group(scenario("x", 1, "b=4 sq=4096 sk=4096 hq=16 hkv=16 d=128 causal bf16"));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->name(), "d128 causal long");
  g = scenario_group(scenario("x", 1, "b=32 sq=2048 sk=2048 hq=32 hkv=32 d=64 noncausal bf16"));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->name(), "d64 noncausal short");  // 2048 is short
  g = scenario_group(scenario("x", 1, "b=1 sq=77 sk=4096 hq=8 hkv=8 d=256 noncausal fp16"));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->name(), "d256 noncausal long");  // the longer of seqlen_q and seqlen_k
  g = scenario_group(scenario("gate_gqa_hq32_hkv8_d128_s8192_causal", 1));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->name(), "d128 causal long");
  g = scenario_group(scenario("gate_mha_d64_s1024", 1));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->name(), "d64 noncausal short");
  EXPECT_FALSE(scenario_group(scenario("gate_a", 1)));
}

TEST(Redirect, ElitesAreTheBestScoredVersionPerGroup) {
  Record wrong = two_groups(3, 2.0, 2.0);
  wrong.scenarios[0].correct = false;  // not scored: never an elite, however fast
  const std::vector<Record> lineage = {two_groups(1, 1.30, 1.00), two_groups(2, 1.10, 1.20), wrong,
                                       two_groups(4, 1.30, 1.10)};
  const auto e = elites(lineage);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].group.name(), "d64 noncausal short");
  EXPECT_EQ(e[0].version, 1);  // 1.30 first; version 4's tie does not displace it
  EXPECT_NEAR(e[0].group_geomean, 1.30, 1e-12);
  EXPECT_EQ(e[1].group.name(), "d128 causal long");
  EXPECT_EQ(e[1].version, 2);
  EXPECT_NEAR(*e[1].geomean, std::sqrt(1.10 * 1.20), 1e-12);
  const auto g = group_geomeans(two_groups(5, 1.5, 1.0));
  EXPECT_NEAR(g.at(ScenarioGroup{64, false, false}), 1.5, 1e-12);
}

TEST(Redirect, DigestListsTheLastVersionsAndTheGroupsThatMoved) {
  SupervisorConfig cfg;
  cfg.redirect.digest_versions = 3;
  const std::vector<Record> earlier = {two_groups(1, 1.0, 1.0, "first"), two_groups(2, 1.1, 1.0, "tiles"),
                                       two_groups(3, 1.1, 1.0, "pipeline")};
  const Record cur = two_groups(4, 1.0, 1.2, "swap");
  const std::string d = trajectory_digest(earlier, cur, cfg);
  EXPECT_NE(d.find("trajectory (last 3 versions): v2 pass 1.049x \"tiles\"; v3 pass 1.049x \"pipeline\"; v4 pass "),
            std::string::npos)
      << d;
  EXPECT_EQ(d.find("\"first\""), std::string::npos) << d;
  EXPECT_NE(d.find("groups that moved from version 3 to 4: d64 noncausal short 1.100x -> 1.000x (-9.1%); "
                   "d128 causal long 1.000x -> 1.200x (+20.0%)"),
            std::string::npos)
      << d;
  EXPECT_NE(trajectory_digest(earlier, two_groups(4, 1.1, 1.0), cfg).find("no scenario group moved by more than 1.0%"),
            std::string::npos);
}

TEST(Redirect, StallsInARowEscalateToARestartThenToAHuman) {
  SupervisorConfig cfg;
  const std::vector<Signal> stall = {{"stall", "no_new_best", "no new best"}};
  auto restore = [](const Record& r) { return "restore-" + std::to_string(r.version); };
  std::vector<Record> earlier = {two_groups(1, 1.3, 1.0), two_groups(2, 1.0, 1.3)};

  // The first stall signal: a digest only.
  auto s = redirect_signals(earlier, two_groups(3, 1.0, 1.0), stall, cfg, restore);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].trigger, "stall");
  EXPECT_EQ(s[0].kind, "digest");

  // The second in a row: restart from the best version, or another elite, each with its command.
  Record third = two_groups(3, 1.0, 1.0);
  third.triggers = {"stall"};
  earlier.push_back(third);
  s = redirect_signals(earlier, two_groups(4, 1.0, 1.0), stall, cfg, restore);
  ASSERT_EQ(of_kind(s, "restart").size(), 1u);
  EXPECT_TRUE(of_kind(s, "escalate").empty());
  const std::string restart = of_kind(s, "restart")[0].detail;
  EXPECT_NE(restart.find("2 stall signals in a row: restart from the best version 1 (geomean 1.140x; restore: restore-1)"),
            std::string::npos)
      << restart;
  EXPECT_NE(restart.find("or from the elite version 2, best on d128 causal long (1.300x; restore: restore-2)"),
            std::string::npos)
      << restart;

  // The third: a human, with a trigger of its own.
  Record fourth = two_groups(4, 1.0, 1.0);
  fourth.triggers = {"stall", "regression"};
  earlier.push_back(fourth);
  s = redirect_signals(earlier, two_groups(5, 1.0, 1.0), stall, cfg, [](const Record&) { return std::string{}; });
  ASSERT_EQ(of_kind(s, "escalate").size(), 1u);
  EXPECT_EQ(of_kind(s, "escalate")[0].trigger, "human");
  EXPECT_NE(of_kind(s, "escalate")[0].detail.find("3 stall signals in a row: stop and ask a human"), std::string::npos);
  EXPECT_NE(of_kind(s, "restart")[0].detail.find("its source is not kept"), std::string::npos);
  EXPECT_EQ(triggers_of(s), (std::vector<std::string>{"stall", "human"}));

  // A cycle alone gets the digest; no stall or cycle, nothing.
  s = redirect_signals(earlier, two_groups(5, 1.0, 1.0), {{"cycle", "repeat", ""}}, cfg, restore);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].trigger, "cycle");
  EXPECT_TRUE(redirect_signals(earlier, two_groups(5, 1, 1), {{"regression", "below_best", ""}}, cfg, restore).empty());
}

TEST(Redirect, ThresholdsComeFromTheSupervisorFile) {
  SupervisorConfig shipped, d;
  apply_supervisor_file(shipped, std::filesystem::path(ATTNGATE_HOOKS_DIR_FOR_TESTS) / "supervisor.yaml");
  EXPECT_EQ(shipped.redirect.digest_versions, d.redirect.digest_versions);
  EXPECT_DOUBLE_EQ(shipped.redirect.group_move, d.redirect.group_move);
  EXPECT_EQ(shipped.redirect.restart_after, d.redirect.restart_after);
  EXPECT_EQ(shipped.redirect.human_after, d.redirect.human_after);
  test::TempDir dir;
  test::write_file(dir / "mine.yaml", "redirect:\n  restart_after: 1\n  human_after: 2\n");
  SupervisorConfig cfg;
  apply_supervisor_file(cfg, dir / "mine.yaml");
  EXPECT_EQ(cfg.redirect.restart_after, 1);
  EXPECT_EQ(cfg.redirect.human_after, 2);
  auto s = redirect_signals({two_groups(1, 1, 1)}, two_groups(2, 1, 1), {{"stall", "no_new_best", ""}}, cfg, {});
  EXPECT_EQ(of_kind(s, "restart").size(), 1u);
  test::write_file(dir / "bad.yaml", "redirect:\n  human_after: 0\n");
  EXPECT_THROW(apply_supervisor_file(cfg, dir / "bad.yaml"), std::runtime_error);
}

}  // namespace
}  // namespace attngate::hooks
