#include "attngate/gate/candidate_tree.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "attngate/gate/digest.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;

TreeListing list_tree(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw std::runtime_error("cannot hash " + dir.string() + ": not a folder");
  TreeListing out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;  // follows a symlink to a file; folders are walked
    auto sha = sha256_file(entry.path());
    if (!sha) throw std::runtime_error("cannot read " + entry.path().string());
    out.push_back({fs::relative(entry.path(), dir).generic_string(), *sha});
  }
  std::sort(out.begin(), out.end(), [](const TreeFile& a, const TreeFile& b) { return a.path < b.path; });
  return out;
}

std::string tree_sha256(const TreeListing& listing) {
  TreeListing sorted = listing;
  std::sort(sorted.begin(), sorted.end(), [](const TreeFile& a, const TreeFile& b) { return a.path < b.path; });
  std::string text;
  for (const auto& f : sorted) text += f.sha256 + "  " + f.path + "\n";
  return sha256_hex(text);
}

std::string candidate_tree_sha256(const fs::path& dir) { return tree_sha256(list_tree(dir)); }

std::string first_tree_difference(const TreeListing& before, const TreeListing& after) {
  std::map<std::string, std::string> a, b;
  for (const auto& f : before) a[f.path] = f.sha256;
  for (const auto& f : after) b[f.path] = f.sha256;
  std::map<std::string, std::string> changes;
  for (const auto& [path, sha] : a) {
    auto it = b.find(path);
    if (it == b.end()) changes[path] = path + " removed";
    else if (it->second != sha) changes[path] = path + " changed";
  }
  for (const auto& [path, sha] : b)
    if (!a.count(path)) changes[path] = path + " added";
  return changes.empty() ? std::string{} : changes.begin()->second;
}

}  // namespace attngate::hooks
