#include "attngate/gate/git.hpp"

#include <algorithm>

#include "attngate/gate/process.hpp"

namespace attngate::hooks {
RunResult run_git(const std::filesystem::path& repo, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", repo.string()});
  return run_process(args);  // output captured
}

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t\r\n");
  auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

GitState git_state(const std::filesystem::path& repo, const std::string& candidate_rel) {
  GitState s;
  s.is_repo = run_git(repo, {"rev-parse", "--git-dir"}).exit_code == 0;
  if (!s.is_repo) return s;
  auto head = run_git(repo, {"rev-parse", "--verify", "-q", "HEAD"});
  if (head.exit_code == 0) s.commit = trim(head.out);
  auto status = run_git(repo, {"status", "--porcelain", "--untracked-files=no"});
  s.dirty = status.exit_code == 0 && !trim(status.out).empty();
  auto cand = run_git(repo, {"status", "--porcelain", "--untracked-files=all", "--", candidate_rel});
  s.candidate_dirty = cand.exit_code != 0 || !trim(cand.out).empty() || s.commit.empty();
  return s;
}

std::vector<std::string> split_on(const std::string& text, char delim, bool keep_empty) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find(delim, start), text.size());
    if (keep_empty || end > start) out.emplace_back(text, start, end - start);
    start = end + 1;
  }
  return out;
}

}  // namespace attngate::hooks
