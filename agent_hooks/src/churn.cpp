#include "attngate/hooks/churn.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace attngate::hooks {
namespace {

// Above this many table cells the diff falls back to a multiset difference, which can only
// overstate a move as a delete plus an add; candidates are a few thousand lines at most.
constexpr std::size_t kMaxLcsCells = std::size_t{1} << 24;

LineDiff multiset_diff(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::map<std::string, long> count;
  for (const auto& l : a) ++count[l];
  LineDiff d;
  for (const auto& l : b) {
    auto it = count.find(l);
    if (it != count.end() && it->second > 0) --it->second;
    else d.added.push_back(l);
  }
  std::map<std::string, long> in_b;
  for (const auto& l : b) ++in_b[l];
  for (const auto& l : a) {
    auto it = in_b.find(l);
    if (it != in_b.end() && it->second > 0) --it->second;
    else d.deleted.push_back(l);
  }
  return d;
}

}  // namespace

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.emplace_back(text, start, end - start);
    start = end + 1;
  }
  return lines;
}

bool whitespace_only(const std::string& line) {
  return line.find_first_not_of(" \t\r\f\v") == std::string::npos;
}

LineDiff diff_lines(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  std::size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  std::vector<std::string> am(a.begin() + static_cast<long>(pre), a.end() - static_cast<long>(suf));
  std::vector<std::string> bm(b.begin() + static_cast<long>(pre), b.end() - static_cast<long>(suf));
  const std::size_t n = am.size(), m = bm.size();
  if ((n + 1) * (m + 1) > kMaxLcsCells) return multiset_diff(am, bm);

  // Lines become small integers so the table compares ints, not strings.
  std::unordered_map<std::string, std::uint32_t> ids;
  auto id_of = [&](const std::string& l) { return ids.emplace(l, static_cast<std::uint32_t>(ids.size())).first->second; };
  std::vector<std::uint32_t> x(n), y(m);
  for (std::size_t i = 0; i < n; ++i) x[i] = id_of(am[i]);
  for (std::size_t j = 0; j < m; ++j) y[j] = id_of(bm[j]);

  // lcs[i][j]: the LCS length of x[i..] and y[j..], so the walk below goes forward.
  std::vector<std::uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return lcs[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) = x[i] == y[j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));

  LineDiff d;
  std::size_t i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] == y[j]) {
      ++i;
      ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      d.deleted.push_back(am[i++]);
    } else {
      d.added.push_back(bm[j++]);
    }
  }
  while (i < n) d.deleted.push_back(am[i++]);
  while (j < m) d.added.push_back(bm[j++]);
  return d;
}

ChurnFigure compute_churn(const std::vector<std::string>& sources) {
  ChurnFigure c;
  if (sources.size() < 2) return c;
  std::unordered_set<std::string> deleted_earlier;
  for (std::size_t k = 1; k + 1 < sources.size(); ++k) {
    for (auto& l : diff_lines(split_lines(sources[k - 1]), split_lines(sources[k])).deleted)
      if (!whitespace_only(l)) deleted_earlier.insert(std::move(l));
  }
  auto last = diff_lines(split_lines(sources[sources.size() - 2]), split_lines(sources.back()));
  for (const auto& l : last.added) {
    if (whitespace_only(l)) continue;
    ++c.added;
    if (deleted_earlier.count(l)) ++c.readded;
  }
  return c;
}

}  // namespace attngate::hooks
