// What `attngate gate --quiet` says while the gate runs: a line per stage on stderr (build,
// verification k/n, timing k/n, report) with the seconds since the gate started, read from what
// the gate's tests write anyway (the verify results, the bench's TimingProgress file, the report).
// Display only: nothing here decides anything.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <thread>

#include "attngate/bench/comparison_document.hpp"

namespace attngate::hooks {

struct GateProgressPaths {
  std::filesystem::path results_dir;      // <build>/verify/results: verify.<kernel>.<scenario>.json
  std::string kernel;                     // the kernel under test
  int verify_total = 0;                   // scenarios it is checked on (gate + correctness suites)
  std::filesystem::path timing_progress;  // <build>/gate/performance.json.progress
  std::filesystem::path report;           // <build>/gate/report.json
};

struct ProgressSnapshot {
  int verified = 0;                           // results of the kernel written since the start
  std::optional<bench::TimingProgress> timing;
  bool report = false;
};

// What the files say now; only files written at or after `since` count.
ProgressSnapshot read_progress(const GateProgressPaths& p, std::filesystem::file_time_type since);

// The line for `now` after `last`, if one is due: a stage that began or ended always, otherwise
// progress at most every `every_s` seconds since the last line.
std::optional<std::string> progress_line(const ProgressSnapshot& last, const ProgressSnapshot& now,
                                         const GateProgressPaths& p, double elapsed_s, double since_line_s,
                                         double every_s = 5.0);

// The paths and totals for the gate suite in `scenario_dir`, its results under `build`.
GateProgressPaths gate_progress_paths(const std::filesystem::path& scenario_dir, const std::filesystem::path& build);

// Polls once a second on a thread of its own while alive, printing progress_line's lines to `err`.
class ProgressReporter {
 public:
  ProgressReporter(GateProgressPaths paths, std::filesystem::file_time_type since,
                   std::chrono::steady_clock::time_point started, std::ostream& err);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

 private:
  void loop();
  GateProgressPaths paths_;
  std::filesystem::file_time_type since_;
  std::chrono::steady_clock::time_point started_;
  std::ostream& err_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace attngate::hooks
