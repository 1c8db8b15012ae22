// attngate_bench: one Google Benchmark per (kernel, scenario) of a YAML suite, or, with
// --compare=KERNEL,BASE, one per scenario timing both kernels interleaved, followed by the
// suite's geometric-mean speedup. Method and fields: bench/README.md.
#include <benchmark/benchmark.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "attngate/bench/compare.hpp"
#include "attngate/bench/gbench_rounds.hpp"
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
#include "attngate/verify/start_record.hpp"
#include "attngate/worker/sandbox.hpp"
#include "attngate/verify/json_document.hpp"

#ifndef ATTNGATE_DEFAULT_SCENARIO_DIR
#error "ATTNGATE_DEFAULT_SCENARIO_DIR must be defined by the build"
#endif

namespace {

using namespace attngate;
using namespace attngate::bench;

struct Options {
  std::filesystem::path scenario_dir = ATTNGATE_DEFAULT_SCENARIO_DIR;
  std::string suite = "gate";
  std::vector<std::string> shapes;  // --shape: an ad-hoc suite instead of --suite
  std::string rounds_out;           // --rounds-out: every timed call as a repetition (gbench_rounds.hpp)
  std::string compare_kernel, compare_base;  // empty kernel: no comparison
  std::string compare_out;
  std::string start_record;  // written when the run starts, again when it skips (verify/start_record.hpp)
  double noise_target = 0.005;
  double time_cap_s = 1.0;
  int min_samples = 20;
  int input_sets = 3;
  std::optional<uint64_t> seed;  // none: drawn at run time (and recorded for replay)
  double peak_tflops = 0;  // 0: look the device up
  int bootstrap_resamples = 2000;
  bool print_fields = false;
  int clock_retries = 2;
  double clock_tolerance = 0.03;
  double cooldown_s = 2.0;
  double idle_ratio = 0.5;
  double baseline_alone_s = 0.05;  // per scenario, the baseline alone before any other worker exists (0: not)
  ShardSpec shard;  // --shard=i/N: only this shard of the suite (ci/bench_all_gpus.py, CI matrices)
};

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "attngate_bench: " << msg << "\n(attngate_bench --help lists the flags)\n";
  std::exit(2);
}

// The checks of the old hand-written parser, as CLI11 validators: a value is a non-negative number
// (strtod, NaN refused) or a non-negative integer (strtoll base 0: 0x5EED works).
const CLI::Validator kNonNegativeNumber(
    [](std::string& v) -> std::string {
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      return !v.empty() && *end == '\0' && d >= 0 ? "" : v + " is not a non-negative number";
    },
    "F>=0");
const CLI::Validator kNonNegativeInteger(
    [](std::string& v) -> std::string {
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 0);
      return !v.empty() && *end == '\0' && n >= 0 ? "" : v + " is not a non-negative integer";
    },
    "N>=0");

// Takes attngate's own flags out of argv (so Google Benchmark sees only its own); '-' and '_' are
// interchangeable in their names: an argument whose name, with '_' read as '-', is one of ours is
// rewritten to that spelling before CLI11 parses, and everything CLI11 does not know (allow_extras:
// --benchmark_*, --help's second half) is handed on to benchmark::Initialize in its order.
Options parse_own_flags(int& argc, char** argv) {
  Options o;
  CLI::App app{"attngate_bench: one Google Benchmark per (kernel, scenario) of a YAML suite, or an interleaved "
               "comparison of two kernels (bench/README.md). Google Benchmark's flags pass through.",
               "attngate_bench"};
  app.set_help_flag();  // --help also goes on to Google Benchmark, which lists its flags and exits
  app.footer("'-' and '_' are interchangeable in these flags' names (--compare_out, --noise_target, ...).");
  app.allow_extras();
  bool help = false;
  std::string scenario_dir = o.scenario_dir.string(), compare, shard;
  app.add_flag("-h,--help", help, "Print these flags, then Google Benchmark's, and exit");
  app.add_option("--scenarios", scenario_dir, "Directory of the YAML suites (default: the shipped scenarios/)");
  app.add_option("--suite", o.suite, "Suite to time (default gate)");
  app.add_option("--shape", o.shapes,
                 "Time this ad-hoc shape instead of a suite (repeatable; e.g. b=4,sq=8192,sk=8192,hq=32,hkv=8,d=128,"
                 "causal,bf16; scenarios/README.md)");
  app.add_option("--compare", compare,
                 "KERNEL[,BASE]: time KERNEL and BASE (default initial) interleaved per scenario and report the "
                 "speedup time_BASE/time_KERNEL and its suite geomean");
  app.add_option("--compare-out", o.compare_out, "Write the comparison as JSON to FILE (also --compare_out)");
  app.add_option("--start-record", o.start_record,
                 "Write FILE (attngate.start_record/1: pid, start time, the comparison it owes) when the run starts, "
                 "and again when it skips");
  app.add_option("--rounds-out", o.rounds_out,
                 "Write every timed call as a repetition in Google Benchmark's JSON to FILE, for its tools/compare.py "
                 "(real_time: the judge's clock; cpu_time: the judge's host clock of the call)");
  app.add_option("--noise-target", o.noise_target,
                 "Stop a benchmark once the 95% interval of every median is within +-F of it (default 0.005)")
      ->check(kNonNegativeNumber);
  app.add_option("--time-cap-s", o.time_cap_s, "...or after S seconds of measuring (default 1.0; per benchmark)")
      ->check(kNonNegativeNumber);
  app.add_option("--min-samples", o.min_samples, "Untraced calls per kernel before the noise rule may stop (20)")
      ->check(kNonNegativeInteger);
  app.add_option("--input-sets", o.input_sets, "Input sets rotated through (default 3; fewer if memory is short)")
      ->check(kNonNegativeInteger);
  app.add_option("--seed", o.seed, "Base seed of the inputs (default: drawn at run time; the comparison records it)")
      ->check(kNonNegativeInteger);
  app.add_option("--shard", shard, "i/N: time only shard i of N of the suite (deterministic split by FLOPs)");
  app.add_option("--peak-tflops", o.peak_tflops, "Dense bf16 peak for pct_peak (default: looked up by device name)")
      ->check(kNonNegativeNumber);
  app.add_option("--bootstrap-resamples", o.bootstrap_resamples,
                 "Resamples of the comparison's intervals (default 2000)")
      ->check(kNonNegativeInteger);
  app.add_option("--baseline-alone-s", o.baseline_alone_s,
                 "In a comparison whose base runs in the first worker: time the base alone on every scenario for S "
                 "seconds before any other worker starts (default 0.05; 0: not), for BASELINE_DISTURBED")
      ->check(kNonNegativeNumber);
  app.add_option("--idle-ratio", o.idle_ratio,
                 "Before each timed call the GPU idles R x the previous call's time (default 0.5), so sustained "
                 "load does not reach the power cap")
      ->check(kNonNegativeNumber);
  app.add_option("--clock-retries", o.clock_retries,
                 "Plain timings only: when an SM clock reading of a measurement was more than --clock-tolerance "
                 "below the device's maximum (power or thermal capping), idle --cooldown-s and measure again, up "
                 "to N times (default 2); the measurement with the highest lowest reading is reported "
                 "(interleaved comparisons cancel clock drift and do not need this)")
      ->check(kNonNegativeInteger);
  app.add_option("--clock-tolerance", o.clock_tolerance, "See --clock-retries (default 0.03)")
      ->check(kNonNegativeNumber);
  app.add_option("--cooldown-s", o.cooldown_s, "See --clock-retries (default 2)")->check(kNonNegativeNumber);
  app.add_flag("--print-fields", o.print_fields, "Print the names of the JSON counters and exit");

  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a.rfind("--", 0) != 0) continue;
    const size_t eq = a.find('=');
    std::string name = a.substr(0, eq);
    for (char& c : name) c = c == '_' ? '-' : c;
    if (app.get_option_no_throw(name) != nullptr) a = name + (eq == std::string::npos ? "" : a.substr(eq));
  }
  std::vector<const char*> ptrs;
  for (const auto& a : args) ptrs.push_back(a.c_str());
  try {
    app.parse(int(ptrs.size()), ptrs.data());
  } catch (const CLI::ParseError& e) {
    usage_error(e.what());
  }
  o.scenario_dir = scenario_dir;
  if (app.count("--compare") > 0) {
    const auto comma = compare.find(',');
    o.compare_kernel = compare.substr(0, comma);
    o.compare_base = comma == std::string::npos ? "initial" : compare.substr(comma + 1);
    if (o.compare_kernel.empty() || o.compare_base.empty()) usage_error("--compare=KERNEL[,BASE]");
  }
  if (app.count("--shard") > 0) {
    try { o.shard = parse_shard(shard); } catch (const std::invalid_argument& e) { usage_error(e.what()); }
  }
  if (!o.shapes.empty()) {  // a bad shape is a usage error here, before any device is looked for
    try { adhoc_suite(o.shapes); } catch (const ScenarioError& e) { usage_error(e.what()); }
  }
  o.input_sets = std::max(1, o.input_sets);
  o.bootstrap_resamples = std::max(1, o.bootstrap_resamples);

  // What is left goes to Google Benchmark: argv[0], the extras in their order, and --help after ours.
  static std::vector<std::string> rest;  // argv points into it until the process ends
  rest = app.remaining();
  for (const auto& r : rest)  // Google Benchmark's flags are --benchmark_* and --v
    if (r.rfind("--benchmark_", 0) != 0 && r != "--v" && r.rfind("--v=", 0) != 0)
      usage_error("unknown argument '" + r + "' (Google Benchmark's flags start with --benchmark_)");
  if (help) {
    std::cout << app.help() << "\nGoogle Benchmark flags:\n";
    rest.push_back("--help");
  }
  argc = 1;
  for (auto& r : rest) argv[argc++] = r.data();
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

// Every timed call of every (kernel, scenario), for --rounds-out.
std::vector<RoundSeries> g_rounds;
void keep_rounds(const KernelSeries& k, const Scenario& s, const std::string& suffix = "") {
  g_rounds.push_back({k.kernel + suffix + "/" + s.id, k.event_ms, k.wall_ms});
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
  keep_rounds(m->series[0], s);
  set_fields(st, kernel_fields(m->series[0], *m, ctx));
  st.counters["clock_retries"] = retries;
  st.SetLabel(kernel_label(m->series[0]));
}

// The base's median time per scenario measured before any other worker existed (BASELINE_DISTURBED:
// its times in the comparison must match these). Work queued by another process's context can land
// inside a long call of the baseline and slow its every clock alike; nothing but this comparison
// shows that.
struct BaselineAlone {
  double event_ms = 0, rel_noise = 0;
};
std::map<std::string, BaselineAlone> g_baseline_alone;

// How far a comparison run is, in `<compare_out>.progress` (TimingProgress); written through a
// rename after every scenario, whatever its outcome.
struct ProgressFile {
  std::string path;  // empty: none
  TimingProgress now;
  // Display only: a file that cannot be written is skipped, never an error of the run.
  void finished(const std::string& scenario) noexcept {
    if (path.empty()) return;
    try {
      ++now.done;
      now.scenario = scenario;
      write_file_atomically(path, nlohmann::json(now).dump() + "\n");
    } catch (const std::exception&) {
    }
  }
};
ProgressFile g_progress;

// Files the scenario as finished on every way out of run_compare.
struct FinishedScenario {
  const std::string& id;
  ~FinishedScenario() { g_progress.finished(id); }
};

void run_compare(benchmark::State& st, Harness& h, const KernelInfo* k, const KernelInfo* base, const Scenario& s,
                 const MeasureOptions& mo, const ReportContext& ctx, int resamples, uint64_t seed) {
  const FinishedScenario progress{s.id};
  std::optional<Measurement> m;
  for (auto _ : st) {
    try {
      MeasureOptions with_base = mo;
      with_base.handoff_reference = 1;  // the baseline's worker calibrates the round trip, never the kernel's
      m = h.measure(s, {k, base}, with_base);
    } catch (const std::exception& e) {
      if (auto why = attngate::unsupported_reason(e)) {
        st.SkipWithError(("unsupported: " + *why).c_str());
        break;
      }
      ++g_failures;
      const auto* check = dynamic_cast<const TimedRunCheckError*>(&e);
      g_report.failed.push_back({s.id, check ? check->kind() : failure_kind::kError, e.what()});
      st.SkipWithError(e.what());
      break;
    }
    st.SetIterationTime(median(m->series[0].event_ms) * 1e-3);
  }
  if (!m) return;
  // Figures that cannot be summarized fail this scenario, named in failed[]; they never end the run
  // before the document is written (the gate must read why).
  try {
    const KernelSeries& ks = m->series[0];
    const KernelSeries& bs = m->series[1];
    ComparisonRow row = comparison_row(s, *m, ctx);
    if (auto alone = g_baseline_alone.find(s.id); alone != g_baseline_alone.end()) {
      row.base.fields.push_back({"alone_event_ms", alone->second.event_ms});
      row.base.fields.push_back({"alone_rel_noise", alone->second.rel_noise});
    }
    const Fields compared = comparison_fields(ks, bs, ctx, resamples, seed);
    set_fields(st, row.kernel.fields);
    set_fields(st, compared);
    st.SetLabel(k->name + ": " + kernel_label(ks) + " | " + base->name + ": " + kernel_label(bs));
    keep_rounds(ks, s);
    keep_rounds(bs, s, bs.kernel == ks.kernel ? "_base" : "");  // an A/A run keeps its two series apart
    g_report.rows.push_back(std::move(row));
  } catch (const std::exception& e) {
    ++g_failures;
    const std::string why = std::string("summary of the timed calls: ") + e.what();
    g_report.failed.push_back({s.id, failure_kind::kSummary, why});
    st.SkipWithError(why.c_str());
  }
}

// The suite's policy (gate.yaml settings.worker_clock_trust_us): how far the judge's clock of the
// second worker may follow that worker's own word about its round trip (MeasureOptions). Absent: 0.
double worker_clock_trust_us(const Suite& suite) {
  const auto it = suite.settings.find("worker_clock_trust_us");
  if (it == suite.settings.end()) return 0;
  char* end = nullptr;
  const double us = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !std::isfinite(us) || us < 0)
    usage_error("suite " + suite.name + ": settings.worker_clock_trust_us '" + it->second +
                "' is not a non-negative number of microseconds");
  return us;
}

void measure_baseline_alone(Harness& harness, const KernelInfo& base, const Suite& suite, const Options& opt) {
  MeasureOptions mo;
  mo.stop.noise_target = opt.noise_target;
  mo.stop.time_cap_s = opt.baseline_alone_s;
  mo.stop.min_samples = 8;
  mo.warmups = 1;
  mo.min_traced = mo.max_traced = 0;
  mo.input_sets = 1;
  mo.check_timed_run = false;
  mo.check_every = 0;
  mo.idle_ratio = opt.idle_ratio;
  mo.seed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  for (const Scenario& s : suite.scenarios) {
    if (!wanted(base, suite, s)) continue;
    try {
      const Measurement m = harness.measure(s, {&base}, mo);
      g_baseline_alone[s.id] = {median(m.series[0].event_ms), relative_noise(m.series[0].event_ms)};
    } catch (const std::exception& e) {
      std::cerr << "attngate_bench: " << base.name << " alone on " << s.id << ": " << e.what() << "\n";
    }
  }
}

// What the judge saw of the workers' seal, and whether the GPU time-slices the processes' contexts:
// the judge's clock and the snapshot at its stop rest on no two contexts running at once, which an
// MPS server would change.
void record_seal_and_time_slicing(SandboxRecord& r) {
  std::vector<std::string> unsealed;
  for (const auto& p : attngate::verify::remote::seal_problems())
    if (!p.empty()) unsealed.push_back(p);
  std::string detail;
  for (const auto& u : unsealed) detail += (detail.empty() ? "" : "; ") + u;
  r.mechanisms.push_back({"workers_sealed", unsealed.empty(),
                          unsealed.empty() ? "NoNewPrivs 1, Seccomp 2, CapEff 0 seen on every worker" : detail});
  std::string mps;
  std::error_code ec;  // processes come and go while /proc is listed
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    std::ifstream comm(it->path() / "comm");
    std::string name;
    if (comm && std::getline(comm, name) && name.rfind("nvidia-cuda-mps", 0) == 0)
      mps = name + " (pid " + it->path().filename().string() + ")";
  }
  r.mechanisms.push_back({"time_slicing", mps.empty(), mps.empty() ? "no MPS server running" : mps + " is running"});
}

// Starts the workers in the order given. When the comparison's base runs in the first one, the
// round trip to it is measured before any other worker exists (Harness::calibrate_solo_handoff):
// the judge's clock then rests on a figure no other process could disturb.
bool start_workers(const std::vector<std::string>& paths, Harness& harness, const Options& opt, const Suite& suite) {
  try {
    for (size_t i = 0; i < paths.size(); ++i) {
      attngate::verify::remote::start_worker(paths[i]);
      const KernelInfo* base = opt.compare_base.empty() ? nullptr : KernelRegistry::instance().find(opt.compare_base);
      if (i != 0 || !base) continue;
      const double ms = harness.calibrate_solo_handoff(*base, 50);
      if (ms <= 0) continue;  // the base runs in this process
      std::cerr << "attngate_bench: round trip to " << base->name << "'s worker, alone: " << 1e3 * ms << " us\n";
      if (opt.baseline_alone_s > 0) measure_baseline_alone(harness, *base, suite, opt);
    }
  } catch (const std::exception& e) {
    std::cerr << "attngate_bench: " << e.what() << "\n";
    return false;
  }
  return true;
}

int run(int argc, char** argv) {
  if (!attngate::plugin::load_plugins(argc, argv)) return 2;
  // --worker=PATH: kernels in their own process, started once the harness exists (start_workers).
  const std::vector<std::string> workers = attngate::verify::remote::take_worker_args(argc, argv);
  const auto t_start = std::chrono::steady_clock::now();
  Options opt = parse_own_flags(argc, argv);
  if (opt.print_fields) {
    for (const auto& n : kernel_field_names()) std::cout << n << "\n";
    if (opt.compare_kernel.empty()) std::cout << "clock_retries\n";
    if (!opt.compare_kernel.empty())
      for (const auto& n : comparison_field_names()) std::cout << n << "\n";
    return 0;
  }
  // The gate's gate.performance says that it started and whether it skipped, so that the gate's
  // report can tell a run that did not start from one that crashed, timed out or had no GPU.
  verify::StartRecorder started(opt.start_record, opt.compare_out.empty() ? std::vector<std::string>{}
                                                  : std::vector{std::filesystem::path(opt.compare_out).filename().string()});
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  const auto suites = opt.shapes.empty() ? load_suite_dir(opt.scenario_dir) : std::vector<Suite>{adhoc_suite(opt.shapes)};
  const Suite* suite = nullptr;
  std::string known;
  for (const auto& s : suites) {
    if (s.name == opt.suite || !opt.shapes.empty()) suite = &s;
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
    started.skipped("needs a CUDA GPU: " + dev.why);
    return 0;
  }

  Harness harness(0);
  if (!start_workers(workers, harness, opt, *suite)) return 2;
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
  mo.worker_clock_trust_ms = 1e-3 * worker_clock_trust_us(*suite);
  benchmark::AddCustomContext("attngate_worker_clock_trust_us", std::to_string(1e3 * mo.worker_clock_trust_ms));
  // Drawn now, so that no output can be prepared for the timed inputs; printed and recorded for replay.
  mo.seed = opt.seed ? *opt.seed : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  std::cerr << "attngate_bench: input seed " << mo.seed << " (replay with --seed=" << mo.seed << ")\n";
  benchmark::AddCustomContext("attngate_input_seed", std::to_string(mo.seed));
  g_report.input_seed = mo.seed;
  g_report.sandbox.enabled = attngate::verify::remote::sandbox_enabled();
  for (const auto& m : attngate::sandbox::probe_sandbox().mechanisms)
    g_report.sandbox.mechanisms.push_back({m.name, m.available, m.detail});
  record_seal_and_time_slicing(g_report.sandbox);
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
  if (!opt.compare_kernel.empty() && !opt.compare_out.empty()) {
    g_progress.path = opt.compare_out + ".progress";
    g_progress.now.total = registered;
    std::error_code ec;
    std::filesystem::remove(g_progress.path, ec);
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
      try {
        s = suite_speedup(g_report);
        std::cout << format_table(g_report, s) << std::flush;
      } catch (const std::exception& e) {  // the document is still written, saying why
        s = SuiteSpeedup{};
        s.geomean = s.ci95.lo = s.ci95.hi = std::numeric_limits<double>::quiet_NaN();  // null: not estimated
        std::cerr << "attngate_bench: no suite summary: " << e.what() << "\n";
        g_report.failed.push_back({"(suite)", failure_kind::kSummary, std::string("suite summary: ") + e.what()});
        ++g_failures;
      }
    }
    {
      if (!opt.compare_out.empty()) {
        write_file_atomically(opt.compare_out, to_json(g_report, s));
      }
    }
  }
  if (!opt.rounds_out.empty()) {
    const nlohmann::json context = {{"host_name", "attngate_bench"},
                                    {"executable", argv[0]}, {"library_build_type", "release"},
                                    {"attngate_device", harness.device_name()}, {"attngate_suite", suite->name}};
    std::ofstream f(opt.rounds_out);
    f << gbench_rounds_document(g_rounds, context).dump(1) << "\n";
    if (!f.flush()) throw std::runtime_error("cannot write " + opt.rounds_out);
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
