#pragma once
// The git facts only the agent side needs (the commits `attngate commit` made, a file at a
// commit, the repository's top), read through the gate's run_git.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attngate/gate/git.hpp"

namespace attngate::hooks {

std::optional<std::filesystem::path> git_toplevel(const std::filesystem::path& dir);

// The file's content at a commit; nullopt when git cannot show it.
std::optional<std::string> git_show(const std::filesystem::path& repo, const std::string& commit,
                                    const std::string& rel_path);

// A commit made by `attngate commit`, recognised by its trailers. The *_text fields and the rest
// are the trailers' values as written, for whoever checks the receipt (receipt.hpp).
struct CommittedVersion {
  std::string commit;
  double geomean = 0;
  std::string baseline;
  int version = 0;
  std::string version_text, geomean_text, ci, candidate_sha256, candidate_tree_sha256, receipt;
};
// Every commit reachable from HEAD that carries an Attngate-Geomean trailer (newest first).
std::vector<CommittedVersion> git_committed_versions(const std::filesystem::path& repo);

}  // namespace attngate::hooks
