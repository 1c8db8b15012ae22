#include "attngate/hooks/churn.hpp"
#include "attngate/gate/git.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <unordered_set>

#include "attngate/gate/process.hpp"
#include "attngate/hooks/scratch_dir.hpp"

namespace attngate::hooks {
namespace {

namespace fs = std::filesystem;

void write_lines(const fs::path& file, const std::vector<std::string>& lines) {
  std::ofstream out(file, std::ios::binary);
  for (const auto& l : lines) out << l << '\n';
  if (!out) throw std::runtime_error("churn: cannot write " + file.string());
}

}  // namespace

std::vector<std::string> split_lines(const std::string& text) { return split_on(text, '\n', true); }

bool whitespace_only(const std::string& line) {
  return line.find_first_not_of(" \t\r\f\v") == std::string::npos;
}

// git's minimal diff of the two texts, without context: every "-" line of its hunks deleted, every
// "+" line added (the file header comes before the first "@@").
LineDiff diff_lines(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const ScratchDir tmp("attngate_churn");
  write_lines(tmp.path() / "a", a);
  write_lines(tmp.path() / "b", b);
  RunOptions o;
  o.cwd = tmp.path();
  const RunResult r = run_process({"git", "diff", "--no-index", "--no-color", "--no-ext-diff", "--diff-algorithm=minimal",
                                   "--unified=0", "--", "a", "b"}, o);
  if (r.exit_code != 0 && r.exit_code != 1)
    throw std::runtime_error("churn: git diff --no-index failed (exit " + std::to_string(r.exit_code) + "): " + r.err);
  LineDiff d;
  bool in_hunk = false;
  for (const auto& line : split_lines(r.out)) {
    if (line.rfind("@@", 0) == 0) in_hunk = true;
    else if (in_hunk && !line.empty() && line[0] == '-') d.deleted.push_back(line.substr(1));
    else if (in_hunk && !line.empty() && line[0] == '+') d.added.push_back(line.substr(1));
  }
  return d;
}

ChurnFigure compute_churn(const std::vector<std::string>& sources) {
  ChurnFigure c;
  if (sources.size() < 2) return c;
  std::unordered_set<std::string> deleted_earlier;
  for (std::size_t k = 1; k + 1 < sources.size(); ++k) {
    for (auto& l : diff_lines(split_lines(sources[k - 1]), split_lines(sources[k])).deleted)
      if (!whitespace_only(l)) deleted_earlier.insert(std::move(l));
  }
  auto last = diff_lines(split_lines(sources[sources.size() - 2]), split_lines(sources.back()));
  for (const auto& l : last.added) {
    if (whitespace_only(l)) continue;
    ++c.added;
    if (deleted_earlier.count(l)) ++c.readded;
  }
  return c;
}

}  // namespace attngate::hooks
