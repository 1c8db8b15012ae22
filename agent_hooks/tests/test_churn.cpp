#include <algorithm>

#include <gtest/gtest.h>

#include "attngate/hooks/churn.hpp"
#include "attngate/hooks/commands.hpp"
#include "attngate/gate/report.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

namespace fs = std::filesystem;

TEST(Churn, GitDiffFindsAddedAndDeletedLines) {
  auto d = diff_lines({"a", "b", "c", "d"}, {"a", "c", "d", "e"});
  EXPECT_EQ(d.deleted, std::vector<std::string>{"b"});
  EXPECT_EQ(d.added, std::vector<std::string>{"e"});
  // A moved line is one delete plus one add.
  d = diff_lines({"x", "a", "b"}, {"a", "b", "x"});
  EXPECT_EQ(d.deleted, std::vector<std::string>{"x"});
  EXPECT_EQ(d.added, std::vector<std::string>{"x"});
  d = diff_lines({}, {"a", "b"});
  EXPECT_EQ(d.added.size(), 2u);
  EXPECT_TRUE(d.deleted.empty());
}

TEST(Churn, ShareOfLinesDeletedEarlierAndAddedAgain) {
  std::string v1 = "int a;\nint b;\nint c;\nint d;\n";
  std::string v2 = "int a;\nint d;\n";                       // deletes b, c
  std::string v3 = "int a;\nint b;\nint d;\nint e;\n\n  \n";   // re-adds b, adds e and blank lines
  auto c = compute_churn({v1, v2, v3});
  EXPECT_EQ(c.added, 2u);  // blank and whitespace-only lines count in neither
  EXPECT_EQ(c.readded, 1u);
  EXPECT_DOUBLE_EQ(c.share(), 0.5);
  // Byte-identical only: re-indenting a deleted line makes it a new line.
  c = compute_churn({v1, v2, "int a;\n  int b;\nint d;\n"});
  EXPECT_EQ(c.readded, 0u);
  // Lines deleted in the same step are a move, not churn.
  c = compute_churn({v1, "int b;\nint a;\nint c;\nint d;\n"});
  EXPECT_EQ(c.readded, 0u);
}

std::string numbered(const std::string& prefix, int from, int to) {
  std::string s;
  for (int i = from; i < to; ++i) s += prefix + std::to_string(i) + ";\n";
  return s;
}

// Evaluates the current candidate with a passing report.
Record evaluate_pass(test::Sandbox& sb, double geomean) {
  EvaluationInput in;
  in.report = parse_report(test::report_json("pass", geomean, geomean * 0.99, geomean * 1.01));
  in.report_path = "synthetic";
  return evaluate(sb.ctx, in).record;
}

bool has_signal(const Record& r, const std::string& kind) {
  return std::any_of(r.signals.begin(), r.signals.end(), [&](const Signal& s) { return s.kind == kind; });
}

TEST(Churn, OnATemporaryGitRepositoryFromCommits) {
  test::Sandbox sb(/*with_git=*/true);
  const std::string head = "// attention\n";
  const std::string block = numbered("  float tile_", 0, 8);
  const std::string v1 = head + block + numbered("  int keep_", 0, 4);
  const std::string v2 = head + numbered("  int keep_", 0, 4) + numbered("  float other_", 0, 3);
  const std::string v3 = head + block + numbered("  int keep_", 0, 4) + "  float fresh;\n";

  sb.set_candidate(v1);
  sb.commit_all("v1");
  evaluate_pass(sb, 1.00);
  sb.set_candidate(v2);
  sb.commit_all("v2");
  auto r2 = evaluate_pass(sb, 1.01);
  ASSERT_TRUE(r2.churn);
  EXPECT_EQ(r2.churn->added, 3u);
  EXPECT_EQ(r2.churn->readded, 0u);
  EXPECT_FALSE(r2.git.candidate_dirty);

  // Without the versions store the earlier sources come from git (both were clean at their commit).
  fs::remove_all(sb.ctx.lineage.parent_path() / "versions");
  sb.set_candidate(v3);  // uncommitted: the working tree is the current version
  auto r3 = evaluate_pass(sb, 1.02);
  EXPECT_TRUE(r3.git.candidate_dirty);
  ASSERT_TRUE(r3.churn);
  EXPECT_EQ(r3.churn->added, 9u);
  EXPECT_EQ(r3.churn->readded, 8u);
  EXPECT_TRUE(has_signal(r3, "churn"));
  EXPECT_NE(std::find(r3.triggers.begin(), r3.triggers.end(), "cycle"), r3.triggers.end());
}

TEST(Churn, FromTheVersionsStoreWithoutGit) {
  test::Sandbox sb(/*with_git=*/false);
  const std::string v1 = numbered("a", 0, 10);
  const std::string v2 = numbered("a", 0, 2);
  const std::string v3 = numbered("a", 0, 10);
  sb.set_candidate(v1);
  evaluate_pass(sb, 1.0);
  sb.set_candidate(v2);
  evaluate_pass(sb, 1.0);
  sb.set_candidate(v3);
  auto r3 = evaluate_pass(sb, 1.0);
  ASSERT_TRUE(r3.churn);
  EXPECT_EQ(r3.churn->readded, 8u);
  EXPECT_TRUE(has_signal(r3, "churn"));
  EXPECT_TRUE(has_signal(r3, "repeat"));  // v3 is v1 again
  EXPECT_TRUE(fs::exists(sb.ctx.lineage.parent_path() / "versions"));
}

}  // namespace
}  // namespace attngate::hooks
