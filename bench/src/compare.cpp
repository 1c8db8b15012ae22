#include "attngate/bench/compare.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace attngate::bench {

namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// JSON has no NaN or infinity: a figure that cannot be computed is written as null (nlohmann
// would do the same; being explicit keeps the files readable by strict parsers).
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

double ratio_or_nan(double num, double den) {
  return std::isfinite(num) && std::isfinite(den) && num > 0 && den > 0 ? num / den : kNaN;
}

json figures_json(const KernelFigures& k) {
  json j = json::object();
  j["name"] = k.name;
  for (const auto& [name, value] : k.fields) j[name] = num(value);
  j["kernel_names"] = k.kernel_names;
  j["kernel_count_min"] = k.kernel_count_min;
  j["kernel_count_max"] = k.kernel_count_max;
  j["kernel_count_changed"] = k.kernel_count_min != k.kernel_count_max;
  j["foreign_kernel_names"] = k.foreign_kernels;
  j["kernel_tree_sha256"] = k.kernel_tree_sha256;
  j["kernel_tree_dir"] = k.kernel_tree_dir;
  j["process"] = k.isolated ? "worker" : "in-process";
  return j;
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
  char line[512];
  std::snprintf(line, sizeof line, "%-40s %10s %10s %8s %8s %9s %19s %7s %7s %8s %8s %6s\n", "scenario", "kernel_ms",
                "base_ms", "k_TFLOPS", "b_TFLOPS", "speedup", "95% CI", "k_spd", "w_spd", "k_cv", "b_cv", "calls");
  o << line;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    const double km = median(row.samples.kernel), bm = median(row.samples.base);
    std::snprintf(line, sizeof line,
                  "%-40s %10.4f %10.4f %8.1f %8.1f %9.4f   [%7.4f, %7.4f] %7.4f %7.4f %7.2f%% %7.2f%% %6zu\n",
                  row.scenario.c_str(), km, bm, tflops(row.flops, km * 1e-3), tflops(row.flops, bm * 1e-3),
                  s.scenarios[i].speedup, s.scenarios[i].ci95.lo, s.scenarios[i].ci95.hi,
                  clock_speedup(row, "kernel_ms"), clock_speedup(row, "wall_ms"), 100 * cv(row.samples.kernel),
                  100 * cv(row.samples.base), row.samples.kernel.size());
    o << line;
  }
  for (const auto& [id, err] : r.failed) o << id << ": FAILED: " << err << "\n";
  o << "geomean speedup over " << r.rows.size() << " scenarios: " << fmt("%.4f", s.geomean) << "  95% CI ["
    << fmt("%.4f", s.ci95.lo) << ", " << fmt("%.4f", s.ci95.hi) << "]  (" << s.resamples << " resamples, seed "
    << s.seed << ")\n"
    << "geomean on kernel time: " << fmt("%.4f", geomean_clock_speedup(r, "kernel_ms"))
    << ", on wall time: " << fmt("%.4f", geomean_clock_speedup(r, "wall_ms")) << "\n"
    << "wall time of the run: " << fmt("%.1f", r.wall_s) << " s\n";
  return o.str();
}

std::string to_json(const ComparisonReport& r, const SuiteSpeedup& s) {
  json j = json::object();
  j["schema"] = kComparisonSchema;
  j["kernel"] = r.kernel;
  j["base"] = r.base;
  j["suite"] = r.suite;
  j["device"] = r.device;
  j["device_sm"] = r.device_sm;
  j["driver_version"] = r.driver_version;
  j["cuda_driver_version"] = cuda_version_string(r.cuda_driver_version);
  j["cuda_runtime_version"] = cuda_version_string(r.cuda_runtime_version);
  j["speedup_definition"] = "median untraced event time of base / of kernel; > 1 means kernel is faster";
  j["peak_tflops"] = num(r.peak_tflops);
  j["hbm_tbps"] = num(r.hbm_tbps);
  j["noise_target"] = num(r.noise_target);
  j["geomean_speedup"] = num(s.geomean);
  j["geomean_ci95"] = {num(s.ci95.lo), num(s.ci95.hi)};
  j["geomean_kernel_speedup"] = num(geomean_clock_speedup(r, "kernel_ms"));
  j["geomean_wall_speedup"] = num(geomean_clock_speedup(r, "wall_ms"));
  j["bootstrap_resamples"] = s.resamples;
  j["bootstrap_seed"] = s.seed;
  j["wall_s"] = num(r.wall_s);
  j["shard"] = {{"index", r.shard_index}, {"of", r.shard_count}};

  // The SM clock over the run: per scenario the harness reads it after warm-up and after every
  // block pair; here the spread of the per-scenario medians and what any scenario saw.
  std::vector<double> medians;
  double lowest = kNaN, device_max = kNaN;
  uint64_t reasons = 0;
  int dropped = 0, below_max = 0, with_nvml = 0;
  for (const auto& row : r.rows) {
    const KernelFigures& k = row.kernel;  // one clock per scenario: both kernels ran under it
    if (!(k.get("nvml") > 0)) continue;
    ++with_nvml;
    medians.push_back(k.get("sm_clock_mhz"));
    const double lo = k.get("sm_clock_min_mhz");
    if (!(lowest <= lo)) lowest = lo;
    device_max = k.get("sm_clock_max_mhz");
    reasons |= uint64_t(k.get("clock_event_reasons"));
    dropped += k.get("clock_dropped") > 0;
    below_max += k.get("clock_below_max") > 0;
  }
  j["sm_clock"] = {{"available", with_nvml > 0},
                   {"scenarios", with_nvml},
                   {"median_mhz", num(medians.empty() ? kNaN : median(medians))},
                   {"lowest_median_mhz", num(medians.empty() ? kNaN : min_of(medians))},
                   {"highest_median_mhz", num(medians.empty() ? kNaN : *std::max_element(medians.begin(), medians.end()))},
                   {"min_mhz", num(lowest)},
                   {"device_max_mhz", num(device_max)},
                   {"event_reasons", reasons},
                   {"scenarios_clock_dropped", dropped},
                   {"scenarios_below_max", below_max}};

  json rows = json::array();
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    const double km = median(row.samples.kernel), bm = median(row.samples.base);
    rows.push_back({{"id", row.scenario},
                    {"shape", row.summary},
                    {"flops", num(row.flops)},
                    {"min_bytes", num(row.min_bytes)},
                    {"kernel_ms", num(km)},
                    {"base_ms", num(bm)},
                    {"kernel_min_ms", num(min_of(row.samples.kernel))},
                    {"base_min_ms", num(min_of(row.samples.base))},
                    {"kernel_tflops", num(tflops(row.flops, km * 1e-3))},
                    {"base_tflops", num(tflops(row.flops, bm * 1e-3))},
                    {"speedup", num(s.scenarios[i].speedup)},
                    {"speedup_ci95", {num(s.scenarios[i].ci95.lo), num(s.scenarios[i].ci95.hi)}},
                    {"kernel_speedup", num(clock_speedup(row, "kernel_ms"))},
                    {"wall_speedup", num(clock_speedup(row, "wall_ms"))},
                    {"kernel_cv", num(cv(row.samples.kernel))},
                    {"base_cv", num(cv(row.samples.base))},
                    {"kernel_rel_noise", num(relative_noise(row.samples.kernel))},
                    {"base_rel_noise", num(relative_noise(row.samples.base))},
                    {"calls", row.samples.kernel.size()},
                    {"stop", row.stop},
                    {"loop_s", num(row.loop_s)},
                    {"gpu_processes", row.gpu_processes < 0 ? json(nullptr) : json(row.gpu_processes)},
                    {"gpu_processes_expected", row.gpu_processes_expected},
                    {"tracing_overhead_us", num(row.kernel.get("tracing_overhead_us"))},
                    {"cupti_minus_event_us", num(row.kernel.get("cupti_minus_event_us"))},
                    {"kernel_timing", figures_json(row.kernel)},
                    {"base_timing", figures_json(row.base)}});
  }
  j["scenarios"] = std::move(rows);
  json failed = json::array();
  for (const auto& [id, err] : r.failed) failed.push_back({{"id", id}, {"error", err}});
  j["failed"] = std::move(failed);
  return j.dump(1) + "\n";
}

}  // namespace attngate::bench
