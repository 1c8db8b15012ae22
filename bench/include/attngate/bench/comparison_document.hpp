// The comparison document (schema attngate.comparison/1): what `attngate_bench(_judge)
// --compare=K,B --compare_out=FILE` writes (compare.cpp), what the gate report judges
// (agent_hooks/gate/src/gate_report.cpp) and what `attngate_stats merge|judge` read and write. One typed
// definition for every writer and reader; the JSON Schema is bench/schema/comparison.schema.json,
// which the Python tools check a file against. bench/README.md ("Comparisons") says what each
// field means. NaN and infinity are written as null (std::nullopt here).
//
// Header only, no CUDA: agent_hooks includes it without linking CUDA (target
// attngate::comparison_document).
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attngate/bench/failure_kind.hpp"
#include "attngate/verify/json_document.hpp"  // std::optional <-> null, parse_document

namespace attngate::bench {

inline constexpr const char* kComparisonSchema = "attngate.comparison/1";

using Figure = std::optional<double>;  // a measured number; nullopt when it could not be computed

inline Figure figure(double v) { return std::isfinite(v) ? Figure(v) : std::nullopt; }

// Every figure of KernelTiming, once: X(name) for each; the member and its JSON key (the benchmark
// counter's name) are both made from this list, so neither can be missing.
#define ATTNGATE_TIMING_FIGURES(X) \
  /* The judge's clock: untraced event time of a call and its spread. */ \
  X(event_ms) X(min_ms) X(cv) X(rel_noise) X(samples) \
  /* A kernel in a worker: the judge's events with the round trip, the worker's own, the judge's */ \
  /* work before its clock, the hold kernel's longest gap; the round trip subtracted, its spread. */ \
  X(judge_ms) X(worker_event_ms) X(pre_ms) X(hold_gap_max_us) X(handoff_us) X(reference_handoff_us) \
  X(solo_handoff_us) X(lowest_handoff_us) X(round_trip_correction_us) X(judge_resolution_us) \
  X(judge_resolution_pct) \
  /* Host time, CUPTI kernel time and what the traced calls launched. */ \
  X(wall_ms) X(wall_over_event) X(kernel_ms) X(span_ms) X(kernels_per_call) X(streams) X(event_over_kernel) \
  X(wall_over_kernel) X(foreign_stream_kernels) X(kernel_count_changes) X(memcpy_per_call) X(memset_per_call) \
  /* The traced calls and what tracing cost. */ \
  X(traced_samples) X(traced_event_ms) X(traced_wall_ms) X(tracing_overhead_us) X(host_tracing_overhead_us) \
  X(cupti_minus_event_us) X(cupti_minus_traced_event_us) \
  /* Throughput and the SM clock. */ \
  X(tflops) X(pct_peak) X(cycles) X(kernel_cycles) X(sm_clock_mhz) X(sm_clock_before_mhz) X(sm_clock_after_mhz) \
  X(sm_clock_min_mhz) X(sm_clock_max_mhz) X(clock_dropped) X(clock_below_max) X(clock_event_reasons) X(nvml) \
  /* The measurement's bookkeeping. */ \
  X(held_timeouts) X(unattributed_records) X(marker_attributed_records) X(dropped_records) X(input_sets) \
  X(stop_reason) X(noise_target_met) X(loop_s) X(setup_s) \
  /* Isolation (kernels/worker) and the judge's checks of the timed calls. */ \
  X(isolated) X(fresh_calls) X(fresh_event_ms) X(fresh_wall_ms) X(checked_calls) X(inventory_kernels) \
  X(foreign_kernels) \
  /* The base timed alone before any other worker started (--baseline-alone-s); null otherwise. */ \
  X(alone_event_ms) X(alone_rel_noise)

// One kernel's figures on one scenario: every field of bench/README.md's JSON fields table (the
// benchmark's counters, report.cpp) as a named member, written flat beside the kernel's names and
// hashes, under the counter's own name. null (std::nullopt): not measured. A new counter needs its
// name in ATTNGATE_TIMING_FIGURES; unit.bench.Compare.* fails until it has it.
struct KernelTiming {
  std::string name;
  std::string process;  // "worker" or "in-process"; anything else counts as not isolated
  // Short names of the kernels its traced calls launched (the table's `kernel_names` count is not
  // carried: this list, under the same key, says more).
  std::vector<std::string> kernel_names;
  int64_t kernel_count_min = 0, kernel_count_max = 0;
  bool kernel_count_changed = false;
  std::vector<std::string> foreign_kernel_names;  // mangled names outside the worker's inventory
  // What the worker's kernel library defines that it must not (kernels/worker/cmake/symbols.cmake).
  std::vector<std::string> forbidden_symbols;
  std::string kernel_tree_sha256, kernel_tree_dir;

  // The figures (ATTNGATE_TIMING_FIGURES above says what each group is).
#define ATTNGATE_TIMING_MEMBER(n) Figure n;
  ATTNGATE_TIMING_FIGURES(ATTNGATE_TIMING_MEMBER)
#undef ATTNGATE_TIMING_MEMBER
};

// Each figure's JSON key and member, made from ATTNGATE_TIMING_FIGURES: the one list to_json and
// from_json walk, and the writer (compare.cpp) fills the members from.
struct TimingFigure {
  const char* key;
  Figure KernelTiming::*member;
};
inline const std::vector<TimingFigure>& timing_figures() {
  using T = KernelTiming;
  static const std::vector<TimingFigure> figures = {
#define ATTNGATE_TIMING_ROW(n) {#n, &T::n},
      ATTNGATE_TIMING_FIGURES(ATTNGATE_TIMING_ROW)
#undef ATTNGATE_TIMING_ROW
  };
  return figures;
}

// The figure a name from outside the document's code refers to (the adversarial catalogue's
// `counters`); nullptr when KernelTiming has no such figure.
inline const TimingFigure* timing_figure(const std::string& key) {
  for (const auto& f : timing_figures())
    if (key == f.key) return &f;
  return nullptr;
}

inline void to_json(nlohmann::json& j, const KernelTiming& t) {
  j = nlohmann::json::object();
  for (const auto& f : timing_figures()) j[f.key] = t.*f.member;
  j["name"] = t.name;
  j["process"] = t.process;
  j["kernel_names"] = t.kernel_names;
  j["kernel_count_min"] = t.kernel_count_min;
  j["kernel_count_max"] = t.kernel_count_max;
  j["kernel_count_changed"] = t.kernel_count_changed;
  j["foreign_kernel_names"] = t.foreign_kernel_names;
  if (!t.forbidden_symbols.empty()) j["forbidden_symbols"] = t.forbidden_symbols;  // absent: none
  j["kernel_tree_sha256"] = t.kernel_tree_sha256;
  j["kernel_tree_dir"] = t.kernel_tree_dir;
}

// Every field by type: a figure that is neither a number nor null throws (nlohmann's get<double>
// would take `true` as 1), as a wrong-typed name does. Absent fields take their defaults; keys
// KernelTiming does not name are not read.
inline void from_json(const nlohmann::json& j, KernelTiming& t) {
  t = KernelTiming{};
  t.name = j.value("name", std::string{});
  t.process = j.value("process", std::string{});
  t.kernel_names = j.value("kernel_names", std::vector<std::string>{});
  t.kernel_count_min = j.value("kernel_count_min", int64_t{0});
  t.kernel_count_max = j.value("kernel_count_max", int64_t{0});
  t.kernel_count_changed = j.value("kernel_count_changed", false);
  t.foreign_kernel_names = j.value("foreign_kernel_names", std::vector<std::string>{});
  t.forbidden_symbols = j.value("forbidden_symbols", std::vector<std::string>{});
  t.kernel_tree_sha256 = j.value("kernel_tree_sha256", std::string{});
  t.kernel_tree_dir = j.value("kernel_tree_dir", std::string{});
  for (const auto& f : timing_figures()) {
    const auto it = j.find(f.key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_number())
      throw nlohmann::json::type_error::create(302, std::string("figure ") + f.key + " is not a number or null", &j);
    t.*f.member = figure(it->get<double>());
  }
}

// One scenario of the comparison.
struct ComparisonScenario {
  std::string id;
  std::string shape;  // scenario_summary()
  Figure flops, min_bytes;  // min_bytes: Q, K and V read once, O and LSE written once
  Figure kernel_ms, base_ms;  // median untraced event time of each kernel
  Figure kernel_min_ms, base_min_ms, kernel_tflops, base_tflops;
  Figure speedup;                       // base_ms / kernel_ms
  std::array<Figure, 2> speedup_ci95;  // bootstrap (a single run) or carried over (a merge)
  Figure kernel_speedup, wall_speedup;  // the same ratio on CUPTI kernel time and on wall time
  Figure kernel_cv, base_cv, kernel_rel_noise, base_rel_noise;
  int64_t calls = 0;
  std::string stop;  // why measuring stopped
  Figure loop_s;
  // int64: a count read narrower would wrap (2^32 + 2 read as 2).
  std::optional<int64_t> gpu_processes;  // CUDA processes on the device while measuring; null: unknown
  int64_t gpu_processes_expected = 1;    // the judge and its workers
  Figure tracing_overhead_us, cupti_minus_event_us;
  KernelTiming kernel_timing, base_timing;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ComparisonScenario, id, shape, flops, min_bytes, kernel_ms, base_ms,
                                                kernel_min_ms, base_min_ms, kernel_tflops, base_tflops, speedup,
                                                speedup_ci95, kernel_speedup, wall_speedup, kernel_cv, base_cv,
                                                kernel_rel_noise, base_rel_noise, calls, stop, loop_s, gpu_processes,
                                                gpu_processes_expected, tracing_overhead_us, cupti_minus_event_us,
                                                kernel_timing, base_timing)

// The SM clock over the run: the spread of the per-scenario medians and what any scenario saw.
struct SmClockSummary {
  bool available = false;
  int scenarios = 0;
  Figure median_mhz, lowest_median_mhz, highest_median_mhz, min_mhz, device_max_mhz;
  uint64_t event_reasons = 0;
  int scenarios_clock_dropped = 0, scenarios_below_max = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SmClockSummary, available, scenarios, median_mhz, lowest_median_mhz,
                                                highest_median_mhz, min_mhz, device_max_mhz, event_reasons,
                                                scenarios_clock_dropped, scenarios_below_max)

struct ShardInfo {
  int index = 0, of = 1;  // --shard=i/N: this document holds shard i of N
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ShardInfo, index, of)

struct FailedScenario {
  std::string id, kind = failure_kind::kError, error;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FailedScenario, id, kind, error)

// A shard file a merged document was made from (attngate_stats merge).
struct MergedShard {
  std::string file;
  ShardInfo shard;
  std::string device;
  Figure wall_s;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MergedShard, file, shard, device, wall_s)

// How the judge's workers were sealed (kernels/worker/README.md): the sandbox on or off
// (ATTNGATE_SANDBOX), and each mechanism the machine offered or lacked.
struct SandboxMechanismRecord {
  std::string name;
  bool available = false;
  std::string detail;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SandboxMechanismRecord, name, available, detail)
struct SandboxRecord {
  bool enabled = false;
  std::vector<SandboxMechanismRecord> mechanisms;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SandboxRecord, enabled, mechanisms)

struct ComparisonDocument {
  std::string schema = kComparisonSchema;
  std::string kernel, base, suite, device;
  int device_sm = 0;
  std::string driver_version, cuda_driver_version, cuda_runtime_version;  // "580.159.04", "13.0", "13.0"
  std::string speedup_definition =
      "median untraced event time of base / of kernel; > 1 means kernel is faster";
  Figure peak_tflops, hbm_tbps, noise_target;
  Figure geomean_speedup;
  std::array<Figure, 2> geomean_ci95;
  // How geomean_ci95 was made: "bootstrap" over the calls (one run), or from the per-scenario
  // intervals (a merge of shards, whose calls are gone).
  std::string geomean_method = "bootstrap";
  Figure geomean_kernel_speedup, geomean_wall_speedup;
  int bootstrap_resamples = 0;
  uint64_t bootstrap_seed = 0;
  // The base seed of the timed inputs, drawn at run time unless --seed gave it (replay with --seed).
  uint64_t input_seed = 0;
  SandboxRecord sandbox;
  Figure wall_s;  // the whole run; a merge: its slowest shard
  ShardInfo shard;
  SmClockSummary sm_clock;
  std::vector<ComparisonScenario> scenarios;
  std::vector<FailedScenario> failed;
  std::vector<MergedShard> merged_from;  // empty unless attngate_stats merge wrote it
  std::vector<std::string> problems;     // a merge's: missing or doubled scenarios, failures
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ComparisonDocument, schema, kernel, base, suite, device, device_sm,
                                                driver_version, cuda_driver_version, cuda_runtime_version,
                                                speedup_definition, peak_tflops, hbm_tbps, noise_target,
                                                geomean_speedup, geomean_ci95, geomean_method, geomean_kernel_speedup,
                                                geomean_wall_speedup, bootstrap_resamples, bootstrap_seed, input_seed, sandbox, wall_s,
                                                shard, sm_clock, scenarios, failed, merged_from, problems)

// The document of `j`; throws nlohmann::json::exception when it is not an attngate.comparison/1
// (no or another `schema`, or a field of the wrong type). Absent fields take their defaults.
inline ComparisonDocument parse_comparison_document(const nlohmann::json& j) {
  return parse_document<ComparisonDocument>(j, kComparisonSchema);
}

// `<compare_out>.progress`, rewritten (through a rename) after each scenario of a comparison run,
// so that `attngate gate --quiet` can say how far the timing is. Display only: no verdict reads it.
struct TimingProgress {
  int done = 0;          // scenarios finished (timed, failed or skipped)
  int total = 0;         // scenarios registered
  std::string scenario;  // the last one finished
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TimingProgress, done, total, scenario)

}  // namespace attngate::bench
