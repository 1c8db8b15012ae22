// attngate_bench: one Google Benchmark per (kernel, scenario) of a YAML suite, or, with
// --compare=KERNEL,BASE, one per scenario timing both kernels interleaved, followed by the
// suite's geometric-mean speedup. Method and fields: bench/README.md.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "attngate/bench/compare.hpp"
#include "attngate/bench/device_peak.hpp"
#include "attngate/bench/harness.hpp"
#include "attngate/bench/report.hpp"
#include "attngate/kernel_status.hpp"
#include "attngate/plugin_loader.hpp"
#include "attngate/registry.hpp"
#include "attngate/scenario.hpp"
#include "attngate/shard.hpp"
#include "attngate/verify/gpu_pinning.hpp"
#include "attngate/verify/problem.hpp"
#include "attngate/verify/remote.hpp"

#ifndef ATTNGATE_DEFAULT_SCENARIO_DIR
#error "ATTNGATE_DEFAULT_SCENARIO_DIR must be defined by the build"
#endif

namespace {

using namespace attngate;
using namespace attngate::bench;

struct Options {
  std::filesystem::path scenario_dir = ATTNGATE_DEFAULT_SCENARIO_DIR;
  std::string suite = "gate";
  std::string compare_kernel, compare_base;  // empty kernel: no comparison
  std::string compare_out;
  double noise_target = 0.005;
  double time_cap_s = 1.0;
  int min_samples = 20;
  int input_sets = 3;
  uint64_t seed = 0x5EEDu;
  double peak_tflops = 0;  // 0: look the device up
  int bootstrap_resamples = 2000;
  bool print_fields = false;
  int clock_retries = 2;
  double clock_tolerance = 0.03;
  double cooldown_s = 2.0;
  double idle_ratio = 0.5;
  ShardSpec shard;  // --shard=i/N: only this shard of the suite (ci/bench_all_gpus.py, CI matrices)
};

const char* kUsage =
    "attngate_bench [Google Benchmark flags] [attngate flags]\n"
    "  --scenarios=DIR           directory of the YAML suites (default: the shipped scenarios/)\n"
    "  --suite=NAME              suite to time (default gate)\n"
    "  --compare=KERNEL[,BASE]   time KERNEL and BASE (default initial) interleaved per scenario and\n"
    "                            report the speedup time_BASE/time_KERNEL and its suite geomean\n"
    "  --compare_out=FILE        write the comparison as JSON\n"
    "  --noise-target=F          stop a benchmark once the 95% interval of every median is within\n"
    "                            +-F of it (default 0.005)\n"
    "  --time-cap-s=S            ...or after S seconds of measuring (default 1.0; per benchmark)\n"
    "  --min-samples=N           untraced calls per kernel before the noise rule may stop (20)\n"
    "  --input-sets=N            input sets rotated through (default 3; fewer if memory is short)\n"
    "  --seed=N                  base seed of the inputs\n"
    "  --shard=i/N               time only shard i of N of the suite (deterministic split by FLOPs)\n"
    "  --peak-tflops=F           dense bf16 peak for pct_peak (default: looked up by device name)\n"
    "  --bootstrap-resamples=N   resamples of the comparison's intervals (default 2000)\n"
    "  --idle-ratio=R            before each timed call the GPU idles R x the previous call's time\n"
    "                            (default 0.5), so sustained load does not reach the power cap\n"
    "  --clock-retries=N         plain timings only: when an SM clock reading of a measurement was\n"
    "                            more than --clock-tolerance (default 0.03) below the device's\n"
    "                            maximum (power or thermal capping), idle --cooldown-s (default 2)\n"
    "                            and measure again, up to N times (default 2); the measurement with\n"
    "                            the highest lowest reading is reported (interleaved comparisons\n"
    "                            cancel clock drift and do not need this)\n"
    "  --print-fields            print the names of the JSON counters and exit\n";

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "attngate_bench: " << msg << "\n" << kUsage;
  std::exit(2);
}

double parse_double(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(d >= 0)) usage_error(flag + "=" + v + " is not a non-negative number");
  return d;
}

long long parse_int(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 0);
  if (v.empty() || *end != '\0' || n < 0) usage_error(flag + "=" + v + " is not a non-negative integer");
  return n;
}

// Takes attngate's own flags out of argv (so Google Benchmark sees only its own); '-' and '_' are
// interchangeable in their names.
Options parse_own_flags(int& argc, char** argv) {
  Options o;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string name = a, value;
    if (const auto eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    for (char& c : name) c = c == '_' ? '-' : c;
    const bool has_value = a.find('=') != std::string::npos;
    auto need = [&] {
      if (!has_value) usage_error(name + " needs a value (" + name + "=...)");
    };
    if (name == "--scenarios") { need(); o.scenario_dir = value; }
    else if (name == "--suite") { need(); o.suite = value; }
    else if (name == "--compare") {
      need();
      const auto comma = value.find(',');
      o.compare_kernel = value.substr(0, comma);
      o.compare_base = comma == std::string::npos ? "initial" : value.substr(comma + 1);
      if (o.compare_kernel.empty() || o.compare_base.empty()) usage_error("--compare=KERNEL[,BASE]");
    }
    else if (name == "--compare-out") { need(); o.compare_out = value; }
    else if (name == "--noise-target") { need(); o.noise_target = parse_double(name, value); }
    else if (name == "--time-cap-s") { need(); o.time_cap_s = parse_double(name, value); }
    else if (name == "--min-samples") { need(); o.min_samples = int(parse_int(name, value)); }
    else if (name == "--input-sets") { need(); o.input_sets = std::max(1, int(parse_int(name, value))); }
    else if (name == "--seed") { need(); o.seed = uint64_t(parse_int(name, value)); }
    else if (name == "--peak-tflops") { need(); o.peak_tflops = parse_double(name, value); }
    else if (name == "--bootstrap-resamples") { need(); o.bootstrap_resamples = std::max(1, int(parse_int(name, value))); }
    else if (name == "--print-fields") { o.print_fields = true; }
    else if (name == "--clock-retries") { need(); o.clock_retries = int(parse_int(name, value)); }
    else if (name == "--clock-tolerance") { need(); o.clock_tolerance = parse_double(name, value); }
    else if (name == "--cooldown-s") { need(); o.cooldown_s = parse_double(name, value); }
    else if (name == "--idle-ratio") { need(); o.idle_ratio = parse_double(name, value); }
    else if (name == "--shard") {
      need();
      try { o.shard = parse_shard(value); } catch (const std::invalid_argument& e) { usage_error(e.what()); }
    }
    else if (name == "--help" || name == "-h") { std::cout << kUsage << "\nGoogle Benchmark flags:\n"; argv[out++] = argv[i]; }
    else { argv[out++] = argv[i]; }
  }
  argc = out;
  argv[argc] = nullptr;
  return o;
}

// The reference kernel is a slow fp32 check, meant for the tiny smoke shapes only.
bool wanted(const KernelInfo& k, const Suite& suite, const Scenario& s) {
  if (!verify::planted_cheat_allowed(k, suite)) return false;  // cheats run on the adversarial suite only
  if (k.name == "reference" && suite.name != "smoke") return false;
  return k.supports(s.dtype, s.head_dim);
}

int g_failures = 0;
ComparisonReport g_report;

void set_fields(benchmark::State& st, const Fields& fields, const std::string& prefix = "") {
  for (const auto& [name, value] : fields) st.counters[prefix + name] = value;
}

struct ClockSettle {
  int retries = 0;
  double tolerance = 0;
  double cooldown_s = 0;
};

// A plain timing is an absolute time, which moves with the SM clock: the same kernel measured
// 8% slower while the H200 capped its clock under load. When any reading during the measurement
// was below the tolerance the GPU idles and the scenario is measured again, keeping the
// measurement whose lowest reading was highest (readings are sparse: the median can miss a cap).
bool clock_capped(const Measurement& m, double tolerance) {
  return m.clock.available && m.clock.device_max_mhz > 0 &&
         m.clock.min_mhz < (1.0 - tolerance) * m.clock.device_max_mhz;
}

void run_single(benchmark::State& st, Harness& h, const KernelInfo* k, const Scenario& s,
                const MeasureOptions& mo, const ReportContext& ctx, const ClockSettle& settle) {
  std::optional<Measurement> m;
  int retries = 0;
  for (auto _ : st) {
    try {
      m = h.measure(s, {k}, mo);
      while (retries < settle.retries && clock_capped(*m, settle.tolerance)) {
        ++retries;
        std::this_thread::sleep_for(std::chrono::duration<double>(settle.cooldown_s));
        Measurement again = h.measure(s, {k}, mo);
        if (again.clock.min_mhz > m->clock.min_mhz) m = std::move(again);
      }
    } catch (const std::exception& e) {
      if (auto why = attngate::unsupported_reason(e)) {
        st.SkipWithError(("unsupported: " + *why).c_str());
        break;
      }
      ++g_failures;
      st.SkipWithError(e.what());
      break;
    }
    st.SetIterationTime(median(m->series[0].event_ms) * 1e-3);
  }
  if (!m) return;
  set_fields(st, kernel_fields(m->series[0], *m, ctx));
  st.counters["clock_retries"] = retries;
  st.SetLabel(kernel_label(m->series[0]));
}

void run_compare(benchmark::State& st, Harness& h, const KernelInfo* k, const KernelInfo* base, const Scenario& s,
                 const MeasureOptions& mo, const ReportContext& ctx, int resamples, uint64_t seed) {
  std::optional<Measurement> m;
  for (auto _ : st) {
    try {
      m = h.measure(s, {k, base}, mo);
    } catch (const std::exception& e) {
      if (auto why = attngate::unsupported_reason(e)) {
        st.SkipWithError(("unsupported: " + *why).c_str());
        break;
      }
      ++g_failures;
      g_report.failed.emplace_back(s.id, e.what());
      st.SkipWithError(e.what());
      break;
    }
    st.SetIterationTime(median(m->series[0].event_ms) * 1e-3);
  }
  if (!m) return;
  const KernelSeries& ks = m->series[0];
  const KernelSeries& bs = m->series[1];
  ComparisonRow row = comparison_row(s, *m, ctx);
  set_fields(st, row.kernel.fields);
  set_fields(st, comparison_fields(ks, bs, ctx, resamples, seed));
  st.SetLabel(k->name + ": " + kernel_label(ks) + " | " + base->name + ": " + kernel_label(bs));
  g_report.rows.push_back(std::move(row));
}

int run(int argc, char** argv) {
  if (!attngate::plugin::load_plugins(argc, argv)) return 2;
  try {
    attngate::verify::remote::load_workers(argc, argv);  // --worker=PATH: kernels in their own process
  } catch (const std::exception& e) {
    std::cerr << "attngate_bench: " << e.what() << "\n";
    return 2;
  }
  const auto t_start = std::chrono::steady_clock::now();
  Options opt = parse_own_flags(argc, argv);
  if (opt.print_fields) {
    for (const auto& n : kernel_field_names()) std::cout << n << "\n";
    if (opt.compare_kernel.empty()) std::cout << "clock_retries\n";
    if (!opt.compare_kernel.empty())
      for (const auto& n : comparison_field_names()) std::cout << n << "\n";
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  const auto suites = load_suite_dir(opt.scenario_dir);
  const Suite* suite = nullptr;
  std::string known;
  for (const auto& s : suites) {
    if (s.name == opt.suite) suite = &s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  if (!suite) usage_error("no suite '" + opt.suite + "' in " + opt.scenario_dir.string() + " (have: " + known + ")");
  Suite sharded = *suite;
  sharded.scenarios = shard_scenarios(suite->scenarios, opt.shard);
  suite = &sharded;

  // CTest's smoke test counts this line as a skip (SKIP_REGULAR_EXPRESSION), never as a pass.
  const verify::DeviceStatus dev = verify::probe_device();
  if (!dev.available) {
    std::cout << "attngate_bench: SKIPPED: needs a CUDA GPU: " << dev.why << std::endl;
    return 0;
  }

  Harness harness(0);
  const DevicePeak looked_up = lookup_peak(harness.device_name());
  const double peak = opt.peak_tflops > 0 ? opt.peak_tflops : looked_up.bf16_dense_tflops;
  benchmark::AddCustomContext("attngate_device", harness.device_name());
  benchmark::AddCustomContext("attngate_suite", suite->name);
  benchmark::AddCustomContext("attngate_peak_tflops", std::to_string(peak));
  benchmark::AddCustomContext("attngate_peak_source", opt.peak_tflops > 0 ? "--peak-tflops" : looked_up.source);
  benchmark::AddCustomContext("attngate_noise_target", std::to_string(opt.noise_target));
  benchmark::AddCustomContext("attngate_time_cap_s", std::to_string(opt.time_cap_s));
  benchmark::AddCustomContext("attngate_l2_flush_bytes", std::to_string(harness.flush_bytes()));
  benchmark::AddCustomContext("attngate_nvml", harness.clock().available() ? "available" : harness.clock().why());
  benchmark::AddCustomContext("attngate_manual_time", "median untraced CUDA-event time of one call");
  if (!harness.clock().available()) std::cerr << "attngate_bench: no SM clock readings: " << harness.clock().why() << "\n";

  MeasureOptions mo;
  mo.stop.noise_target = opt.noise_target;
  mo.stop.time_cap_s = opt.time_cap_s;
  mo.stop.min_samples = opt.min_samples;
  mo.input_sets = opt.input_sets;
  mo.seed = opt.seed;
  mo.idle_ratio = opt.idle_ratio;
  benchmark::AddCustomContext("attngate_idle_ratio", std::to_string(opt.idle_ratio));

  const ClockSettle settle{opt.clock_retries, opt.clock_tolerance, opt.cooldown_s};
  benchmark::AddCustomContext("attngate_clock_settle",
                              "plain timings re-measured up to " + std::to_string(settle.retries) +
                                  " times after a " + std::to_string(settle.cooldown_s) +
                                  " s idle when the median SM clock was over " +
                                  std::to_string(100 * settle.tolerance) + "% below the maximum");
  const auto& reg = KernelRegistry::instance();
  auto usable = [&](const KernelInfo& k) {
    if (dev.sm >= k.min_sm) return true;
    std::cerr << "attngate_bench: not timing " << k.name << ": needs compute capability " << k.min_sm / 10 << "."
              << k.min_sm % 10 << ", " << dev.name << " has " << dev.sm / 10 << "." << dev.sm % 10 << "\n";
    return false;
  };
  int registered = 0;
  if (!opt.compare_kernel.empty()) {
    const KernelInfo* k = &reg.get(opt.compare_kernel);
    const KernelInfo* base = &reg.get(opt.compare_base);
    g_report.kernel = k->name;
    g_report.base = base->name;
    g_report.suite = suite->name;
    g_report.shard_index = opt.shard.index;
    g_report.shard_count = opt.shard.count;
    g_report.device = harness.device_name();
    g_report.device_sm = harness.device_sm();
    fill_versions(g_report);
    g_report.peak_tflops = peak;
    g_report.hbm_tbps = looked_up.hbm_tbps;
    g_report.noise_target = opt.noise_target;
    g_report.resamples = opt.bootstrap_resamples;
    if (usable(*k) && usable(*base)) {
      for (const Scenario& s : suite->scenarios) {
        if (!wanted(*k, *suite, s) || !wanted(*base, *suite, s)) continue;
        const ReportContext ctx{s.flops(), peak};
        const std::string name = k->name + "_vs_" + base->name + "/" + s.id;
        benchmark::RegisterBenchmark(name.c_str(), [&harness, k, base, s, mo, ctx, r = opt.bootstrap_resamples,
                                                    seed = g_report.seed](benchmark::State& st) {
          run_compare(st, harness, k, base, s, mo, ctx, r, seed);
        })->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
        ++registered;
      }
    }
  } else {
    for (const KernelInfo* k : reg.all()) {
      if (!usable(*k)) continue;
      for (const Scenario& s : suite->scenarios) {
        if (!wanted(*k, *suite, s)) continue;
        const ReportContext ctx{s.flops(), peak};
        const std::string name = k->name + "/" + s.id;
        benchmark::RegisterBenchmark(name.c_str(), [&harness, k, s, mo, ctx, settle](benchmark::State& st) {
          run_single(st, harness, k, s, mo, ctx, settle);
        })->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
        ++registered;
      }
    }
  }
  if (registered == 0) {
    std::cerr << "attngate_bench: nothing to time on suite " << suite->name << "\n";
    return 1;
  }

  benchmark::RunSpecifiedBenchmarks();

  if (!opt.compare_kernel.empty()) {
    g_report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    // Written also when no scenario could be compared: its failed[] says why (the gate reads it).
    SuiteSpeedup s{};
    if (g_report.rows.empty()) {
      std::cerr << "attngate_bench: no scenario was compared\n";
      ++g_failures;
    } else {
      s = suite_speedup(g_report);
      std::cout << format_table(g_report, s) << std::flush;
    }
    {
      if (!opt.compare_out.empty()) {
        // Through a rename, so a reader (the gate's report) never sees half a file.
        const std::string tmp = opt.compare_out + ".tmp";
        {
          std::ofstream f(tmp);
          f << to_json(g_report, s);
          if (!f.flush()) throw std::runtime_error("cannot write " + tmp);
        }
        std::filesystem::rename(tmp, opt.compare_out);
      }
    }
  }
  benchmark::Shutdown();
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    verify::pin_to_ctest_gpu();
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "attngate_bench: " << e.what() << "\n";
    return 1;
  }
}
