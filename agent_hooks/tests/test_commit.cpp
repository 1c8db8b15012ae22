#include <gtest/gtest.h>

#include "attngate/hooks/commands.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

using test::git;

class Commit : public ::testing::Test {
 protected:
  test::Sandbox sb{/*with_git=*/true};

  int record(const std::string& verdict, double geomean, double ci_low, std::vector<std::string> reasons = {}) {
    auto file = test::write_report(sb.dir / "build" / "report.json",
                                   test::report_json(verdict, geomean, ci_low, geomean + (geomean - ci_low), {{"gate_a"}},
                                                     std::move(reasons)));
    return cmd_record(sb.ctx, file);
  }
  int commit() {
    sb.clear_streams();
    return cmd_commit(sb.ctx);
  }
  std::string status() { return git(sb.dir.path(), {"status", "--porcelain"}).out; }
  std::string last_message() { return git(sb.dir.path(), {"log", "-1", "--format=%B"}).out; }
};

TEST_F(Commit, RefusedWithoutAnEvaluation) {
  auto head = sb.head();
  EXPECT_EQ(commit(), kExitFail);
  EXPECT_NE(sb.err.str().find("no evaluation"), std::string::npos) << sb.err.str();
  EXPECT_EQ(sb.head(), head);
}

TEST_F(Commit, RefusedWhenTheGateFailed) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(record("fail", 1.2, 1.1, {"CORRECTNESS_FAILED"}), kExitFail);
  auto head = sb.head();
  auto before = status();
  EXPECT_EQ(commit(), kExitFail);
  EXPECT_NE(sb.err.str().find("failed the gate (CORRECTNESS_FAILED)"), std::string::npos) << sb.err.str();
  EXPECT_EQ(sb.head(), head);
  EXPECT_EQ(status(), before);
}

TEST_F(Commit, RefusedWhenTheCandidateChangedSinceItsEvaluation) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(record("pass", 1.2, 1.1), kExitPass);
  sb.set_candidate("// v1 edited\n");
  EXPECT_EQ(commit(), kExitFail);
  EXPECT_NE(sb.err.str().find("changed since version 1"), std::string::npos) << sb.err.str();
}

TEST_F(Commit, RefusedWhenNotBetterThanTheBaselineBeyondNoise) {
  sb.set_candidate("// v1\n");
  EXPECT_EQ(record("pass", 1.01, 0.995), kExitPass);  // passes a 0.97 target, but is noise against 1.0
  auto head = sb.head();
  EXPECT_EQ(commit(), kExitFail);
  EXPECT_NE(sb.err.str().find("does not clear the baseline itself"), std::string::npos) << sb.err.str();
  EXPECT_EQ(sb.head(), head);
}

TEST_F(Commit, CommitsWhenBetterAndThenRequiresBeatingTheCommittedBest) {
  // Something else staged must stay staged and out of the commit.
  test::write_file(sb.dir / "notes.txt", "unrelated\n");
  git(sb.dir.path(), {"add", "notes.txt"});

  sb.set_candidate("// v1 faster\n");
  EXPECT_EQ(record("pass", 1.05, 1.03), kExitPass);
  auto head = sb.head();
  ASSERT_EQ(commit(), kExitPass) << sb.err.str();
  EXPECT_NE(sb.head(), head);
  auto msg = last_message();
  EXPECT_NE(msg.find("attngate version 1, geomean 1.050x (CI 1.030-1.070)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Attngate-Geomean: 1.05"), std::string::npos) << msg;
  auto files = git(sb.dir.path(), {"show", "--name-only", "--format=", "HEAD"}).out;
  EXPECT_EQ(files, "kernels/candidate/candidate.cu\n");
  EXPECT_EQ(status(), "A  notes.txt\n");

  // Committing the same version again: nothing changed.
  EXPECT_EQ(commit(), kExitFail);

  // Version 2's CI lower bound (1.04) does not clear the committed 1.05.
  sb.set_candidate("// v2\n");
  EXPECT_EQ(record("pass", 1.06, 1.04), kExitPass);
  head = sb.head();
  EXPECT_EQ(commit(), kExitFail);
  EXPECT_NE(sb.err.str().find("does not clear the best committed version (1.050x"), std::string::npos) << sb.err.str();
  EXPECT_EQ(sb.head(), head);

  // Version 3 clears it.
  sb.set_candidate("// v3\n");
  EXPECT_EQ(record("pass", 1.10, 1.07), kExitPass);
  ASSERT_EQ(commit(), kExitPass) << sb.err.str();
  EXPECT_NE(sb.head(), head);
  EXPECT_NE(last_message().find("attngate version 3"), std::string::npos);
  EXPECT_NE(sb.out.str().find("committed version 3"), std::string::npos) << sb.out.str();
}

TEST_F(Commit, CommitsAnUntrackedCandidate) {
  git(sb.dir.path(), {"rm", "-q", "--cached", "kernels/candidate/candidate.cu"});
  git(sb.dir.path(), {"commit", "-q", "-m", "untrack"});
  sb.set_candidate("// new\n");
  EXPECT_EQ(record("pass", 1.2, 1.1), kExitPass);
  ASSERT_EQ(commit(), kExitPass) << sb.err.str();
  EXPECT_EQ(status(), "");
}

}  // namespace
}  // namespace attngate::hooks
