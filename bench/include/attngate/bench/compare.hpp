// The suite-level result of an interleaved comparison (--compare=KERNEL,BASE): per-scenario
// speedups on the three clocks, their geometric means (the event-time one with a bootstrap
// interval), the cross-check figures of both kernels, a console table and a JSON file.
// bench/README.md ("Comparisons") documents the JSON; comparison_document.hpp types it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attngate/bench/comparison_document.hpp"
#include "attngate/bench/harness.hpp"
#include "attngate/bench/report.hpp"
#include "attngate/bench/stats.hpp"
#include "attngate/scenario.hpp"

namespace attngate::bench {

// One kernel's figures on one scenario of a comparison.
struct KernelFigures {
  std::string name;                       // the kernel (registry name)
  Fields fields;                          // kernel_fields() of its series: the benchmark JSON's counters
  std::vector<std::string> forbidden_symbols;  // KernelSeries::forbidden_symbols
  std::vector<std::string> kernel_names;  // short names of the distinct kernels its traced calls launched
  int kernel_count_min = 0;               // kernels per traced call, lowest and highest
  int kernel_count_max = 0;
  std::vector<std::string> foreign_kernels;  // mangled names outside the worker's inventory
  std::string kernel_tree_sha256;            // the worker's build-time hash of its kernel folder
  std::string kernel_tree_dir;               // that folder, relative to the repository
  bool isolated = false;
  // A field by name (event_ms, kernel_ms, wall_ms, ...); NaN when absent.
  double get(const std::string& field) const;
};

struct ComparisonRow {
  std::string scenario;
  std::string summary;  // scenario_summary()
  double flops = 0;
  double min_bytes = 0;  // Q, K and V read once, O and LSE written once: no call moves less
  PairedSamples samples;  // untraced event times (ms), kernel[i] and base[i] measured side by side
  std::string stop;       // why measuring stopped
  double loop_s = 0;
  int gpu_processes = -1;          // CUDA processes on the device while measuring (-1: unknown)
  int gpu_processes_expected = 1;  // the judge and its workers
  KernelFigures kernel, base;  // empty fields when built by hand (then the clocks read as null)
};

// The row of one measured scenario: series[0] is the kernel, series[1] the base.
ComparisonRow comparison_row(const Scenario& s, const Measurement& m, const ReportContext& ctx);

struct ComparisonReport {
  std::string kernel, base, suite, device;
  int device_sm = 0;
  std::string driver_version;     // NVIDIA driver, e.g. "580.159.04"; empty when unknown
  int cuda_driver_version = 0;    // cudaDriverGetVersion: the CUDA version the driver supports (13000)
  int cuda_runtime_version = 0;   // cudaRuntimeGetVersion: the runtime this binary uses
  double peak_tflops = 0;
  double hbm_tbps = 0;  // the device's memory bandwidth: no call can beat reading Q, K, V and writing O at it
  double noise_target = 0;
  std::vector<ComparisonRow> rows;
  std::vector<FailedScenario> failed;  // scenario, kind, error
  int resamples = 2000;
  uint64_t seed = 20261129;  // the bootstrap's
  uint64_t input_seed = 0;   // MeasureOptions::seed of the run (drawn at run time unless --seed)
  SandboxRecord sandbox;     // how the workers were sealed
  double wall_s = 0;  // whole run, process start to report
  int shard_index = 0, shard_count = 1;  // --shard=i/N: this report holds shard i of N
};

// Fills driver_version, cuda_driver_version and cuda_runtime_version from the machine (NVML's
// driver version, else /proc/driver/nvidia/version; the CUDA calls). Never throws.
void fill_versions(ComparisonReport& r);

// Speedup of the kernel over the base per scenario and over the suite (bootstrap_speedup), on
// untraced event time.
SuiteSpeedup suite_speedup(const ComparisonReport& r);

// Per scenario: base's median / kernel's median of CUPTI kernel time ("kernel_ms") or of host
// wall time ("wall_ms"); NaN when either is missing or zero.
double clock_speedup(const ComparisonRow& row, const std::string& field);
// Geometric mean of clock_speedup over the rows; NaN when any row lacks it.
double geomean_clock_speedup(const ComparisonReport& r, const std::string& field);

std::string format_table(const ComparisonReport& r, const SuiteSpeedup& s);
// The attngate.comparison/1 document of the run (comparison_document.hpp), and its JSON text.
ComparisonDocument comparison_document(const ComparisonReport& r, const SuiteSpeedup& s);
std::string to_json(const ComparisonReport& r, const SuiteSpeedup& s);

// "13.0" from 13000; "" for 0.
std::string cuda_version_string(int v);

}  // namespace attngate::bench
