#pragma once
// `attngate gate --dry-run`: the gate's wiring without a GPU or a build. It reads and hashes the
// candidate folder, synthesizes a report whose speedups come from the candidate source, and
// records it in a lineage of its own (so the real one never holds a simulated version); the
// supervisor, the questions and --json work as in a real run. Exit 10 (simulated pass) or 11
// (simulated fail), never 0; every line it prints starts with "[dry-run]".
//
// In candidate.cu, any line containing "attngate-dry-run:" is followed by directives:
//   speedup=1.07        every scenario's speedup (default 1.0)
//   speedup[d64]=1.2    the speedup of the scenarios whose id contains "d64" (later ones win)
//   incorrect           every scenario fails correctness
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/hooks/commands.hpp"

namespace attngate::hooks {

inline constexpr const char* kDryRunMarker = "attngate-dry-run:";
inline constexpr const char* kDryRunPrefix = "[dry-run] ";

// <folder>/lineage.jsonl -> <folder>/dry-run/lineage.jsonl; any other file F -> F.dry-run.
std::filesystem::path dry_run_lineage(const std::filesystem::path& lineage);
// Where the synthesized report goes: report.json beside the dry-run lineage (F.dry-run.report.json).
std::filesystem::path dry_run_report_file(const std::filesystem::path& dry_lineage);

struct DryRunPlan {
  double speedup = 1.0;
  std::vector<std::pair<std::string, double>> per_scenario;  // (id substring, speedup), in source order
  bool incorrect = false;
};
// Throws std::runtime_error naming a directive it cannot read (a speedup that is not a positive number).
DryRunPlan parse_dry_run_plan(const std::string& source);
double planned_speedup(const DryRunPlan& plan, const std::string& scenario_id);

struct DryRunSuite {
  std::vector<std::pair<std::string, std::string>> scenarios;  // (id, shape)
  double target = 1.0, floor = 0;
  std::string baseline = "initial", kernel = "candidate";
};
// The report (schema attngate.gate_report/1, "dry_run": true) the plan gives on the suite: each
// scenario's speedup with a ±1% interval, the geomean with ±0.5%, judged as the gate judges.
GateReport dry_run_report(const DryRunSuite& suite, const DryRunPlan& plan);

// `attngate gate --dry-run`.
int cmd_gate_dry_run(const Context& ctx, const GateOptions& options);

}  // namespace attngate::hooks
