#pragma once
// The gate's typed inputs (agent_hooks/README.md, "The gate"): the documents this gate run's tests
// left, each read through its type and refused when it is stale (older than gate.setup's marker),
// unreadable or not its schema; and what the tests' start records say about a test that left nothing.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/bench/comparison_document.hpp"
#include "attngate/gate/digest.hpp"
#include "attngate/gate/gate_report.hpp"
#include "attngate/gate/reasons.hpp"
#include "attngate/verify/start_record.hpp"

namespace attngate::hooks {

// Freshness: only files written after gate.setup's marker belong to this run.
class Freshness {
 public:
  explicit Freshness(const ReportInputs& in) {
    std::error_code ec;
    if (auto t = std::filesystem::last_write_time(in.started_after, ec); !ec) started_ = t;
    if (!started_)
      stale_note = " (no marker " + in.started_after.string() + ": gate.setup did not run, so no file counts as fresh)";
  }
  bool fresh(const std::filesystem::path& f) const {
    std::error_code e;
    auto t = std::filesystem::last_write_time(f, e);
    return !e && started_ && t >= *started_;
  }
  // Seconds since gate.setup's marker: the gate run's wall time so far.
  std::optional<double> seconds_since_start() const {
    if (!started_) return std::nullopt;
    return std::chrono::duration<double>(std::filesystem::file_time_type::clock::now() - *started_).count();
  }
  std::string stale_note;  // appended where a file is refused as stale: why nothing counts as fresh

 private:
  std::optional<std::filesystem::file_time_type> started_;
};

// The start records this run's gate tests wrote (verify/start_record.hpp: a verify batch, the
// bench's comparison), each read through its type: why a test left no file it owed.
class StartRecords {
 public:
  // The fresh records in in.start_records_dir; an unreadable one is kept as a note.
  StartRecords(const ReportInputs& in, const Freshness& freshness);
  // Why `file` (a name in its folder) is missing, as {code, detail}: no record owes it, the test did
  // not run, or a test failed as it started and says why (TEST_CRASHED); from its start to `ended_by_ms` (the start of a test that waited for it;
  // none: now) at least 0.99 x timeout_s, TEST_TIMEOUT; it skipped (no GPU), or it ended without
  // writing it, TEST_CRASHED.
  std::pair<std::string, std::string> missing(const std::string& file, const std::string& what, double timeout_s,
                                              std::optional<int64_t> ended_by_ms = std::nullopt) const;
  // When `test` started in this run; nothing when it did not.
  std::optional<int64_t> started_ms(const std::string& test) const;

 private:
  const verify::StartRecord* owing(const std::string& file) const;
  std::filesystem::path dir_;
  std::vector<verify::StartRecord> records_;
  std::string notes_;  // unreadable records, or no marker: said where a test is reported as not run
};

// verify.<kernel>.<id>.json in the results folder.
std::filesystem::path result_file(const ReportInputs& in, const std::string& kernel, const std::string& id);
// The comparison of kernel against baseline (bench/include/attngate/bench/comparison_document.hpp),
// fresh from this run and schema-valid, or nothing with the reason added to `reasons`.
std::optional<bench::ComparisonDocument> load_comparison(const ReportInputs& in, const std::string& kernel,
                                                         const std::string& baseline, const Freshness& freshness,
                                                         const StartRecords& started, Reasons& reasons);

}  // namespace attngate::hooks
