#pragma once
// One hash for the whole candidate folder (kernels/candidate/), so that what the gate measured, what
// was built and what `attngate commit` commits can be compared. The same definition is implemented
// in cmake/candidate_tree_hash.cmake for the build; the unit tests check that the two agree.
//
// tree sha256 = sha256 over one line per regular file below the folder (recursively; symlinks to
// files are read through, symlinked folders are not entered), sorted bytewise by the path relative
// to the folder with '/' separators:  "<lowercase hex sha256 of the file's bytes>  <path>\n".
#include <filesystem>
#include <string>
#include <vector>

namespace attngate::hooks {

struct TreeFile {
  std::string path;    // relative to the folder, '/' separators
  std::string sha256;  // of the file's bytes
};
using TreeListing = std::vector<TreeFile>;  // sorted by path

// Throws std::runtime_error when the folder or a file in it cannot be read.
TreeListing list_tree(const std::filesystem::path& dir);
std::string tree_sha256(const TreeListing& listing);  // sorts a copy, so any order is accepted
std::string candidate_tree_sha256(const std::filesystem::path& dir);

// The first file (in path order) that differs between two listings, e.g. "candidate.cu changed",
// "extra.cuh added"; empty when they are the same.
std::string first_tree_difference(const TreeListing& before, const TreeListing& after);

}  // namespace attngate::hooks
