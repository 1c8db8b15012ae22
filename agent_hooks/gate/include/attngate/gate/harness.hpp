#pragma once
// Tamper evidence for the gate: the harness (everything the gate's verdict rests on, i.e. every
// source but the kernel under test) compared with its committed version, and the SHA-256 of each
// of its files as they were when the gate judged.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attngate::hooks {

// Top-level files and folders of the harness, relative to the repository root.
const std::vector<std::string>& harness_roots();

struct HarnessCheck {
  bool verified = false;  // compared with git's HEAD; false outside a git repository (why says so)
  std::string why;
  std::vector<std::string> modified;         // differ from HEAD: changed, staged, deleted, untracked
  std::map<std::string, std::string> sha256;  // every harness file present, relative path -> hex
};

// `excluded`: folders (relative, e.g. "kernels/candidate") that belong to the kernel under test.
HarnessCheck check_harness(const std::filesystem::path& repo, const std::vector<std::string>& excluded);

}  // namespace attngate::hooks
