#include "attngate/hooks/git_commits.hpp"

#include <charconv>

namespace attngate::hooks {

std::optional<std::filesystem::path> git_toplevel(const std::filesystem::path& dir) {
  auto r = run_git(dir, {"rev-parse", "--show-toplevel"});
  if (r.exit_code != 0) return std::nullopt;
  return std::filesystem::path(trim(r.out));
}

std::optional<std::string> git_show(const std::filesystem::path& repo, const std::string& commit,
                                    const std::string& rel_path) {
  if (commit.empty()) return std::nullopt;
  auto r = run_git(repo, {"show", commit + ":" + rel_path});
  if (r.exit_code != 0) return std::nullopt;
  return r.out;
}

std::vector<CommittedVersion> git_committed_versions(const std::filesystem::path& repo) {
  std::vector<CommittedVersion> out;
  if (run_git(repo, {"rev-parse", "--verify", "-q", "HEAD"}).exit_code != 0) return out;
  // git parses the trailers; unit and record separators keep the fields apart.
  std::string format = "--format=%H";
  for (const char* key : {"Geomean", "Baseline", "Version", "CI", "Candidate-Sha256", "Candidate-Tree-Sha256", "Receipt"})
    format += std::string("%x1f%(trailers:key=Attngate-") + key + ",valueonly,separator=%x2C)";
  auto r = run_git(repo, {"log", format + "%x1e", "HEAD"});
  if (r.exit_code != 0) return out;
  for (const auto& rec : split_on(r.out, '\x1e', true)) {
    auto f = split_on(trim(rec), '\x1f', true);
    if (f.size() < 2 || trim(f[1]).empty()) continue;
    f.resize(8);  // split_on keeps no empty piece after the last separator: a commit without a receipt
    for (auto& field : f) field = trim(field);
    CommittedVersion v;
    v.commit = f[0];
    v.trailers = {f[3], f[1], f[4], f[2], f[5], f[6]};
    v.receipt = f[7];
    const std::string &g = v.trailers.geomean, &ver = v.trailers.version;
    if (std::from_chars(g.data(), g.data() + g.size(), v.geomean).ec != std::errc{}) continue;
    std::from_chars(ver.data(), ver.data() + ver.size(), v.version);
    out.push_back(v);
  }
  return out;
}

}  // namespace attngate::hooks
