#pragma once
// The gate's typed inputs (agent_hooks/README.md, "The gate"): the documents this gate run's tests
// left, each read through its type and refused when it is stale (older than gate.setup's marker),
// unreadable or not its schema; and what CTest's running log says about a test that left nothing.
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attngate/bench/comparison_document.hpp"
#include "attngate/gate/digest.hpp"
#include "attngate/gate/gate_report.hpp"
#include "attngate/gate/reasons.hpp"

namespace attngate::hooks {

// What CTest's running log (Testing/Temporary/LastTest.log[.tmp]) says about one test.
struct LoggedTest {
  double time_s = -1;
  bool passed = false;
  std::string last_output;  // last non-empty line the test printed
};
std::map<std::string, LoggedTest> parse_ctest_log(const std::string& text);

// Freshness: only files written after gate.setup's marker belong to this run; CTest's log of the
// run says why a test left no outcome.
class Freshness {
 public:
  explicit Freshness(const ReportInputs& in) : marker_(in.started_after) {
    std::error_code ec;
    if (auto t = std::filesystem::last_write_time(in.started_after, ec); !ec) started_ = t;
    if (!started_)
      stale_note = " (no marker " + in.started_after.string() + ": gate.setup did not run, so no file counts as fresh)";
    for (const char* name : {"LastTest.log.tmp", "LastTest.log"}) {
      const std::filesystem::path log = in.ctest_log_dir / name;
      if (in.ctest_log_dir.empty() || !fresh(log)) continue;
      if (auto text = read_file(log)) {
        logged_ = parse_ctest_log(*text);
        break;
      }
    }
  }
  bool fresh(const std::filesystem::path& f) const {
    std::error_code e;
    auto t = std::filesystem::last_write_time(f, e);
    return !e && started_ && t >= *started_;
  }
  // Why a test left no outcome: a timeout when CTest's log says it ran as long as its limit.
  std::pair<std::string, std::string> missing(const std::string& test, double timeout_s, const std::string& what) const {
    auto it = logged_.find(test);
    if (it == logged_.end())
      return {"TEST_CRASHED", what + ": " + test + " did not run in this ctest run, or died before writing it" + stale_note};
    const LoggedTest& l = it->second;
    if (timeout_s > 0 && l.time_s >= 0.99 * timeout_s)
      return {"TEST_TIMEOUT", what + ": " + test + " ran " + fmt::format("{:.0f}", l.time_s) + " s, its timeout is " +
                                  fmt::format("{:.0f}", timeout_s) + " s"};
    if (l.last_output.find("SKIPPED") != std::string::npos)
      return {"TEST_CRASHED", what + ": " + test + " was skipped: " + l.last_output.substr(0, 300)};
    std::string d = what + ": " + test + " ended after " + fmt::format("{:.1f}", std::max(l.time_s, 0.0)) + " s without writing it";
    if (!l.last_output.empty()) d += "; its last output: " + l.last_output.substr(0, 300);
    return {"TEST_CRASHED", d};
  }
  // Seconds since gate.setup's marker: the gate run's wall time so far.
  std::optional<double> seconds_since_start() const {
    if (!started_) return std::nullopt;
    return std::chrono::duration<double>(std::filesystem::file_time_type::clock::now() - *started_).count();
  }
  std::string stale_note;  // appended where a file is refused as stale: why nothing counts as fresh

 private:
  std::filesystem::path marker_;
  std::optional<std::filesystem::file_time_type> started_;
  std::map<std::string, LoggedTest> logged_;
};

// A file as JSON, else nothing with the reason in *error.
std::optional<nlohmann::json> read_json(const std::filesystem::path& file, std::string* error);
// verify.<kernel>.<id>.json in the results folder.
std::filesystem::path result_file(const ReportInputs& in, const std::string& kernel, const std::string& id);
// The comparison of kernel against baseline (bench/include/attngate/bench/comparison_document.hpp),
// fresh from this run and schema-valid, or nothing with the reason added to `reasons`.
std::optional<bench::ComparisonDocument> load_comparison(const ReportInputs& in, const std::string& kernel,
                                                         const std::string& baseline, const Freshness& freshness,
                                                         Reasons& reasons);

}  // namespace attngate::hooks
