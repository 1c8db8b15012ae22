#include "attngate/hooks/questions.hpp"
#include "attngate/hooks/yaml_file.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
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

std::string optional_scalar(const YAML::Node& map, const char* key, const std::filesystem::path& file) {
  const YAML::Node n = map[key];
  if (!n) return {};
  if (!n.IsScalar() || n.as<std::string>().empty())
    throw std::runtime_error(where(file, map) + ": '" + key + "' must be a non-empty string when present");
  return n.as<std::string>();
}

// The rotation over `pool`: replay the log; once every question of the pool has been asked, a new
// round begins.
std::optional<Question> rotate(const std::vector<Question>& pool, const std::string& trigger,
                               const std::vector<QuestionRef>& asked) {
  if (pool.empty()) return std::nullopt;
  std::set<std::string> ids;
  for (const auto& q : pool) ids.insert(q.id);
  std::set<std::string> this_round;
  for (const auto& a : asked) {
    if (a.trigger != trigger || !ids.count(a.id)) continue;
    this_round.insert(a.id);
    if (this_round.size() == ids.size()) this_round.clear();
  }
  for (const auto& q : pool)
    if (!this_round.count(q.id)) return q;
  return pool.front();
}

// "sq=4096" in a shape string -> 4096.
std::optional<long> shape_number(const std::string& shape, const std::string& key) {
  std::istringstream in(shape);
  for (std::string tok; in >> tok;)
    if (tok.rfind(key + "=", 0) == 0) {
      try {
        return std::stol(tok.substr(key.size() + 1));
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  return std::nullopt;
}

bool has_token(const std::string& shape, const std::string& word) {
  std::istringstream in(shape);
  for (std::string tok; in >> tok;)
    if (tok == word) return true;
  return false;
}

}  // namespace

const std::vector<std::string>& all_triggers() {
  static const std::vector<std::string> t = {"stall", "cycle", "limit", "done", "suspicious", "regression",
                                             "correctness", "human"};
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
                               "' (stall, cycle, limit, done, suspicious, regression, correctness, human)");
    if (!group.second.IsSequence())
      throw std::runtime_error(where(file, group.second) + ": '" + trigger + "' must be a list of questions");
    for (const auto& item : group.second) {
      if (!item.IsMap()) throw std::runtime_error(where(file, item) + ": a question is a map {id, text}");
      Question q{scalar(item, "id", file), trigger, scalar(item, "text", file), optional_scalar(item, "when", file),
                 optional_scalar(item, "read", file)};
      if (!q.when.empty()) {
        const auto& f = correctness_features();
        if (trigger == "correctness" && std::find(f.begin(), f.end(), q.when) == f.end())
          throw std::runtime_error(where(file, item) + ": 'when: " + q.when +
                                   "' is not a correctness feature (causal, tail, seqlen_mismatch, fp16, large_scores)");
        if (trigger != "correctness" && trigger != "done")
          throw std::runtime_error(where(file, item) + ": 'when' applies to correctness and done questions only");
      }
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
  return rotate(of(trigger), trigger, asked);
}

std::optional<Question> QuestionBank::select_for(const std::string& trigger, const std::vector<QuestionRef>& asked,
                                                 const std::vector<std::string>& tags) const {
  const auto& bank = of(trigger);
  std::vector<Question> pool;
  for (const auto& tag : tags)
    for (const auto& q : bank)
      if (q.when == tag && std::none_of(pool.begin(), pool.end(), [&](const Question& p) { return p.id == q.id; }))
        pool.push_back(q);
  if (pool.empty())
    for (const auto& q : bank)
      if (q.when.empty()) pool.push_back(q);
  if (pool.empty()) pool = bank;
  return rotate(pool, trigger, asked);
}

std::optional<Question> QuestionBank::find(const std::string& id) const {
  for (const auto& [t, list] : by_trigger_)
    for (const auto& q : list)
      if (q.id == id) return q;
  return std::nullopt;
}

const std::vector<std::string>& correctness_features() {
  static const std::vector<std::string> f = {"large_scores", "fp16", "tail", "seqlen_mismatch", "causal"};
  return f;
}

std::vector<std::string> shared_failure_features(const std::vector<Reason>& reasons,
                                                 const std::vector<ScenarioResult>& scenarios) {
  std::vector<std::string> failing;
  for (const auto& r : reasons) {
    if (r.code != "CORRECTNESS_FAILED") continue;
    failing.insert(failing.end(), r.scenarios.begin(), r.scenarios.end());
  }
  // A reason without scenario ids: the scenarios marked incorrect.
  if (failing.empty() && has_reason(reasons, "CORRECTNESS_FAILED"))
    for (const auto& s : scenarios)
      if (s.correct == false) failing.push_back(s.id);
  if (failing.empty()) return {};
  std::map<std::string, int> count;
  int known = 0;
  // The first failing scenario failed on large scores before any other distribution (it passed the
  // standard one): the reason's detail, which it replaces, described that scenario's first failure.
  bool large_scores = false;
  for (const auto& id : failing) {
    auto it = std::find_if(scenarios.begin(), scenarios.end(), [&](const ScenarioResult& s) { return s.id == id; });
    if (id == failing.front() && it != scenarios.end() && !it->failed_distributions.empty() &&
        it->failed_distributions.front() == "large_scores")
      large_scores = true;
    const std::string shape = it == scenarios.end() ? std::string{} : it->shape;
    auto sq = shape_number(shape, "sq"), sk = shape_number(shape, "sk");
    // Without a shape, only the id's "causal" part is known (gate_mha_d128_s4096_causal).
    if (shape.empty()) {
      if (id.find("noncausal") == std::string::npos && id.find("causal") != std::string::npos) ++count["causal"];
      continue;
    }
    ++known;
    if (has_token(shape, "causal")) ++count["causal"];
    if (has_token(shape, "fp16")) ++count["fp16"];
    if ((sq && *sq % 64 != 0) || (sk && *sk % 64 != 0)) ++count["tail"];
    if (sq && sk && *sq != *sk) ++count["seqlen_mismatch"];
  }
  const int n = static_cast<int>(failing.size());
  std::vector<std::string> out;
  for (const auto& f : correctness_features()) {
    if (f == "large_scores") {
      if (large_scores) out.push_back(f);
    } else if (f == "causal" ? count[f] == n : (known == n && count[f] == n)) {
      out.push_back(f);
    }
  }
  return out;
}

std::vector<std::string> question_tags(const std::string& trigger, const std::vector<Reason>& reasons,
                                       const std::vector<ScenarioResult>& scenarios) {
  if (trigger == "correctness") return shared_failure_features(reasons, scenarios);
  std::vector<std::string> out;
  if (trigger == "done")
    for (const auto& r : reasons) out.push_back(r.code);
  return out;
}

std::string verdict_trigger(const std::vector<Reason>& reasons, const std::vector<std::string>& triggers) {
  if (has_reason(reasons, "CORRECTNESS_FAILED")) return "correctness";
  if (std::find(triggers.begin(), triggers.end(), "human") != triggers.end()) return "human";
  if (std::find(triggers.begin(), triggers.end(), "suspicious") != triggers.end()) return "suspicious";
  return triggers.empty() ? std::string{} : triggers.front();
}

std::map<std::string, std::string> load_knowledge(const std::filesystem::path& index) {
  std::map<std::string, std::string> out;
  std::ifstream in(index);
  std::string topic, body;
  auto flush = [&] {
    if (topic.empty()) return;
    while (!body.empty() && body.back() == '\n') body.pop_back();
    out[topic] = body;
  };
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) {
      flush();
      std::istringstream words(line.substr(3));
      words >> topic;
      body.clear();
    } else if (line.rfind("# ", 0) == 0) {
      flush();
      topic.clear();
    } else if (!topic.empty() && !(body.empty() && line.empty())) {
      body += line + "\n";
    }
  }
  flush();
  return out;
}

std::vector<QuestionRef> asked_questions(const LineageContents& lineage) {
  std::vector<QuestionRef> out;
  for (const auto& r : lineage.records) out.insert(out.end(), r.questions.begin(), r.questions.end());
  return out;
}

}  // namespace attngate::hooks
