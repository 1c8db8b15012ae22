#include "attngate/gate/harness.hpp"
#include "attngate/gate/git.hpp"

#include <algorithm>
#include <set>

#include "attngate/gate/digest.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;

namespace {

bool under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

bool in_harness(const std::string& rel, const std::vector<std::string>& excluded) {
  for (const auto& e : excluded)
    if (under(rel, e)) return false;
  for (const auto& r : harness_roots())
    if (under(rel, r)) return true;
  return false;
}

std::vector<std::string> pathspecs(const std::vector<std::string>& excluded) {
  std::vector<std::string> out = {"--"};
  for (const auto& r : harness_roots()) out.push_back(":(top,literal)" + r);
  for (const auto& e : excluded) out.push_back(":(top,exclude,literal)" + e);
  return out;
}

std::string trim_slashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  while (s.rfind("./", 0) == 0) s.erase(0, 2);
  return s;
}

}  // namespace

const std::vector<std::string>& harness_roots() {
  static const std::vector<std::string> roots = {"CMakeLists.txt", "CMakePresets.json", "cmake",   "scenarios",
                                                 "reference",      "verify",            "bench",   "kernels",
                                                 "agent_hooks"};
  return roots;
}

HarnessCheck check_harness(const fs::path& repo, const std::vector<std::string>& excluded_in) {
  std::vector<std::string> excluded;
  for (const auto& e : excluded_in)
    if (!trim_slashes(e).empty()) excluded.push_back(trim_slashes(e));
  HarnessCheck out;
  std::set<std::string> files;

  const bool has_head = run_git(repo, {"rev-parse", "--verify", "-q", "HEAD"}).exit_code == 0;
  if (!has_head) {
    auto dir = run_git(repo, {"rev-parse", "--git-dir"});
    std::string said = dir.err.substr(0, dir.err.find('\n'));  // e.g. git's "dubious ownership" refusal
    out.why = dir.exit_code == 0 ? "the repository has no commit to compare the harness with"
                                 : repo.string() + " is not a usable git repository (" +
                                       (said.empty() ? "git failed" : said) +
                                       "): the harness cannot be compared with its committed version";
    // Still record what was judged with: every file under the harness folders.
    for (const auto& r : harness_roots()) {
      std::error_code ec;
      fs::path p = repo / r;
      if (fs::is_regular_file(p, ec)) {
        files.insert(r);
      } else if (fs::is_directory(p, ec)) {
        for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec))
          if (it->is_regular_file(ec)) {
            std::string rel = fs::relative(it->path(), repo, ec).generic_string();
            if (in_harness(rel, excluded)) files.insert(rel);
          }
      }
    }
  } else {
    // Staged, unstaged, deleted and untracked (not ignored) changes against HEAD; git status
    // compares contents, so a copied tree with fresh timestamps reads as unchanged.
    std::vector<std::string> args = {"status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"};
    auto specs = pathspecs(excluded);
    args.insert(args.end(), specs.begin(), specs.end());
    auto status = run_git(repo, args);
    if (status.exit_code != 0) {
      out.why = "git status failed: " + status.err;
    } else {
      out.verified = true;
      for (const auto& entry : split_on(status.out, '\0', false)) {
        if (entry.size() < 4) continue;
        std::string rel = entry.substr(3);
        if (in_harness(rel, excluded)) out.modified.push_back(rel);
      }
      std::sort(out.modified.begin(), out.modified.end());
      out.modified.erase(std::unique(out.modified.begin(), out.modified.end()), out.modified.end());
    }
    args = {"ls-files", "-z", "--cached", "--others", "--exclude-standard"};
    args.insert(args.end(), specs.begin(), specs.end());
    auto listed = run_git(repo, args);
    for (const auto& rel : split_on(listed.out, '\0', false))
      if (in_harness(rel, excluded)) files.insert(rel);
  }
  for (const auto& rel : files)
    if (auto sha = sha256_file(repo / rel)) out.sha256[rel] = *sha;
  return out;
}

}  // namespace attngate::hooks
