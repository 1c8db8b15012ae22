// `attngate show V` and `attngate diff V1 V2`: one evaluated version of the lineage, and two compared.
#include <algorithm>
#include <cstdio>
#include <ostream>
#include <set>

#include "attngate/hooks/commands.hpp"
#include <fmt/format.h>
#include <fmt/printf.h>

#include "attngate/hooks/version_store.hpp"

namespace attngate::hooks {
namespace {

using nlohmann::json;

std::string fx(const std::optional<double>& v) { return v ? fmt::format("{:.3f}x", *v) : std::string("-"); }

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string names_or_none(const std::vector<std::string>& v) {
  return v.empty() ? "none" : fmt::format("{}", fmt::join(v, ", "));
}

std::string ci_text(const std::optional<double>& lo, const std::optional<double>& hi) {
  return lo && hi ? "[" + fmt::format("{:.3f}", *lo) + ", " + fmt::format("{:.3f}", *hi) + "]" : "-";
}

// The evaluation `version` of the lineage (and the lineage, for the asks); "" or why not.
std::string load_version(const Context& ctx, int version, LineageContents& c, Record& r) {
  c = Lineage(ctx.lineage).read();
  for (const auto& x : c.records)
    if (x.is_evaluation() && x.version == version) {
      r = x;
      return {};
    }
  return "no evaluated version " + std::to_string(version) + " in " + ctx.lineage.string() +
         " (attngate history lists them)";
}

// The questions asked about a version: its evaluation's, then those `attngate ask` logged for it.
json questions_about(const LineageContents& c, int version, const QuestionBank& bank) {
  json out = json::array();
  for (const auto& r : c.records) {
    if (r.version != version || (!r.is_evaluation() && r.type != "ask")) continue;
    for (const auto& q : r.questions) {
      auto b = bank.find(q.id);
      out.push_back({{"trigger", q.trigger}, {"id", q.id}, {"text", b ? b->text : std::string{}},
                     {"asked_by", r.is_evaluation() ? "evaluation" : "ask"}});
    }
  }
  return out;
}

json source_json(const Context& ctx, const Record& r) {
  const VersionSource s = version_source(ctx, r);
  const std::string restore = restore_command(ctx, r);
  return {{"kept", s.files.has_value()},
          {"from", s.from.empty() ? json(nullptr)
                   : s.from == "store" ? json(s.dir.string())
                                       : json("git commit " + s.commit)},
          {"restore", restore.empty() ? json(nullptr) : json(restore)},
          {"why_not", s.why_not}};
}

void print_scenarios(std::ostream& os, const Record& r) {
  os << fmt::format("  {:<40}  {:<8}  {:<16}  {:<7}  {}\n", "scenario", "speedup", "CI", "correct",
                    "best baseline TFLOPS (fraction)");
  for (const auto& s : r.scenarios) {
    const auto& b = s.best_baseline;
    std::string best = !b ? std::string("-")
                          : b->library + " " + (b->tflops ? fmt::format("{:.1f}", *b->tflops) : "?") +
                                (s.fraction_of_best ? " (" + fmt::format("{:.0f}%", 100 * *s.fraction_of_best) + ")" : "");
    os << fmt::format("  {:<40}  {:<8}  {:<16}  {:<7}  {}\n", s.id, fx(s.speedup), ci_text(s.ci_low, s.ci_high),
                      !s.correct ? "-" : *s.correct ? "yes" : "NO", best);
  }
}

void print_show(std::ostream& os, const Record& r, const json& questions, const json& source) {
  os << "attngate show: version " << r.version << " (" << r.source << ", " << r.time << ")"
     << (r.dry_run ? " [dry run: simulated]" : "") << "\n";
  os << "  verdict " << r.verdict << "; geomean " << fx(r.geomean.speedup) << " CI "
     << ci_text(r.geomean.ci_low, r.geomean.ci_high) << "; target " << fx(r.target.geomean)
     << (r.target.baseline.empty() ? "" : " vs " + r.target.baseline) << "\n";
  for (const auto& reason : r.reasons) os << "  reason " << reason.code << ": " << reason.detail << "\n";
  os << "  note: " << (r.note.empty() ? "-" : r.note) << "\n";
  os << "  candidate " << r.candidate_sha256.substr(0, 12) << ", tree " << r.candidate_tree_sha256.substr(0, 12)
     << "; git " << (r.git.commit.empty() ? "-" : r.git.commit.substr(0, 12))
     << (r.git.candidate_dirty ? " (candidate not committed there)" : "") << "\n";
  print_scenarios(os, r);
  for (const auto& s : r.signals) os << "  signal " << s.trigger << "/" << s.kind << ": " << s.detail << "\n";
  for (const auto& q : questions)
    os << "  question (" << q["trigger"].get<std::string>() << ", by " << q["asked_by"].get<std::string>()
       << ") " << q["id"].get<std::string>() << ": " << q["text"].get<std::string>() << "\n";
  if (source["kept"].get<bool>())
    os << "  source: " << source["from"].get<std::string>() << "; restore: " << source["restore"].get<std::string>() << "\n";
  else
    os << "  source: not kept: " << source["why_not"].get<std::string>() << "\n";
}

// The codes (or trigger/kind) in `a` that `b` lacks.
std::vector<std::string> only_in(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const auto& x : a)
    if (std::find(b.begin(), b.end(), x) == b.end() && std::find(out.begin(), out.end(), x) == out.end())
      out.push_back(x);
  return out;
}

std::vector<std::string> reason_codes(const Record& r) {
  std::vector<std::string> out;
  for (const auto& x : r.reasons) out.push_back(x.code);
  return out;
}

std::vector<std::string> signal_names(const Record& r) {
  std::vector<std::string> out;
  for (const auto& s : r.signals) out.push_back(s.trigger + "/" + s.kind);
  return out;
}

std::optional<double> ratio(const std::optional<double>& a, const std::optional<double>& b) {
  return a && b && *a > 0 ? std::optional<double>(*b / *a) : std::nullopt;
}

// Both versions' per-scenario speedups (the first's order, then the second's other scenarios).
json scenario_pairs(const Record& a, const Record& b) {
  std::vector<std::string> ids;
  for (const auto* r : {&a, &b})
    for (const auto& s : r->scenarios)
      if (std::find(ids.begin(), ids.end(), s.id) == ids.end()) ids.push_back(s.id);
  auto speedup = [](const Record& r, const std::string& id) -> std::optional<double> {
    for (const auto& s : r.scenarios)
      if (s.id == id) return s.speedup;
    return std::nullopt;
  };
  json out = json::array();
  for (const auto& id : ids) {
    const auto sa = speedup(a, id), sb = speedup(b, id);
    out.push_back({{"id", id}, {"a", opt(sa)}, {"b", opt(sb)}, {"ratio", opt(ratio(sa, sb))}});
  }
  return out;
}

json diff_json(const Context& ctx, const Record& a, const Record& b) {
  const SourceDiff d = source_diff(ctx, a, b);
  return {{"schema", "attngate.diff/1"},
          {"a", a.version},
          {"b", b.version},
          {"verdict", {{"a", a.verdict}, {"b", b.verdict}}},
          {"geomean", {{"a", opt(a.geomean.speedup)}, {"b", opt(b.geomean.speedup)},
                       {"ratio", opt(ratio(a.geomean.speedup, b.geomean.speedup))}}},
          {"notes", {{"a", a.note}, {"b", b.note}}},
          {"scenarios", scenario_pairs(a, b)},
          {"reasons", {{"only_a", only_in(reason_codes(a), reason_codes(b))}, {"only_b", only_in(reason_codes(b), reason_codes(a))}}},
          {"signals", {{"only_a", only_in(signal_names(a), signal_names(b))}, {"only_b", only_in(signal_names(b), signal_names(a))}}},
          {"source", {{"available", d.available}, {"from_a", d.from_a}, {"from_b", d.from_b}, {"diff", d.text}, {"why", d.why}}}};
}

std::string num_or_dash(const json& v, const char* f) { return v.is_number() ? fmt::sprintf(f, v.get<double>()) : "-"; }

void print_diff(std::ostream& os, const json& d) {
  const std::string va = "version " + d["a"].dump(), vb = "version " + d["b"].dump();
  os << "attngate diff: " << va << " -> " << vb << "\n";
  os << "  verdict " << d["verdict"]["a"].get<std::string>() << " -> " << d["verdict"]["b"].get<std::string>()
     << "; geomean " << num_or_dash(d["geomean"]["a"], "%.3fx") << " -> " << num_or_dash(d["geomean"]["b"], "%.3fx")
     << " (ratio " << num_or_dash(d["geomean"]["ratio"], "%.3f") << ")\n";
  for (const char* side : {"a", "b"})
    os << "  note, version " << d[side].dump() << ": "
       << (d["notes"][side].get<std::string>().empty() ? "-" : d["notes"][side].get<std::string>()) << "\n";
  os << fmt::format("  {:<40}  {:>9}  {:>9}  {:>7}\n", "scenario", "v" + d["a"].dump(), "v" + d["b"].dump(), "ratio");
  for (const auto& s : d["scenarios"])
    os << fmt::format("  {:<40}  {:>9}  {:>9}  {:>7}\n", s["id"].get<std::string>(), num_or_dash(s["a"], "%.3fx"),
                      num_or_dash(s["b"], "%.3fx"), num_or_dash(s["ratio"], "%.3f"));
  for (const char* what : {"reasons", "signals"}) {
    os << "  " << what << " only in " << va << ": " << names_or_none(d[what]["only_a"].get<std::vector<std::string>>()) << "\n";
    os << "  " << what << " only in " << vb << ": " << names_or_none(d[what]["only_b"].get<std::vector<std::string>>()) << "\n";
  }
  const json& src = d["source"];
  if (!src["available"].get<bool>())
    os << "  " << src["why"].get<std::string>() << "\n";
  else if (src["diff"].get<std::string>().empty())
    os << "  source: no difference (" << src["from_a"].get<std::string>() << ", " << src["from_b"].get<std::string>() << ")\n";
  else
    os << "  source (" << va << " from " << src["from_a"].get<std::string>() << ", " << vb << " from "
       << src["from_b"].get<std::string>() << "):\n" << src["diff"].get<std::string>();
}

}  // namespace

int cmd_show(const Context& ctx, int version, bool as_json) {
  try {
    LineageContents c;
    Record r;
    if (auto why = load_version(ctx, version, c, r); !why.empty()) {
      *ctx.err << "attngate show: " << why << "\n";
      return kExitError;
    }
    const json questions = questions_about(c, version, load_bank(ctx));
    const json source = source_json(ctx, r);
    if (as_json)
      *ctx.out << json{{"schema", "attngate.show/1"}, {"record", r}, {"questions", questions}, {"source", source}}.dump(1)
               << "\n";
    else
      print_show(*ctx.out, r, questions, source);
    return kExitPass;
  } catch (const std::exception& e) {
    *ctx.err << "attngate show: " << e.what() << "\n";
    return kExitError;
  }
}

int cmd_diff(const Context& ctx, int version_a, int version_b, bool as_json) {
  try {
    LineageContents c;
    Record a, b;
    for (auto [v, r] : {std::pair{version_a, &a}, std::pair{version_b, &b}})
      if (auto why = load_version(ctx, v, c, *r); !why.empty()) {
        *ctx.err << "attngate diff: " << why << "\n";
        return kExitError;
      }
    const json d = diff_json(ctx, a, b);
    if (as_json)
      *ctx.out << d.dump(1) << "\n";
    else
      print_diff(*ctx.out, d);
    return kExitPass;
  } catch (const std::exception& e) {
    *ctx.err << "attngate diff: " << e.what() << "\n";
    return kExitError;
  }
}

}  // namespace attngate::hooks
