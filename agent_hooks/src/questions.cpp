#include "attngate/hooks/questions.hpp"
#include "attngate/hooks/yaml_file.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

namespace attngate::hooks {
namespace {

std::string where(const std::filesystem::path& file, const YAML::Node& n) {
  return file.string() + ":" + std::to_string(n.Mark().line + 1);
}

// A missing key gives an invalid node that has no position, so errors point at the parent map.
std::string scalar(const YAML::Node& map, const char* key, const std::filesystem::path& file) {
  const YAML::Node n = map[key];
  if (!n || !n.IsScalar() || n.as<std::string>().empty())
    throw std::runtime_error(where(file, map) + ": '" + key + "' must be a non-empty string");
  return n.as<std::string>();
}

}  // namespace

const std::vector<std::string>& all_triggers() {
  static const std::vector<std::string> t = {"stall", "cycle", "limit", "done", "suspicious", "regression"};
  return t;
}

bool is_trigger(const std::string& name) {
  const auto& t = all_triggers();
  return std::find(t.begin(), t.end(), name) != t.end();
}

void QuestionBank::load(const std::filesystem::path& file) {
  const YAML::Node root = load_yaml_file(file);
  const YAML::Node questions = root.IsMap() ? root["questions"] : YAML::Node();
  if (!questions || !questions.IsMap())
    throw std::runtime_error(file.string() + ": expected a 'questions:' map of trigger -> list of {id, text}");
  for (const auto& group : questions) {
    auto trigger = group.first.as<std::string>();
    if (!is_trigger(trigger))
      throw std::runtime_error(where(file, group.first) + ": unknown trigger '" + trigger +
                               "' (stall, cycle, limit, done, suspicious, regression)");
    if (!group.second.IsSequence())
      throw std::runtime_error(where(file, group.second) + ": '" + trigger + "' must be a list of questions");
    for (const auto& item : group.second) {
      if (!item.IsMap()) throw std::runtime_error(where(file, item) + ": a question is a map {id, text}");
      Question q{scalar(item, "id", file), trigger, scalar(item, "text", file)};
      // An id already in the bank is replaced in place, wherever it was, so users can reword one.
      bool replaced = false;
      for (auto& [t, list] : by_trigger_) {
        auto it = std::find_if(list.begin(), list.end(), [&](const Question& x) { return x.id == q.id; });
        if (it == list.end()) continue;
        if (t == trigger) *it = q;
        else list.erase(it);
        replaced = t == trigger;
        break;
      }
      if (!replaced) by_trigger_[trigger].push_back(q);
    }
  }
}

const std::vector<Question>& QuestionBank::of(const std::string& trigger) const {
  static const std::vector<Question> none;
  auto it = by_trigger_.find(trigger);
  return it == by_trigger_.end() ? none : it->second;
}

std::size_t QuestionBank::size() const {
  std::size_t n = 0;
  for (const auto& [t, list] : by_trigger_) n += list.size();
  return n;
}

std::optional<Question> QuestionBank::select(const std::string& trigger, const std::vector<QuestionRef>& asked) const {
  const auto& bank = of(trigger);
  if (bank.empty()) return std::nullopt;
  std::set<std::string> ids;
  for (const auto& q : bank) ids.insert(q.id);
  // Replay the log: once every question of the bank has been asked, a new round begins.
  std::set<std::string> this_round;
  for (const auto& a : asked) {
    if (a.trigger != trigger || !ids.count(a.id)) continue;
    this_round.insert(a.id);
    if (this_round.size() == ids.size()) this_round.clear();
  }
  for (const auto& q : bank)
    if (!this_round.count(q.id)) return q;
  return bank.front();
}

std::vector<QuestionRef> asked_questions(const LineageContents& lineage) {
  std::vector<QuestionRef> out;
  for (const auto& r : lineage.records) out.insert(out.end(), r.questions.begin(), r.questions.end());
  return out;
}

}  // namespace attngate::hooks
