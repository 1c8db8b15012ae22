#pragma once
// The few git facts the lineage and `attngate commit` need, read through the git CLI.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attngate/gate/process.hpp"

namespace attngate::hooks {

// `git -C repo args...`, its output captured.
RunResult run_git(const std::filesystem::path& repo, std::vector<std::string> args);

std::optional<std::filesystem::path> git_toplevel(const std::filesystem::path& dir);

struct GitState {
  bool is_repo = false;
  std::string commit;            // HEAD, empty before the first commit
  bool dirty = false;            // tracked files differ from HEAD
  bool candidate_dirty = false;  // the candidate differs from HEAD (or is untracked)
};
GitState git_state(const std::filesystem::path& repo, const std::string& candidate_rel);

// The file's content at a commit; nullopt when git cannot show it.
std::optional<std::string> git_show(const std::filesystem::path& repo, const std::string& commit,
                                    const std::string& rel_path);

// A commit made by `attngate commit`, recognised by its trailers. The *_text fields and the rest
// are the trailers' values as written, for whoever checks the receipt (agent_hooks' receipt.hpp).
struct CommittedVersion {
  std::string commit;
  double geomean = 0;
  std::string baseline;
  int version = 0;
  std::string version_text, geomean_text, ci, candidate_sha256, candidate_tree_sha256, receipt;
};
// Every commit reachable from HEAD that carries an Attngate-Geomean trailer (newest first).
std::vector<CommittedVersion> git_committed_versions(const std::filesystem::path& repo);

// `text` cut at every `delim` (git's NUL-separated -z output, or lines); empty pieces are kept
// only when `keep_empty` (a file's blank lines), never a piece after a final delimiter.
std::vector<std::string> split_on(const std::string& text, char delim, bool keep_empty);

}  // namespace attngate::hooks
