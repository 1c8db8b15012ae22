#include "command_support.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace cmd;

std::string limit_context(const Record& latest) {
  return "measured context (version " + std::to_string(latest.version) + "):\n" +
         limit_context_of(latest.scenarios, latest.baselines);
}

int cmd_ask(const Context& ctx, const std::string& trigger, const std::optional<fs::path>& report) {
  if (!is_trigger(trigger)) {
    *ctx.err << "attngate ask: unknown trigger '" << trigger << "'\n";
    return kExitError;
  }
  QuestionBank bank;
  std::optional<GateReport> rep;
  try {
    bank = load_bank(ctx);
    if (report) rep = load_report(*report);
  } catch (const std::exception& e) {
    *ctx.err << "attngate ask: " << e.what() << "\n";
    return kExitError;
  }
  if (bank.of(trigger).empty()) {
    *ctx.err << "attngate ask: the question bank has no question for '" << trigger << "'\n";
    return kExitError;
  }
  std::optional<Question> chosen;
  std::optional<Record> latest;
  std::vector<std::string> tags;
  std::vector<LineageIssue> issues;
  Lineage(ctx.lineage).append(
      [&](const LineageContents& earlier, int version) {
        issues = earlier.issues;
        latest = earlier.last_evaluation();
        // done and correctness choose by what failed: the given report's, else the latest evaluation's.
        const std::vector<Reason> none_r;
        const std::vector<ScenarioResult> none_s;
        const auto& reasons = rep ? rep->reasons : latest ? latest->reasons : none_r;
        const auto& scenarios = rep ? rep->scenarios : latest ? latest->scenarios : none_s;
        tags = question_tags(trigger, reasons, scenarios);
        chosen = bank.select_for(trigger, asked_questions(earlier), tags);
        Record r;
        r.type = "ask";
        r.version = version;
        r.time = now_iso8601();
        r.source = "ask";
        r.questions.push_back({trigger, chosen->id});
        return r;
      },
      false);
  print_issues(ctx, issues);
  *ctx.out << chosen->text << "\n";
  if (auto pointer = knowledge_pointer(ctx, *chosen, ""); !pointer.empty()) *ctx.out << pointer << "\n";
  if (trigger == "correctness")
    *ctx.out << "chosen by: the failing scenarios share " << (tags.empty() ? std::string("no listed feature") : fmt::format("{}", fmt::join(tags, ", ")))
             << "\n";
  if (trigger == "done" && !tags.empty()) *ctx.out << "chosen by: reason " << fmt::format("{}", fmt::join(tags, ", ")) << "\n";
  if (trigger == "limit") {
    if (rep) {
      *ctx.out << "measured context (" << report->string() << "):\n" << limit_context_of(rep->scenarios, rep->baselines);
    } else if (latest) {
      *ctx.out << limit_context(*latest);
    } else {
      *ctx.out << "measured context: none yet (no evaluation in the lineage; run attngate gate)\n";
    }
  }
  return kExitPass;
}

}  // namespace attngate::hooks
