#pragma once
// Churn: how much of what a version adds is text that the lineage already deleted once.
#include <string>
#include <vector>

#include "attngate/hooks/lineage.hpp"

namespace attngate::hooks {

std::vector<std::string> split_lines(const std::string& text);
bool whitespace_only(const std::string& line);

struct LineDiff {
  std::vector<std::string> added;
  std::vector<std::string> deleted;
};
// Lines git's minimal diff (`git diff --no-index --diff-algorithm=minimal`) deletes from a and adds
// in b. Throws std::runtime_error when git cannot be run.
LineDiff diff_lines(const std::vector<std::string>& a, const std::vector<std::string>& b);

// sources: the candidate's successive sources in lineage order, the current version last. Lines
// added by the last step that equal (byte for byte) a line deleted by an earlier step count as
// re-added; whitespace-only lines count in neither.
ChurnFigure compute_churn(const std::vector<std::string>& sources);

}  // namespace attngate::hooks
