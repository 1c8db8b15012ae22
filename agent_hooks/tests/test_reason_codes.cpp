// The one table of reason codes (reason_codes.hpp) against everything that names them: the
// README's table, the report's schema, and every code literal the writers of reasons use.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/gate/reason_codes.hpp"

namespace {

namespace fs = std::filesystem;
const fs::path kHooks = ATTNGATE_HOOKS_DIR_FOR_TESTS;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::set<std::string> table() {
  std::set<std::string> out;
  for (const auto& r : attngate::hooks::kReasonCodes) EXPECT_TRUE(out.insert(r.code).second) << r.code << " twice";
  return out;
}

TEST(ReasonCodes, TheReadmesTableListsExactlyTheTable) {
  const std::string readme = slurp(kHooks / "README.md");
  const auto start = readme.find("## Reason codes"), end = readme.find("\n## ", start + 1);
  ASSERT_NE(start, std::string::npos);
  const std::string section = readme.substr(start, end - start);
  std::set<std::string> listed, by_attngate;
  // A row is "| `CODE` | meaning |"; the README marks a code written by the command around the gate
  // with *attngate* at the start of its meaning ("| `BUILD_FAILED` | *attngate*: ...").
  const std::regex row(R"(\n\| `([A-Z_]+)` \|( \*attngate\*)?)");
  for (std::sregex_iterator it(section.begin(), section.end(), row), e; it != e; ++it) {
    listed.insert((*it)[1]);
    if ((*it)[2].matched) by_attngate.insert((*it)[1]);
  }
  EXPECT_EQ(listed, table());
  for (const auto& r : attngate::hooks::kReasonCodes) EXPECT_EQ(by_attngate.count(r.code) == 1, r.by_attngate) << r.code;
}

// report.json's schema and `gate --json`'s.
TEST(ReasonCodes, TheSchemasEnumerateExactlyTheTable) {
  for (const char* file : {"gate_report.schema.json", "gate_result.schema.json"}) {
    const auto schema = nlohmann::json::parse(slurp(kHooks / "schema" / file));
    const auto& code = schema.at("$defs").at("reason").at("properties").at("code");
    ASSERT_TRUE(code.contains("enum")) << file << ": " << code.dump();
    std::set<std::string> listed;
    for (const auto& c : code.at("enum")) listed.insert(c.get<std::string>());
    EXPECT_EQ(listed, table()) << file;
  }
}

// Every code literal the writers use (reasons.add, flag, fail_with, synthesized_failure, a
// reasons.push_back or a `return {"CODE", ...}` of a literal, a `code = "..."` choice) is in the table; a new one must be added there, to the README and the schema.
TEST(ReasonCodes, EveryCodeTheSourcesWriteIsInTheTable) {
  const std::regex use(
      R"re((?:reasons\.add\(|flag\(|fail_with\([^,]+,|synthesized_failure\(|reasons\.push_back\(\{|return \{)\s*"([A-Z][A-Z_]+)"|code = "([A-Z][A-Z_]+)")re");
  const auto known = table();
  int seen = 0;
  std::vector<fs::path> sources;
  for (const fs::path& dir : {kHooks / "src", kHooks / "gate" / "src"})
    for (const auto& f : fs::directory_iterator(dir)) sources.push_back(f.path());
  for (const fs::path& f : sources) {
    const std::string text = slurp(f);
    for (std::sregex_iterator it(text.begin(), text.end(), use), e; it != e; ++it) {
      const std::string c = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
      ++seen;
      EXPECT_TRUE(known.count(c)) << f.filename() << ": " << c;
    }
  }
  EXPECT_GT(seen, 30);  // the scan found the writers
}

TEST(ReasonCodes, AnUnknownCodeIsAProgrammingError) {
  EXPECT_THROW(attngate::hooks::checked_reason_code("NOT_A_CODE"), std::logic_error);
  EXPECT_EQ(attngate::hooks::checked_reason_code("NO_PERF"), "NO_PERF");
}

}  // namespace
