#include "attngate/hooks/version_store.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <optional>
#include <sstream>

#include "attngate/gate/candidate_tree.hpp"
#include "attngate/gate/git.hpp"
#include "attngate/hooks/git_commits.hpp"
#include "attngate/gate/process.hpp"
#include "attngate/hooks/scratch_dir.hpp"
#include "attngate/gate/digest.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;

namespace {

std::string dir_rel(const Context& ctx) { return fs::relative(candidate_dir(ctx), ctx.repo).generic_string(); }

// `p` relative to the repository when it lies inside it, else absolute.
std::string shown_path(const Context& ctx, const fs::path& p) {
  std::error_code ec;
  const std::string rel = fs::relative(p, ctx.repo, ec).generic_string();
  return ec || rel.empty() || rel.rfind("..", 0) == 0 ? p.string() : rel;
}

bool write_bytes(const fs::path& file, const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << bytes;
  return static_cast<bool>(out.flush());
}

// Copies the listed files of `from` into `to`; "" or why not.
std::string copy_listed(const fs::path& from, const TreeListing& listing, const fs::path& to) {
  std::uintmax_t total = 0;
  for (const auto& f : listing) {
    std::error_code ec;
    total += fs::file_size(from / f.path, ec);
    if (ec) return "cannot read " + (from / f.path).string();
  }
  if (total > kMaxKeptBytes) return from.string() + " holds " + std::to_string(total) + " bytes, more than the store keeps";
  for (const auto& f : listing) {
    auto bytes = read_file(from / f.path);
    if (!bytes || !write_bytes(to / f.path, *bytes)) return "cannot copy " + (from / f.path).string();
  }
  return {};
}

RunResult git(const fs::path& repo, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", repo.string()});
  return run_process(args);
}

// Both sides written under a temporary folder, compared by git diff --no-index.
SourceDiff diff_files(const FileMap& a, const std::string& la, const FileMap& b, const std::string& lb) {
  SourceDiff d;
  std::optional<ScratchDir> scratch;
  try {
    scratch.emplace("attngate_diff");
  } catch (const std::exception& e) {
    return {false, {}, {}, {}, e.what()};
  }
  const fs::path& tmp = scratch->path();
  bool ok = true;
  for (const auto& [side, label] : {std::pair{&a, la}, std::pair{&b, lb}}) {
    fs::create_directories(tmp / label);
    for (const auto& [path, bytes] : *side) ok = ok && write_bytes(tmp / label / path, bytes);
  }
  RunOptions o;
  o.cwd = tmp;
  auto r = ok ? run_process({"git", "diff", "--no-index", "--no-color", "--", la, lb}, o) : RunResult{};
  if (!ok) return {false, {}, {}, {}, "cannot write the versions' files to compare"};
  if (r.exit_code != 0 && r.exit_code != 1) return {false, {}, {}, {}, "git diff --no-index failed: " + r.err};
  d.available = true;
  d.text = r.out;
  return d;
}

std::string source_name(const Context& ctx, const VersionSource& s) {
  return s.from == "store" ? shown_path(ctx, s.dir) : "git commit " + s.commit.substr(0, 12);
}

}  // namespace

fs::path versions_root(const fs::path& lineage) {
  const fs::path root = lineage.parent_path() / "versions";
  // Another lineage file gets its own subfolder, named so that it cannot be a version's ("3.d", not "3").
  return lineage.filename() == "lineage.jsonl" ? root : root / (lineage.filename().string() + ".d");
}

fs::path version_dir(const fs::path& lineage, int version) { return versions_root(lineage) / std::to_string(version); }

std::unique_ptr<PendingVersion> PendingVersion::take(const fs::path& folder, const fs::path& lineage,
                                                     const std::string& tree_sha256, std::string& why) {
  static std::atomic<int> counter{0};
  const fs::path dir = versions_root(lineage) / (".pending-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
  std::unique_ptr<PendingVersion> p(new PendingVersion(dir, lineage));
  try {
    fs::create_directories(dir);
    why = copy_listed(folder, list_tree(folder), dir);
    if (why.empty() && !tree_sha256.empty() && candidate_tree_sha256(dir) != tree_sha256)
      why = folder.string() + " changed while it was copied";
  } catch (const std::exception& e) {
    why = e.what();
  }
  return why.empty() ? std::move(p) : nullptr;  // a dropped copy removes its folder
}

std::string PendingVersion::keep(int version) {
  const fs::path target = version_dir(lineage_, version);
  std::error_code ec;
  fs::remove_all(target, ec);
  fs::rename(dir_, target, ec);
  if (ec) return "cannot keep " + dir_.string() + " as " + target.string() + ": " + ec.message();
  kept_ = true;
  return {};
}

PendingVersion::~PendingVersion() {
  std::error_code ec;
  if (!kept_) fs::remove_all(dir_, ec);
}

// A kept folder is never larger than the store keeps (copy_listed): a larger one is not read.
std::optional<FileMap> read_folder(const fs::path& dir) {
  FileMap files;
  try {
    const TreeListing listing = list_tree(dir);
    std::uintmax_t total = 0;
    for (const auto& f : listing) {
      std::error_code ec;
      total += fs::file_size(dir / f.path, ec);
      if (ec || total > kMaxKeptBytes) return std::nullopt;
    }
    for (const auto& f : listing) {
      auto bytes = read_file(dir / f.path);
      if (!bytes) return std::nullopt;
      files[f.path] = *bytes;
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return files;
}

std::optional<FileMap> git_folder(const fs::path& repo, const std::string& commit, const std::string& rel) {
  if (commit.empty()) return std::nullopt;
  auto ls = git(repo, {"ls-tree", "-r", "-z", commit, "--", rel});
  if (ls.exit_code != 0) return std::nullopt;
  FileMap files;
  std::istringstream entries(ls.out);
  for (std::string e; std::getline(entries, e, '\0');) {
    auto tab = e.find('\t');  // "<mode> <type> <object>\t<path>"
    std::string mode, type, object;
    std::istringstream(e.substr(0, tab)) >> mode >> type >> object;
    if (tab == std::string::npos || type != "blob" || e.size() <= tab + rel.size() + 2) return std::nullopt;
    auto blob = git(repo, {"cat-file", "blob", object});
    if (blob.exit_code != 0) return std::nullopt;
    files[e.substr(tab + 1 + rel.size() + 1)] = blob.out;
  }
  return files;
}

std::string files_tree_sha256(const FileMap& files) {
  TreeListing listing;
  for (const auto& [path, bytes] : files) listing.push_back({path, sha256_hex(bytes)});
  return tree_sha256(listing);
}

VersionSource version_source(const Context& ctx, const Record& r) {
  VersionSource s;
  const std::string tree = r.candidate_tree_sha256;
  auto matches = [&](const FileMap& f) { return tree.empty() || files_tree_sha256(f) == tree; };
  const fs::path dir = version_dir(ctx.lineage, r.version);
  if (auto f = fs::exists(dir) ? read_folder(dir) : std::nullopt; f && matches(*f))
    return {f, "store", dir, {}, {}};
  if (auto f = git_folder(ctx.repo, r.git.commit, dir_rel(ctx));
      f && !f->empty() && (tree.empty() ? !r.git.candidate_dirty : files_tree_sha256(*f) == tree))
    return {f, "git", {}, r.git.commit, {}};
  // `attngate commit` committed the version after it was measured: the commit naming it.
  for (const auto& c : tree.empty() ? std::vector<CommittedVersion>{} : git_committed_versions(ctx.repo))
    if (auto f = c.version == r.version ? git_folder(ctx.repo, c.commit, dir_rel(ctx)) : std::nullopt;
        f && files_tree_sha256(*f) == tree)
      return {f, "git", {}, c.commit, {}};
  s.why_not = "version " + std::to_string(r.version) + "'s candidate folder is not in " + shown_path(ctx, dir) +
              (r.git.commit.empty() ? std::string(" and no commit is recorded")
                                    : " and differs from " + dir_rel(ctx) + " at its commit " + r.git.commit.substr(0, 12) +
                                          " (uncommitted changes) and in every commit attngate made of it");
  return s;
}

// A path as one shell word: single-quoted, with any single quote closed, escaped and reopened.
std::string shell_quoted(const std::string& path) {
  std::string out = "'";
  for (char c : path) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string restore_command(const Context& ctx, const Record& r) {
  const VersionSource s = version_source(ctx, r);
  const std::string cand = shell_quoted(shown_path(ctx, candidate_dir(ctx)));
  // Removed first in both cases: files added since that version would otherwise stay in the folder.
  if (s.from == "git") return "rm -r " + cand + " && git checkout " + s.commit.substr(0, 12) + " -- " + cand;
  if (s.from == "store") return "rm -r " + cand + " && cp -r " + shell_quoted(shown_path(ctx, s.dir)) + " " + cand;
  return {};
}

SourceDiff source_diff(const Context& ctx, const Record& a, const Record& b) {
  const VersionSource sa = version_source(ctx, a), sb = version_source(ctx, b);
  if (!sa.files || !sb.files) {
    std::string why = sa.files ? sb.why_not : sb.files ? sa.why_not : sa.why_not + "; " + sb.why_not;
    return {false, {}, {}, {}, "source diff unavailable: " + why};
  }
  if (!on_path("git")) return {false, {}, {}, {}, "source diff unavailable: git is not on PATH"};
  const std::string la = "v" + std::to_string(a.version);
  const std::string lb = "v" + std::to_string(b.version) + (a.version == b.version ? ".b" : "");
  SourceDiff d = diff_files(*sa.files, la, *sb.files, lb);
  d.from_a = source_name(ctx, sa);
  d.from_b = source_name(ctx, sb);
  return d;
}

}  // namespace attngate::hooks
