#include "command_support.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace cmd;

namespace {

// `history --elites`: the best version per scenario group, and how to restore it.
void print_elites(const Context& ctx, const std::vector<Record>& evaluations) {
  auto& os = *ctx.out;
  const std::vector<Elite> best = elites(evaluations);
  if (best.empty()) {
    os << "attngate: no elites yet: no scored version with per-scenario speedups in " << ctx.lineage.string() << "\n";
    return;
  }
  os << fmt::format("{:<22}  {:<7}  {:<13}  {:<9}  {}\n", "group", "version", "group geomean", "geomean", "restore");
  for (const auto& e : best) {
    auto it = std::find_if(evaluations.begin(), evaluations.end(), [&](const Record& r) { return r.version == e.version; });
    const std::string restore = restore_command(ctx, *it);
    os << fmt::format("{:<22}  {:<7}  {:<13}  {:<9}  {}\n", e.group.name(), e.version,
                      fmt::format("{:.3f}x", e.group_geomean), fx(e.geomean),
                      restore.empty() ? "(source not kept)" : restore);
  }
}

}  // namespace

int cmd_history(const Context& ctx, bool show_elites) {
  LineageContents c;
  try {
    c = Lineage(ctx.lineage).read();
  } catch (const std::exception& e) {
    *ctx.err << "attngate history: " << e.what() << "\n";
    return kExitError;
  }
  print_issues(ctx, c.issues);
  auto& os = *ctx.out;
  if (c.records.empty()) {
    os << "attngate: no evaluation recorded yet in " << ctx.lineage.string() << "\n";
    return kExitPass;
  }
  if (show_elites) {
    print_elites(ctx, c.evaluations());
    return kExitPass;
  }
  // Questions asked through `ask` are shown with the version they were asked about; a version that
  // `attngate commit` committed is followed by the questions asked since the previous commit.
  std::map<int, std::vector<std::string>> asked;
  std::map<int, std::vector<std::string>> before_gain;
  for (const auto& r : c.records) {
    if (r.type == "ask")
      for (const auto& q : r.questions) asked[r.version].push_back("ask:" + q.trigger);
    if (r.type == "commit") {
      auto& ids = before_gain[r.version];
      ids.clear();
      for (const auto& q : r.questions_before) ids.push_back(q.id);
    }
  }
  os << fmt::format("{:<7}  {:<20}  {:<9}  {:<17}  {:<7}  {}\n", "version", "time (UTC)", "geomean", "CI", "verdict",
                    "triggers");
  for (const auto& r : c.records) {
    if (!r.is_evaluation()) continue;
    std::string ci = r.geomean.ci_low && r.geomean.ci_high
                         ? "[" + fmt::format("{:.3f}", *r.geomean.ci_low) + ", " + fmt::format("{:.3f}", *r.geomean.ci_high) + "]"
                         : "-";
    auto triggers = r.triggers;
    for (const auto& a : asked[r.version]) triggers.push_back(a);
    std::string reasons;
    for (const auto& reason : r.reasons) reasons += (reasons.empty() ? "" : ",") + reason.code;
    os << fmt::format("{:<7}  {:<20}  {:<9}  {:<17}  {:<7}  {}{}", r.version, r.time,
                      r.geomean.speedup ? fmt::format("{:.3f}x", *r.geomean.speedup) : "-", ci, r.verdict,
                      triggers.empty() ? "-" : fmt::format("{}", fmt::join(triggers, ",")),
                      reasons.empty() ? "" : "  (" + reasons + ")")
       << (r.note.empty() ? "" : "  \"" + r.note + "\"") << "\n";
    if (auto it = before_gain.find(r.version); it != before_gain.end())
      os << "         committed; questions asked before this gain: "
         << (it->second.empty() ? std::string("none") : fmt::format("{}", fmt::join(it->second, ", "))) << "\n";
  }
  return kExitPass;
}

}  // namespace attngate::hooks
