// attngate_scenarios: the expanded suites as JSON or a table, so that
// tools outside C++ (bench/python/attngate_baselines.py, attngate_compare.py) read the scenarios
// from attngate's one parser instead of parsing the YAML again.
//
//   attngate_scenarios --suite gate --json         the gate suite, every scenario expanded
//   attngate_scenarios --json                      every suite
// The registered kernels are kernels/tools' attngate_kernels.
//   attngate_scenarios --suite prod                a table
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "attngate/scenario.hpp"

#ifndef ATTNGATE_DEFAULT_SCENARIO_DIR
#error "ATTNGATE_DEFAULT_SCENARIO_DIR must be defined by the build"
#endif

namespace {

using namespace attngate;
using nlohmann::json;

const char* kUsage =
    "usage: attngate_scenarios [--scenarios=DIR] [--suite NAME]... [--json]\n"
    "  --suite NAME   a suite to list (repeatable; default: every suite in DIR)\n"
    "  --json         JSON (schema attngate.scenarios/1) instead of a table\n"
    "The registered kernels: attngate_kernels --json (kernels/tools).\n";

json tolerance_json(const DtypeTolerance& t) {
  return {{"o_atol", t.o_atol},
          {"initial_o_max_abs", t.initial_o_max_abs},
          {"lse_atol", t.lse_atol},
          {"initial_lse_max_abs", t.initial_lse_max_abs}};
}

json scenario_json(const Scenario& s) {
  return {{"id", s.id},
          {"suite", s.suite},
          {"batch", s.batch},
          {"seqlen_q", s.seqlen_q},
          {"seqlen_k", s.seqlen_k},
          {"heads_q", s.heads_q},
          {"heads_kv", s.heads_kv},
          {"head_dim", s.head_dim},
          {"causal", s.causal},
          {"dtype", dtype_name(s.dtype)},
          {"tags", s.tags},
          {"origin", s.origin},
          {"softmax_scale", 1.0 / std::sqrt(double(s.head_dim))},
          {"seqlen_k_effective", s.seqlen_k_effective()},
          {"flops", s.flops()},
          {"summary", scenario_summary(s)}};
}


}  // namespace

int main(int argc, char** argv) {
  std::string scenario_dir = ATTNGATE_DEFAULT_SCENARIO_DIR;
  std::vector<std::string> wanted;
  bool as_json = false;
  CLI::App app{"attngate_scenarios: the expanded suites as JSON or a table",
               "attngate_scenarios"};
  app.footer(kUsage);
  app.add_option("--scenarios", scenario_dir, "Directory of the YAML suites (default: the shipped scenarios/)");
  app.add_option("--suite", wanted, "A suite to list (repeatable; default: every suite in DIR)")
      ->allow_extra_args(false);  // one value per --suite: `--suite a b` does not take b
  app.add_flag("--json", as_json, "JSON (schema attngate.scenarios/1) instead of a table");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "attngate_scenarios: " << e.what() << "\n" << kUsage;
    return 2;
  }
  const std::filesystem::path dir = scenario_dir;
  std::vector<Suite> suites;
  try {
    suites = load_suite_dir(dir);
  } catch (const std::exception& e) {
    std::cerr << "attngate_scenarios: " << e.what() << "\n";
    return 2;
  }
  std::vector<const Suite*> chosen;
  for (const auto& name : wanted) {
    const Suite* found = nullptr;
    std::string known;
    for (const auto& s : suites) {
      if (s.name == name) found = &s;
      known += (known.empty() ? "" : ", ") + s.name;
    }
    if (!found) {
      std::cerr << "attngate_scenarios: no suite '" << name << "' in " << dir.string() << " (have: " << known << ")\n";
      return 2;
    }
    chosen.push_back(found);
  }
  if (wanted.empty())
    for (const auto& s : suites) chosen.push_back(&s);

  if (as_json) {
    json out = {{"schema", "attngate.scenarios/1"},
                {"scenario_dir", std::filesystem::absolute(dir).string()},
                {"semantics",
                 "BSHD; softmax_scale 1/sqrt(head_dim); GQA by heads_q/heads_kv groups; causal bottom-right "
                 "(key j visible to query i iff j <= i + seqlen_k - seqlen_q); fully masked rows O = 0, LSE = -inf; "
                 "flops = 4*batch*heads_q*seqlen_q*seqlen_k_effective*head_dim"},
                {"suites", json::array()}};
    for (const Suite* s : chosen) {
      json scenarios = json::array();
      for (const auto& sc : s->scenarios) scenarios.push_back(scenario_json(sc));
      out["suites"].push_back({{"name", s->name},
                               {"description", s->description},
                               {"file", s->file},
                               {"settings", s->settings},
                               {"tolerance",
                                {{"ratio_to_initial", s->tolerance.ratio_to_initial},
                                 {"bf16", tolerance_json(s->tolerance.bf16)},
                                 {"fp16", tolerance_json(s->tolerance.fp16)}}},
                               {"scenarios", scenarios}});
    }
    std::cout << out.dump(1) << "\n";
    return 0;
  }
  for (const Suite* s : chosen) {
    std::cout << s->name << " (" << s->scenarios.size() << " scenarios, " << s->file << ")\n";
    for (const auto& sc : s->scenarios)
      std::cout << "  " << std::left << std::setw(44) << sc.id << " " << scenario_summary(sc) << "  "
                << std::setprecision(3) << sc.flops() << " FLOP\n";
  }
  return 0;
}
