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

// The Attngate trailers `attngate commit` writes, as written (receipt.hpp signs exactly these).
struct CommitTrailers {
  std::string version, geomean, ci, baseline, candidate_sha256, candidate_tree_sha256;
};

// A commit made by `attngate commit`, recognised by its trailers; geomean and version parsed.
struct CommittedVersion {
  std::string commit;
  double geomean = 0;
  int version = 0;
  CommitTrailers trailers;
  std::string receipt;  // Attngate-Receipt, empty on commits made before it existed
};
// Every commit reachable from HEAD that carries an Attngate-Geomean trailer (newest first).
std::vector<CommittedVersion> git_committed_versions(const std::filesystem::path& repo);

}  // namespace attngate::hooks
