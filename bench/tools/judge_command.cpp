// attngate_stats judge: a comparison run against a reference run, scenario by scenario.
#include <memory>
#include <stdexcept>

#include "attngate/bench/comparison_merge.hpp"
#include "commands.hpp"
#include "read_document.hpp"

namespace attngate::bench::tools {

namespace {

struct JudgeOptions {
  std::string reference, run, out;
  double threshold = 0.02;
};

void run_judge(const JudgeOptions& o) {
  write_json_file(compare_runs(read_comparison_file(o.reference), read_comparison_file(o.run), o.threshold), o.out);
}

}  // namespace

void add_judge_command(CLI::App& app) {
  auto o = std::make_shared<JudgeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "judge", "each scenario of RUN against REFERENCE (both attngate.comparison/1): SAME / FASTER / SLOWER / "
               "AMBIGUOUS -> attngate.run_comparison/1");
  cmd->add_option("reference", o->reference, "the reference comparison")->required()->check(CLI::ExistingFile);
  cmd->add_option("run", o->run, "the comparison to judge")->required()->check(CLI::ExistingFile);
  cmd->add_option("--threshold", o->threshold, "the change that counts (0.02: 2%)")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--out", o->out, "where to write (default: stdout)");
  cmd->callback([o] { run_judge(*o); });
}

}  // namespace attngate::bench::tools
