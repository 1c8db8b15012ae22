#include <set>

#include <gtest/gtest.h>

#include "attngate/hooks/commands.hpp"
#include "attngate/hooks/questions.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

namespace fs = std::filesystem;

QuestionBank shipped() {
  QuestionBank b;
  b.load(fs::path(ATTNGATE_HOOKS_DIR_FOR_TESTS) / "questions.yaml");
  return b;
}

TEST(Questions, ShippedBankCoversEveryTrigger) {
  auto bank = shipped();
  EXPECT_GE(bank.size(), 30u);
  std::set<std::string> ids, texts;
  for (const auto& t : all_triggers()) {
    EXPECT_GE(bank.of(t).size(), 5u) << t;
    for (const auto& q : bank.of(t)) {
      EXPECT_TRUE(ids.insert(q.id).second) << "duplicate id " << q.id;
      EXPECT_TRUE(texts.insert(q.text).second) << "duplicate text " << q.text;
      EXPECT_EQ(q.id.rfind(t + ".", 0), 0u) << q.id << " is filed under " << t;
      EXPECT_NE(q.text.find('?'), std::string::npos) << q.id << " asks nothing";
    }
  }
}

TEST(Questions, RotationHasNoRepeatsUntilTheBankIsExhausted) {
  auto bank = shipped();
  for (const auto& t : all_triggers()) {
    const std::size_t n = bank.of(t).size();
    std::vector<QuestionRef> asked;
    // Other triggers' questions in the log must not disturb this trigger's rotation.
    const std::string other = t == "stall" ? "cycle" : "stall";
    asked.push_back({other, bank.of(other).front().id});
    std::set<std::string> seen;
    for (std::size_t i = 0; i < n; ++i) {
      auto q = bank.select(t, asked);
      ASSERT_TRUE(q);
      EXPECT_TRUE(seen.insert(q->id).second) << t << ": " << q->id << " repeated before the bank was exhausted";
      asked.push_back({t, q->id});
    }
    EXPECT_EQ(seen.size(), n);
    // The next round starts over, again without repeats.
    auto again = bank.select(t, asked);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->id, bank.of(t).front().id);
  }
}

TEST(Questions, UserFileAddsAndRewords) {
  test::TempDir d;
  test::write_file(d / "mine.yaml",
                   "questions:\n"
                   "  stall:\n"
                   "    - {id: stall.memory, text: \"Reworded: how many bytes move per call?\"}\n"
                   "    - {id: mine.l2, text: \"What is the L2 hit rate on K and V?\"}\n"
                   "  limit:\n"
                   "    - {id: mine.fp8, text: \"Would fp8 inputs change the peak that applies?\"}\n");
  auto bank = shipped();
  auto before = bank.of("stall").size();
  bank.load(d / "mine.yaml");
  EXPECT_EQ(bank.of("stall").size(), before + 1);
  EXPECT_EQ(bank.of("stall").front().text, "Reworded: how many bytes move per call?");
  EXPECT_EQ(bank.of("stall").back().id, "mine.l2");
  EXPECT_EQ(bank.of("limit").back().id, "mine.fp8");
}

TEST(Questions, BadUserFilesAreErrorsWithLocation) {
  test::TempDir d;
  QuestionBank bank;
  test::write_file(d / "t.yaml", "questions:\n  bored:\n    - {id: x, text: \"y?\"}\n");
  EXPECT_THROW(bank.load(d / "t.yaml"), std::runtime_error);
  test::write_file(d / "n.yaml", "questions:\n  stall:\n    - {id: x}\n");
  try {
    bank.load(d / "n.yaml");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("n.yaml:3: 'text' must be a non-empty string"), std::string::npos) << e.what();
  }
}

TEST(Questions, AskRotatesThroughTheLineageAndLogsEachQuestion) {
  test::Sandbox sb(false);
  auto bank = shipped();
  const auto& done = bank.of("done");
  std::set<std::string> printed;
  for (std::size_t i = 0; i < done.size(); ++i) {
    sb.clear_streams();
    ASSERT_EQ(cmd_ask(sb.ctx, "done", std::nullopt), kExitPass) << sb.err.str();
    EXPECT_TRUE(printed.insert(sb.out.str()).second) << "repeated: " << sb.out.str();
  }
  auto c = Lineage(sb.ctx.lineage).read();
  ASSERT_EQ(c.records.size(), done.size());
  EXPECT_EQ(c.records.front().type, "ask");
  EXPECT_EQ(asked_questions(c).size(), done.size());
  EXPECT_EQ(cmd_ask(sb.ctx, "nonsense", std::nullopt), kExitError);
}

TEST(Questions, AskMergesUserQuestions) {
  test::Sandbox sb(false);
  test::write_file(sb.dir / "mine.yaml", "questions:\n  regression:\n    - {id: regression.counter, text: \"Mine?\"}\n");
  sb.ctx.question_files.push_back(sb.dir / "mine.yaml");
  ASSERT_EQ(cmd_ask(sb.ctx, "regression", std::nullopt), kExitPass);
  EXPECT_EQ(sb.out.str(), "Mine?\n");
}

TEST(Questions, LimitAnswerCarriesMeasuredContext) {
  test::Sandbox sb(false);
  auto report = test::report_json("pass", 1.02, 1.01, 1.03,
                                  {{"gate_a", true, 1.0, 30.0, 300.0}, {"gate_b", true, 1.0, 50.0, 500.0}});
  report["baselines"] = {{"cudnn", {{"gate_a", 600.0}, {"gate_b", 700.0}}}, {"fa3", {{"gate_a", 640.0}}}};
  test::write_report(sb.dir / "r.json", report);
  ASSERT_EQ(cmd_record(sb.ctx, sb.dir / "r.json"), kExitPass) << sb.err.str();
  sb.clear_streams();
  ASSERT_EQ(cmd_ask(sb.ctx, "limit", std::nullopt), kExitPass) << sb.err.str();
  const std::string out = sb.out.str();
  EXPECT_NE(out.find("percent of peak: mean 40.0% over 2 scenarios"), std::string::npos) << out;
  // fa3 beats cuDNN where it was measured (640 vs 600 on gate_a), but cuDNN has the higher mean.
  EXPECT_NE(out.find("best baseline on the same scenarios: cudnn, mean 650.0 TFLOPS vs the candidate's 400.0"),
            std::string::npos)
      << out;

  // A report without baselines says so instead of guessing.
  test::Sandbox bare(false);
  test::write_report(bare.dir / "r.json", test::report_json("pass", 1.02, 1.01, 1.03));
  ASSERT_EQ(cmd_record(bare.ctx, bare.dir / "r.json"), kExitPass);
  bare.clear_streams();
  ASSERT_EQ(cmd_ask(bare.ctx, "limit", std::nullopt), kExitPass);
  EXPECT_NE(bare.out.str().find("percent of peak: unknown"), std::string::npos) << bare.out.str();
  EXPECT_NE(bare.out.str().find("best baseline on the same scenarios: unknown"), std::string::npos) << bare.out.str();
}

}  // namespace
}  // namespace attngate::hooks
