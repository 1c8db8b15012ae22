#include "attngate/gate/inputs.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "attngate/verify/result_document.hpp"
#include "attngate/verify/schema_check.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The comparison document (performance.json) against its schema, read from the repository (a
// harness file: the gate checks it is unmodified). A missing schema is a problem too.
constexpr const char* kComparisonSchemaFile = "bench/schema/comparison.schema.json";
std::vector<std::string> comparison_problems(const fs::path& repo, const json& doc) {
  std::string err;
  const std::optional<json> schema = read_json(repo / kComparisonSchemaFile, &err);
  if (!schema) return {"cannot read the schema: " + err};
  return verify::schema_problems(*schema, doc);
}

// The typed document of a file that passed the schema check; nothing, with the reason in *error,
// where a field has another type than the reader's (the schema leaves some open).
std::optional<bench::ComparisonDocument> parse_comparison(const json& doc, std::string* error) {
  try {
    return bench::parse_comparison_document(doc);
  } catch (const json::exception& e) {
    *error = std::string("not a readable attngate.comparison/1 document: ") + e.what();
    return std::nullopt;
  }
}

}  // namespace

fs::path result_file(const ReportInputs& in, const std::string& kernel, const std::string& id) {
  return in.results_dir / verify::result_file_name(kernel, id);
}

std::optional<json> read_json(const fs::path& file, std::string* error) {
  std::ifstream f(file);
  if (!f) {
    *error = "cannot read " + file.string();
    return std::nullopt;
  }
  try {
    return json::parse(f);
  } catch (const json::exception& e) {
    *error = file.string() + ": not JSON: " + e.what();
    return std::nullopt;
  }
}

std::map<std::string, LoggedTest> parse_ctest_log(const std::string& text) {
  std::map<std::string, LoggedTest> out;
  std::istringstream in(text);
  std::string line, current;
  bool in_output = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (in_output) {
      if (line == "<end of output>") in_output = false;
      else if (line.find_first_not_of(" \t") != std::string::npos && line.find_first_not_of('-') != std::string::npos)
        out[current].last_output = line;
      continue;
    }
    // "3/60 Test: verify.candidate.gate_x"
    if (auto p = line.find(" Test: "); p != std::string::npos && line.find('/') < p && std::isdigit(line[0])) {
      current = line.substr(p + 7);
      out[current] = LoggedTest{};
    } else if (current.empty()) {
      continue;
    } else if (line == "Output:") {
      in_output = true;
    } else if (line.rfind("Test time =", 0) == 0) {
      out[current].time_s = std::strtod(line.c_str() + 11, nullptr);
    } else if (line == "Test Passed.") {
      out[current].passed = true;
    }
  }
  return out;
}

// The comparison of kernel against baseline (bench/include/attngate/bench/comparison_document.hpp),
// fresh from this run and schema-valid, or nothing with the reason why.
std::optional<bench::ComparisonDocument> load_comparison(const ReportInputs& in, const std::string& kernel,
                                                         const std::string& baseline, const Freshness& freshness,
                                                         Reasons& reasons) {
  std::string perr;
  std::optional<json> perf_json;
  std::optional<bench::ComparisonDocument> perf;
  if (!fs::exists(in.perf)) {
    auto [code, detail] = freshness.missing("gate.performance", in.perf_timeout_s, "no " + in.perf.string());
    reasons.add(code == "TEST_TIMEOUT" ? code : "NO_PERF", "", detail);
  } else if (!freshness.fresh(in.perf)) {
    reasons.add("NO_PERF", "", in.perf.string() + " is older than this gate run: gate.performance did not run" + freshness.stale_note);
  } else if (!(perf_json = read_json(in.perf, &perr))) {
    reasons.add("NO_PERF", "", perr);
  } else if (auto problems = comparison_problems(in.repo, *perf_json); !problems.empty()) {
    reasons.add("NO_PERF", "", in.perf.string() + " is not an attngate.comparison/1 document (" + kComparisonSchemaFile +
                                   "): " + fmt::format("{}", fmt::join(std::vector<std::string>(problems.begin(),
                                                                         problems.begin() + std::min<size_t>(problems.size(), 3)), "; ")));
  } else if (!(perf = parse_comparison(*perf_json, &perr))) {
    reasons.add("NO_PERF", "", in.perf.string() + ": " + perr);
  } else if (perf->kernel != kernel || perf->base != baseline) {
    reasons.add("NO_PERF", "", in.perf.string() + " compares " + perf->kernel + " against " + perf->base +
                                   "; the gate needs " + kernel + " against " + baseline);
    perf.reset();
  }
  return perf;
}

}  // namespace attngate::hooks
