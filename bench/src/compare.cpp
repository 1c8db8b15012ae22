#include "attngate/bench/compare.hpp"
#include <fmt/printf.h>


#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace attngate::bench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ratio_or_nan(double num, double den) {
  return std::isfinite(num) && std::isfinite(den) && num > 0 && den > 0 ? num / den : kNaN;
}

KernelTiming timing_document(const KernelFigures& k) {
  KernelTiming t;
  t.name = k.name;
  // The benchmark's counters into the document's named figures; a counter the run did not produce
  // (alone_* of a kernel not timed alone, a row built by hand) stays null.
  for (const auto& f : timing_figures()) t.*f.member = figure(k.get(f.key));
  t.kernel_names = k.kernel_names;
  t.kernel_count_min = k.kernel_count_min;
  t.kernel_count_max = k.kernel_count_max;
  t.kernel_count_changed = k.kernel_count_min != k.kernel_count_max;
  t.foreign_kernel_names = k.foreign_kernels;
  t.forbidden_symbols = k.forbidden_symbols;
  t.kernel_tree_sha256 = k.kernel_tree_sha256;
  t.kernel_tree_dir = k.kernel_tree_dir;
  t.process = k.isolated ? "worker" : "in-process";
  return t;
}

ComparisonScenario scenario_document(const ComparisonRow& row, const SpeedupEstimate& sp) {
  const double km = median(row.samples.kernel), bm = median(row.samples.base);
  ComparisonScenario c;
  c.id = row.scenario;
  c.shape = row.summary;
  c.flops = figure(row.flops);
  c.min_bytes = figure(row.min_bytes);
  c.kernel_ms = figure(km);
  c.base_ms = figure(bm);
  c.kernel_min_ms = figure(min_of(row.samples.kernel));
  c.base_min_ms = figure(min_of(row.samples.base));
  c.kernel_tflops = figure(tflops(row.flops, km * 1e-3));
  c.base_tflops = figure(tflops(row.flops, bm * 1e-3));
  c.speedup = figure(sp.speedup);
  c.speedup_ci95 = {figure(sp.ci95.lo), figure(sp.ci95.hi)};
  c.kernel_speedup = figure(clock_speedup(row, "kernel_ms"));
  c.wall_speedup = figure(clock_speedup(row, "wall_ms"));
  c.kernel_cv = figure(cv(row.samples.kernel));
  c.base_cv = figure(cv(row.samples.base));
  c.kernel_rel_noise = figure(relative_noise(row.samples.kernel));
  c.base_rel_noise = figure(relative_noise(row.samples.base));
  c.calls = int64_t(row.samples.kernel.size());
  c.stop = row.stop;
  c.loop_s = figure(row.loop_s);
  if (row.gpu_processes >= 0) c.gpu_processes = row.gpu_processes;
  c.gpu_processes_expected = row.gpu_processes_expected;
  c.tracing_overhead_us = figure(row.kernel.get("tracing_overhead_us"));
  c.cupti_minus_event_us = figure(row.kernel.get("cupti_minus_event_us"));
  c.kernel_timing = timing_document(row.kernel);
  c.base_timing = timing_document(row.base);
  return c;
}

// The SM clock over the run: per scenario the harness reads it after warm-up and after every
// block pair; here the spread of the per-scenario medians and what any scenario saw. One clock
// per scenario: both kernels ran under it, so the kernel's figures tell.
SmClockSummary sm_clock_summary(const ComparisonReport& r) {
  SmClockSummary c;
  std::vector<double> medians;
  double lowest = kNaN, device_max = kNaN;
  for (const auto& row : r.rows) {
    const KernelFigures& k = row.kernel;
    if (!(k.get("nvml") > 0)) continue;
    ++c.scenarios;
    medians.push_back(k.get("sm_clock_mhz"));
    const double lo = k.get("sm_clock_min_mhz");
    if (!(lowest <= lo)) lowest = lo;
    device_max = k.get("sm_clock_max_mhz");
    c.event_reasons |= uint64_t(k.get("clock_event_reasons"));
    c.scenarios_clock_dropped += k.get("clock_dropped") > 0;
    c.scenarios_below_max += k.get("clock_below_max") > 0;
  }
  c.available = c.scenarios > 0;
  if (!medians.empty()) {
    c.median_mhz = figure(median(medians));
    c.lowest_median_mhz = figure(min_of(medians));
    c.highest_median_mhz = figure(*std::max_element(medians.begin(), medians.end()));
  }
  c.min_mhz = figure(lowest);
  c.device_max_mhz = figure(device_max);
  return c;
}

// NVIDIA's driver version through NVML (loaded at run time, as sm_clock.cpp does).
std::string nvml_driver_version() {
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return {};
  using Init = int (*)();
  using Get = int (*)(char*, unsigned);
  auto init = reinterpret_cast<Init>(::dlsym(lib, "nvmlInit_v2"));
  auto get = reinterpret_cast<Get>(::dlsym(lib, "nvmlSystemGetDriverVersion"));
  auto shutdown = reinterpret_cast<Init>(::dlsym(lib, "nvmlShutdown"));
  std::string out;
  if (init && get && init() == 0) {
    char buf[96] = {};
    if (get(buf, sizeof buf) == 0) out = buf;
    if (shutdown) shutdown();
  }
  ::dlclose(lib);
  return out;
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ..." -> "580.159.04".
std::string proc_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  std::smatch m;
  static const std::regex version(R"(Module[^0-9]*([0-9]+\.[0-9]+(\.[0-9]+)?))");
  return std::regex_search(line, m, version) ? m[1].str() : std::string{};
}

}  // namespace

double KernelFigures::get(const std::string& field) const {
  for (const auto& [name, value] : fields)
    if (name == field) return value;
  return kNaN;
}

ComparisonRow comparison_row(const Scenario& s, const Measurement& m, const ReportContext& ctx) {
  if (m.series.size() != 2) throw std::invalid_argument("comparison_row: needs two series, got " +
                                                        std::to_string(m.series.size()));
  ComparisonRow row;
  row.scenario = s.id;
  row.summary = scenario_summary(s);
  row.flops = s.flops();
  {
    const double e = s.dtype == DType::bf16 || s.dtype == DType::fp16 ? 2.0 : 4.0;
    const double q = double(s.batch) * s.seqlen_q * s.heads_q * s.head_dim;
    const double kv = double(s.batch) * s.seqlen_k * s.heads_kv * s.head_dim;
    row.min_bytes = e * (2 * q + 2 * kv) + 4.0 * s.batch * s.heads_q * s.seqlen_q;
  }
  row.samples = {m.series[0].event_ms, m.series[1].event_ms};
  row.stop = to_string(m.stop);
  row.loop_s = m.loop_s;
  row.gpu_processes = m.gpu_processes;
  row.gpu_processes_expected = m.gpu_processes_expected;
  KernelFigures* figs[2] = {&row.kernel, &row.base};
  for (size_t i = 0; i < 2; ++i) {
    const KernelSeries& k = m.series[i];
    KernelFigures& f = *figs[i];
    f.name = k.kernel;
    f.fields = kernel_fields(k, m, ctx);
    std::set<std::string> names;
    for (const auto& t : k.traces)
      for (const auto& n : t.kernel_names) names.insert(short_kernel_name(n));
    f.kernel_names.assign(names.begin(), names.end());
    f.foreign_kernels = k.foreign_kernels;
    f.forbidden_symbols = k.forbidden_symbols;
    f.kernel_tree_sha256 = k.kernel_tree_sha256;
    f.kernel_tree_dir = k.kernel_tree_dir;
    f.isolated = k.isolated;
    if (!k.traces.empty()) {
      const auto [lo, hi] = std::minmax_element(k.traces.begin(), k.traces.end(),
                                                [](const CallTrace& a, const CallTrace& b) { return a.kernels < b.kernels; });
      f.kernel_count_min = lo->kernels;
      f.kernel_count_max = hi->kernels;
    }
  }
  return row;
}

void fill_versions(ComparisonReport& r) {
  r.driver_version = nvml_driver_version();
  if (r.driver_version.empty()) r.driver_version = proc_driver_version();
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) r.cuda_driver_version = v;
  v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) r.cuda_runtime_version = v;
}

std::string cuda_version_string(int v) {
  if (v <= 0) return {};
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

SuiteSpeedup suite_speedup(const ComparisonReport& r) {
  std::vector<PairedSamples> s;
  for (const auto& row : r.rows) s.push_back(row.samples);
  return bootstrap_speedup(s, r.resamples, r.seed);
}

double clock_speedup(const ComparisonRow& row, const std::string& field) {
  return ratio_or_nan(row.base.get(field), row.kernel.get(field));
}

double geomean_clock_speedup(const ComparisonReport& r, const std::string& field) {
  std::vector<double> v;
  for (const auto& row : r.rows) {
    const double s = clock_speedup(row, field);
    if (!std::isfinite(s)) return kNaN;
    v.push_back(s);
  }
  return v.empty() ? kNaN : geomean(v);
}

std::string format_table(const ComparisonReport& r, const SuiteSpeedup& s) {
  std::ostringstream o;
  o << "\nInterleaved comparison: " << r.kernel << " against base " << r.base << " on suite " << r.suite << " ("
    << r.device << ")\nspeedup = median time of base / median time of kernel (> 1: " << r.kernel
    << " is faster); intervals: 95% bootstrap; k_spd, w_spd: the same on CUPTI kernel time and wall time\n";
  o << fmt::format("{:<40} {:>10} {:>10} {:>8} {:>8} {:>9} {:>19} {:>7} {:>7} {:>8} {:>8} {:>6}\n", "scenario", "kernel_ms",
                   "base_ms", "k_TFLOPS", "b_TFLOPS", "speedup", "95% CI", "k_spd", "w_spd", "k_cv", "b_cv", "calls");
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    const double km = median(row.samples.kernel), bm = median(row.samples.base);
    o << fmt::format("{:<40} {:>10.4f} {:>10.4f} {:>8.1f} {:>8.1f} {:>9.4f}   [{:>7.4f}, {:>7.4f}] {:>7.4f} {:>7.4f} "
                     "{:>7.2f}% {:>7.2f}% {:>6}\n",
                     row.scenario, km, bm, tflops(row.flops, km * 1e-3), tflops(row.flops, bm * 1e-3),
                     s.scenarios[i].speedup, s.scenarios[i].ci95.lo, s.scenarios[i].ci95.hi,
                     clock_speedup(row, "kernel_ms"), clock_speedup(row, "wall_ms"), 100 * cv(row.samples.kernel),
                     100 * cv(row.samples.base), row.samples.kernel.size());
  }
  for (const auto& f : r.failed) o << f.id << ": FAILED: " << f.error << "\n";
  o << "geomean speedup over " << r.rows.size() << " scenarios: " << fmt::format("{:.4f}", s.geomean) << "  95% CI ["
    << fmt::format("{:.4f}", s.ci95.lo) << ", " << fmt::format("{:.4f}", s.ci95.hi) << "]  (" << s.resamples << " resamples, seed "
    << s.seed << ")\n"
    << "geomean on kernel time: " << fmt::format("{:.4f}", geomean_clock_speedup(r, "kernel_ms"))
    << ", on wall time: " << fmt::format("{:.4f}", geomean_clock_speedup(r, "wall_ms")) << "\n"
    << "wall time of the run: " << fmt::format("{:.1f}", r.wall_s) << " s\n";
  return o.str();
}

ComparisonDocument comparison_document(const ComparisonReport& r, const SuiteSpeedup& s) {
  ComparisonDocument d;
  d.kernel = r.kernel;
  d.base = r.base;
  d.suite = r.suite;
  d.device = r.device;
  d.device_sm = r.device_sm;
  d.driver_version = r.driver_version;
  d.cuda_driver_version = cuda_version_string(r.cuda_driver_version);
  d.cuda_runtime_version = cuda_version_string(r.cuda_runtime_version);
  d.peak_tflops = figure(r.peak_tflops);
  d.hbm_tbps = figure(r.hbm_tbps);
  d.noise_target = figure(r.noise_target);
  d.geomean_speedup = figure(s.geomean);
  d.geomean_ci95 = {figure(s.ci95.lo), figure(s.ci95.hi)};
  d.geomean_kernel_speedup = figure(geomean_clock_speedup(r, "kernel_ms"));
  d.geomean_wall_speedup = figure(geomean_clock_speedup(r, "wall_ms"));
  d.bootstrap_resamples = s.resamples;
  d.bootstrap_seed = s.seed;
  d.input_seed = r.input_seed;
  d.sandbox = r.sandbox;
  d.wall_s = figure(r.wall_s);
  d.shard = {r.shard_index, r.shard_count};
  d.sm_clock = sm_clock_summary(r);
  // A suite whose summary failed has no estimates: its rows are written without them (null).
  const SpeedupEstimate none{kNaN, {kNaN, kNaN}};
  for (size_t i = 0; i < r.rows.size(); ++i)
    d.scenarios.push_back(scenario_document(r.rows[i], i < s.scenarios.size() ? s.scenarios[i] : none));
  d.failed = r.failed;
  return d;
}

std::string to_json(const ComparisonReport& r, const SuiteSpeedup& s) {
  return nlohmann::json(comparison_document(r, s)).dump(1) + "\n";
}

}  // namespace attngate::bench
