// attngate_stats: the statistics of bench/ (stats.hpp) for tools outside the C++ harness. The
// Python scripts (bench/python, ci/) render and drive; the figures they print come from here, so
// there is one implementation of every geomean, interval and verdict.
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"attngate_stats: geomeans, intervals and verdicts over attngate's result documents"};
  app.require_subcommand(1);
  attngate::bench::tools::add_table_command(app);
  attngate::bench::tools::add_merge_command(app);
  attngate::bench::tools::add_judge_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "attngate_stats: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
