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

// stall, cycle, limit, done, suspicious, regression.
const std::vector<std::string>& all_triggers();
bool is_trigger(const std::string& name);

struct Question {
  std::string id;
  std::string trigger;
  std::string text;
};

class QuestionBank {
 public:
  // Merges a file: a question whose id is already in the bank replaces it, a new id is appended.
  void load(const std::filesystem::path& file);
  const std::vector<Question>& of(const std::string& trigger) const;
  std::size_t size() const;

  // The next question for the trigger given every question asked so far (in lineage order).
  std::optional<Question> select(const std::string& trigger, const std::vector<QuestionRef>& asked) const;

 private:
  std::map<std::string, std::vector<Question>> by_trigger_;
};

// Every question logged in the lineage, in order.
std::vector<QuestionRef> asked_questions(const LineageContents& lineage);

}  // namespace attngate::hooks
