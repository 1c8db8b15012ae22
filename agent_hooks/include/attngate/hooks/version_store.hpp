#pragma once
// The candidate folder of every evaluated version, kept so that `attngate diff` works for
// uncommitted versions and the supervisor can name how to restore an elite:
// <lineage's folder>/versions/<version>/ (for a lineage file not named lineage.jsonl,
// versions/<file name>/<version>/), written through a rename once the version number is known.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "attngate/hooks/commands.hpp"

namespace attngate::hooks {

using FileMap = std::map<std::string, std::string>;  // path relative to the folder ('/') -> bytes

std::filesystem::path versions_root(const std::filesystem::path& lineage);
std::filesystem::path version_dir(const std::filesystem::path& lineage, int version);

// Folders larger than this are not kept (the candidate is a few source files).
inline constexpr std::uintmax_t kMaxKeptBytes = 8u << 20;

// A copy of the candidate folder taken before the build, kept as version N once the lineage has
// numbered the evaluation; removed when it is not kept (an environment failure, an error).
class PendingVersion {
 public:
  // nullptr (and `why`) when the folder cannot be copied, is too large, or the copy is not the tree
  // `tree_sha256` (the folder changed while it was copied).
  static std::unique_ptr<PendingVersion> take(const std::filesystem::path& folder, const std::filesystem::path& lineage,
                                              const std::string& tree_sha256, std::string& why);
  // Renames the copy to versions/<version> (replacing one left by an earlier lineage); returns "" or why not.
  std::string keep(int version);
  ~PendingVersion();
  PendingVersion(const PendingVersion&) = delete;
  PendingVersion& operator=(const PendingVersion&) = delete;

 private:
  PendingVersion(std::filesystem::path dir, std::filesystem::path lineage)
      : dir_(std::move(dir)), lineage_(std::move(lineage)) {}
  std::filesystem::path dir_, lineage_;
  bool kept_ = false;
};

// Every regular file below dir; nullopt when it cannot be read.
std::optional<FileMap> read_folder(const std::filesystem::path& dir);
// The files of dir_rel at a commit (git ls-tree and cat-file); nullopt when git cannot list them.
std::optional<FileMap> git_folder(const std::filesystem::path& repo, const std::string& commit, const std::string& dir_rel);
std::string files_tree_sha256(const FileMap& files);

// A version's candidate folder: the versions store, else its git commit when the folder there is the
// tree the record names; `from` says which, `why_not` why neither.
struct VersionSource {
  std::optional<FileMap> files;
  std::string from;  // "store" or "git"
  std::filesystem::path dir;  // store: the kept folder
  std::string commit;         // git: the commit
  std::string why_not;
};
VersionSource version_source(const Context& ctx, const Record& r);

// A shell command that puts the version's folder back in place of the candidate folder, else "".
std::string restore_command(const Context& ctx, const Record& r);

// A unified diff (git diff --no-index) of two versions' candidate folders.
struct SourceDiff {
  bool available = false;
  std::string from_a, from_b;  // where each side came from
  std::string text;            // the diff; empty when the folders are the same
  std::string why;             // why unavailable
};
SourceDiff source_diff(const Context& ctx, const Record& a, const Record& b);

}  // namespace attngate::hooks
