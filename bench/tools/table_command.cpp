// attngate_stats table: the candidate against every baseline, per scenario and as geometric means
// (baseline_table.hpp), as JSON for bench/python/attngate_compare.py to render.
//
//   attngate_stats table --bench gate_attngate.json --baselines gate_baselines.json [--out FILE]
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/bench/baseline_table.hpp"
#include "commands.hpp"

namespace attngate::bench::tools {
namespace {

struct TableOptions {
  std::vector<std::string> bench;
  std::vector<std::string> baselines;
  std::string candidate = "candidate";
  std::string metric = "event_ms";
  std::string out;  // empty: stdout
};

NamedDocument read_document(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  try {
    return {path, nlohmann::ordered_json::parse(in)};
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(path + ": not valid JSON: " + e.what());
  }
}

std::vector<NamedDocument> read_documents(const std::vector<std::string>& paths) {
  std::vector<NamedDocument> docs;
  for (const auto& path : paths) docs.push_back(read_document(path));
  return docs;
}

void write_text(const std::string& text, const std::string& path) {
  if (path.empty()) {
    std::cout << text;
    return;
  }
  std::ofstream out(path);
  if (!(out << text)) throw std::runtime_error("cannot write " + path);
}

void run_table(const TableOptions& o) {
  const auto table =
      make_baseline_table(read_documents(o.bench), read_documents(o.baselines), o.candidate, o.metric);
  write_text(table.dump(1) + "\n", o.out);
}

}  // namespace

void add_table_command(CLI::App& app) {
  auto options = std::make_shared<TableOptions>();
  CLI::App* table = app.add_subcommand(
      "table", "The candidate's speedup against every baseline, per scenario and as geomeans (JSON)");
  table->add_option("--bench", options->bench, "attngate_bench --benchmark_out JSON (repeatable)")
      ->type_name("FILE");
  table->add_option("--baselines", options->baselines, "attngate_baselines.py JSON (repeatable)")
      ->type_name("FILE");
  table->add_option("--candidate", options->candidate, "the kernel whose speedup is reported")
      ->capture_default_str();
  table->add_option("--metric", options->metric, "the time compared")
      ->check(CLI::IsMember({"event_ms", "kernel_ms"}))
      ->capture_default_str();
  table->add_option("--out", options->out, "output file (default: stdout)")->type_name("FILE");
  table->callback([options] { run_table(*options); });
}

}  // namespace attngate::bench::tools
