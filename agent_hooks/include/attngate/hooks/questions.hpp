#pragma once
// The question bank: short questions per trigger, asked in rotation so none repeats before the
// trigger's bank is exhausted; what was asked is read back from the lineage.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attngate/hooks/lineage.hpp"

namespace attngate::hooks {

// stall, cycle, limit, done, suspicious, regression, correctness, human (the supervisor's escalation).
const std::vector<std::string>& all_triggers();
bool is_trigger(const std::string& name);

struct Question {
  std::string id;
  std::string trigger;
  std::string text;
  std::string when;  // optional: a correctness feature or a done reason code (see select_for)
  std::string read;  // optional: a topic of knowledge/README.md that `ask` points to
};

// What a correctness question can be chosen by: features the failing scenarios share.
const std::vector<std::string>& correctness_features();  // causal, tail, seqlen_mismatch, fp16, large_scores


class QuestionBank {
 public:
  // Merges a file: a question whose id is already in the bank replaces it, a new id is appended.
  void load(const std::filesystem::path& file);
  const std::vector<Question>& of(const std::string& trigger) const;
  std::size_t size() const;

  // The next question for the trigger given every question asked so far (in lineage order).
  std::optional<Question> select(const std::string& trigger, const std::vector<QuestionRef>& asked) const;
  // The same rotation over the questions whose `when` is one of tags (in the order of tags); when
  // none matches, over the questions without `when` (the trigger's default), else the whole bank.
  std::optional<Question> select_for(const std::string& trigger, const std::vector<QuestionRef>& asked,
                                     const std::vector<std::string>& tags) const;
  std::optional<Question> find(const std::string& id) const;

 private:
  std::map<std::string, std::vector<Question>> by_trigger_;
};

// The features of correctness_features() that every scenario failing with CORRECTNESS_FAILED has
// (read from the scenarios' `shape`, "b=.. sq=N sk=M .. causal|noncausal dtype"); large_scores when
// the reason's detail names a failing run on that distribution. Empty when nothing failed.
std::vector<std::string> shared_failure_features(const std::vector<Reason>& reasons,
                                                 const std::vector<ScenarioResult>& scenarios);
// What select_for chooses by: correctness -> shared_failure_features; done -> the reason codes;
// other triggers -> nothing.
std::vector<std::string> question_tags(const std::string& trigger, const std::vector<Reason>& reasons,
                                       const std::vector<ScenarioResult>& scenarios);
// The one trigger whose question an evaluation asks: correctness when CORRECTNESS_FAILED, then
// human (the supervisor's escalation), then suspicious, then the first of `triggers` (the supervisor's order, `done` last); empty when none.
std::string verdict_trigger(const std::vector<Reason>& reasons, const std::vector<std::string>& triggers);

// knowledge/README.md: topic (the first word of a "## " heading) -> the section's text.
std::map<std::string, std::string> load_knowledge(const std::filesystem::path& index);

// Every question logged in the lineage, in order.
std::vector<QuestionRef> asked_questions(const LineageContents& lineage);

}  // namespace attngate::hooks
