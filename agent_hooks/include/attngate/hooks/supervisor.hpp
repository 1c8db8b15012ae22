#pragma once
// The supervisor: signals computed over the lineage after every evaluation. Thresholds come from
// agent_hooks/supervisor.yaml (defaults below match it) and an optional user file on top.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attngate/hooks/lineage.hpp"

namespace attngate::hooks {

struct SupervisorConfig {
  struct {
    int evaluations = 5;
    double minutes = 60;
    double min_gain = 0.005;
  } stall;
  struct {
    bool repeat_hash = true;
    int oscillation_window = 6;
    double oscillation_band = 0.03;
    double churn_threshold = 0.30;
    int churn_min_added_lines = 5;
  } cycle;
  struct {
    double step_speedup = 1.5;
    // A confirming re-run's interval may lie this far (relative) from the first run's and still
    // confirm it: two honest gate runs differ by more than their intervals' width.
    double confirm_gap = 0.01;
    double peak_percent = 100;
    double wall_kernel_gap = 0.10;
    bool kernel_count_change = true;
    bool side_stream_work = true;
  } suspicious;
  struct {
    double tolerance = 0.02;
  } regression;
  // What the supervisor does on a stall or cycle (redirect.hpp): a digest of the trajectory, then
  // a restart from an elite, then a human.
  struct {
    int digest_versions = 5;   // the digest lists the last N versions
    double group_move = 0.01;  // a scenario group "moved" when its geomean changed by more than this fraction
    int restart_after = 2;     // this many stall signals in a row suggest a restart from an elite
    int human_after = 3;       // ... and this many ask for a human
  } redirect;
};

// Overrides the keys present in the file; unknown keys, wrong types and numbers that are not finite
// and >= 0 are errors (file:line).
void apply_supervisor_file(SupervisorConfig& config, const std::filesystem::path& file);

// A version whose measurement counts: it has a geomean, every scenario is correct and it failed (if
// at all) only on speed (GEOMEAN_BELOW_TARGET, SCENARIO_BELOW_FLOOR).
bool is_scored(const Record& r);

// The best geomean committed on this machine, as far as the commits' signed receipts show
// (command_support.cpp `committed_step_bar`): the step signal measures a gain from the higher of
// it and the lineage's best, so a lineage begun afresh (a new checkout) does not count the
// committed versions' gains as a step again.
struct StepBar {
  double speedup = 1.0;
  std::string what = "baseline";
};

// earlier: the evaluations before current, in order. current.churn must already be set when known.
std::vector<Signal> compute_signals(const std::vector<Record>& earlier, const Record& current,
                                    const SupervisorConfig& config, const StepBar& committed = {});

// The trigger names of the signals, each once, in the canonical order.
std::vector<std::string> triggers_of(const std::vector<Signal>& signals);

}  // namespace attngate::hooks
