// The subcommands of attngate_stats (stats_main.cpp), one file each.
#pragma once

#include <CLI/CLI.hpp>

namespace attngate::bench::tools {

void add_table_command(CLI::App& app);  // table_command.cpp: candidate against baselines, per scenario and geomean
void add_merge_command(CLI::App& app);  // merge_command.cpp: comparison shards into one comparison
void add_judge_command(CLI::App& app);  // judge_command.cpp: two comparison runs, scenario by scenario

}  // namespace attngate::bench::tools
