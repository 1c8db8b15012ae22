// attngate_stats merge: the shards of one comparison as one comparison document.
#include <memory>
#include <stdexcept>

#include "attngate/bench/comparison_merge.hpp"
#include "commands.hpp"
#include "read_document.hpp"

namespace attngate::bench::tools {

namespace {

struct MergeOptions {
  std::vector<std::string> shards;
  std::string out;
};

void run_merge(const MergeOptions& o) {
  std::vector<NamedComparison> shards;
  for (const auto& path : o.shards) shards.push_back({path, read_comparison_file(path)});
  write_json_file(merge_comparisons(shards), o.out);
}

}  // namespace

void add_merge_command(CLI::App& app) {
  auto o = std::make_shared<MergeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "merge", "comparison shards (attngate_bench --shard=i/N --compare_out) -> one attngate.comparison/1; "
               "what does not fit is listed under `problems`");
  cmd->add_option("shards", o->shards, "the shard files")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "where to write (default: stdout)");
  cmd->callback([o] { run_merge(*o); });
}

}  // namespace attngate::bench::tools
