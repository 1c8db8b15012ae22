#pragma once
// The git facts the verdict needs (the commit, the tree's state), read through the git CLI;
// what only the agent side needs is agent_hooks' git_commits.hpp.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attngate/gate/process.hpp"

namespace attngate::hooks {

// `git -C repo args...`, its output captured.
RunResult run_git(const std::filesystem::path& repo, std::vector<std::string> args);

struct GitState {
  bool is_repo = false;
  std::string commit;            // HEAD, empty before the first commit
  bool dirty = false;            // tracked files differ from HEAD
  bool candidate_dirty = false;  // the candidate differs from HEAD (or is untracked)
};
GitState git_state(const std::filesystem::path& repo, const std::string& candidate_rel);

// `s` without leading and trailing blanks and line ends (git's output).
std::string trim(std::string s);

// `text` cut at every `delim` (git's NUL-separated -z output, or lines); empty pieces are kept
// only when `keep_empty` (a file's blank lines), never a piece after a final delimiter.
std::vector<std::string> split_on(const std::string& text, char delim, bool keep_empty);

}  // namespace attngate::hooks
