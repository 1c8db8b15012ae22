// attngate_verify: one GoogleTest test per (kernel, scenario), generated from the kernel registry and
// the YAML suites at start-up. `--emit-ctest=FILE` writes the matching CTest script instead of
// running, so CTest names and labels follow the suites (gtest_discover_tests cannot give per-test
// labels).
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "attngate/cuda_check.hpp"
#include <fmt/format.h>

#include "attngate/kernel_status.hpp"
#include "attngate/plugin_loader.hpp"
#include "attngate/registry.hpp"
#include "attngate/scenario.hpp"
#include "attngate/shard.hpp"
#include "attngate/verify/gate_batches.hpp"
#include "attngate/verify/gpu_pinning.hpp"
#include "attngate/verify/problem.hpp"
#include "attngate/verify/remote.hpp"
#include "attngate/verify/result_document.hpp"
#include "attngate/verify/start_record.hpp"
#include "attngate/verify/verify_case.hpp"
#include "attngate/worker/libraries.hpp"
#include "attngate/verify/json_document.hpp"

#ifndef ATTNGATE_DEFAULT_SCENARIO_DIR
#error "ATTNGATE_DEFAULT_SCENARIO_DIR must be defined by the build"
#endif

namespace {

using namespace attngate;

struct Options {
  std::filesystem::path scenario_dir = ATTNGATE_DEFAULT_SCENARIO_DIR;
  std::string emit_ctest;
  std::string emit_exe;
  // When the suites include `gate`: the list of the gate's verify tests (gate_batches.hpp), which
  // the gate's own tests wait for (agent_hooks/gate writes those).
  std::string emit_gate_batches;
  // The gate runs kernels apart from the judge: attngate_verify_judge with workers from this folder.
  std::string emit_judge;      // attngate_verify_judge
  std::string emit_workers;    // the folder of attngate_worker_<library> binaries
  std::string initial = "initial";
  std::filesystem::path results_dir;  // one JSON per test when set (the gate reads them)
  int require_device = 0;             // > 0: only check for a device of this compute capability
  std::string ctest_gpu;              // the GPU id CTest's resource allocation pinned this process to
  // Batch mode (--batch): one process checks many (kernel, scenario) cases, each kernel's results
  // written as verify.<kernel>.<scenario>.json; the per-case CTest tests read them (--show-result).
  bool batch = false;
  std::string batch_name;             // the CTest name of the batch, kept in each result
  std::vector<std::string> suites;    // the suites it checks
  std::vector<std::string> kernels;   // the kernels whose results it writes (empty: every wanted one)
  std::string shard = "0/1";
  std::string start_record;           // the gate's batches: written when the batch starts (start_record.hpp)
  std::string show_result;            // print one result file and exit with its verdict
  std::vector<std::string> worker_libs;  // --emit-worker-libs: the kernel libraries that have a worker
  std::vector<std::string> shapes;       // --shape: the ad-hoc suite `adhoc` instead of the folder's
};

// The suites tests come from: the folder's, or only the ad-hoc shapes of --shape.
std::vector<Suite> load_suites(const Options& opt) {
  return opt.shapes.empty() ? load_suite_dir(opt.scenario_dir) : std::vector<Suite>{adhoc_suite(opt.shapes)};
}

Options& options() {
  static Options opt;
  return opt;
}

verify::ResultStats result_stats(const verify::ErrorStats& e) {
  return {e.max_abs, e.max_scaled, e.rel_l2, e.nonfinite, e.masked_mismatch};
}

// Written at the end of every test, skipped or failed too; a test that crashed leaves none, which
// the gate reports as a crash rather than reading an older file (it deletes them before a run).
// The document is verify::ResultDocument (attngate/verify/result_document.hpp).
// Why a skipped case was skipped, as the result document says it (ResultDocument::skip_reason).
constexpr const char* kSkipNoDevice = "no_device";
constexpr const char* kSkipUnsupported = "unsupported";

void write_result(const std::string& kernel, const Scenario& s, const std::string& status,
                  const std::string& detail, const verify::CaseOutcome* c, const char* skip_reason = nullptr) {
  if (options().results_dir.empty()) return;
  verify::ResultDocument doc;
  doc.test = "verify." + kernel + "." + s.id;
  doc.kernel = kernel;
  doc.scenario = s.id;
  doc.suite = s.suite;
  doc.status = status;
  doc.detail = detail;
  if (status == "skipped") doc.skip_reason = skip_reason ? skip_reason : kSkipUnsupported;
  if (!options().batch_name.empty()) doc.batch = options().batch_name;
  // Which GPU ran the test: evidence that `ctest -j` over a resource spec spread the tests.
  if (!options().ctest_gpu.empty()) doc.ctest_gpu = options().ctest_gpu;
  if (c && c->device_bytes > 0) doc.device_bytes = c->device_bytes;
  // Which build of the kernel was judged: the gate compares it with the tree it built and timed.
  if (const KernelInfo* k = KernelRegistry::instance().find(kernel))
    if (auto* r = verify::remote::find(*k)) doc.kernel_tree_sha256 = verify::remote::kernel_tree_sha256(*r);
  if (c && !c->runs.empty()) {
    int dev = 0;
    char pci[32] = {};
    ATTNGATE_CUDA_CHECK(cudaGetDevice(&dev));
    ATTNGATE_CUDA_CHECK(cudaDeviceGetPCIBusId(pci, int(sizeof pci), dev));
    doc.pci_bus_id = pci;
    doc.ground_truth = c->ground_truth;
    doc.base_seed = std::to_string(c->base_seed);
    for (const auto& r : c->runs) {
      verify::ResultRun run;
      run.distribution = distribution_name(r.distribution);
      run.seed = std::to_string(r.seed);
      run.pass = r.judgement.pass;
      run.reasons = r.judgement.reasons;
      run.o = result_stats(r.o);
      run.lse = result_stats(r.lse);
      if (r.has_initial) {
        run.initial_o = result_stats(r.initial_o);
        run.initial_lse = result_stats(r.initial_lse);
      }
      run.o_worst_at = r.o_worst_at;
      run.lse_worst_at = r.lse_worst_at;
      run.o_guard_violations = r.o_guard_violations;
      run.lse_guard_violations = r.lse_guard_violations;
      run.input_mismatches = r.input_mismatches;
      doc.runs.push_back(std::move(run));
    }
  }
  const nlohmann::json j = doc;
  std::filesystem::create_directories(options().results_dir);
  const auto path = options().results_dir / verify::result_file_name(kernel, s.id);
  write_file_atomically(path, j.dump(1) + "\n");
}

uint64_t base_seed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("ATTNGATE_SEED")) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(env, &end, 0);
      if (end == env || *end != '\0') {
        std::cerr << "ATTNGATE_SEED='" << env << "' is not an unsigned integer\n";
        std::exit(2);
      }
      return static_cast<uint64_t>(v);
    }
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd();
  }();
  return seed;
}

// Skips (never passes) when no device of the kernel's architecture is present.
void require_device(int min_sm) {
  static const verify::DeviceStatus dev = verify::probe_device();
  if (!dev.available) GTEST_SKIP() << "needs a CUDA GPU: " << dev.why;
  if (dev.sm < min_sm)
    GTEST_SKIP() << "needs compute capability " << min_sm / 10 << "." << min_sm % 10 << ", device "
                 << dev.name << " has " << dev.sm / 10 << "." << dev.sm % 10;
}

class VerifyTest : public testing::Test {
 public:
  VerifyTest(std::string kernel, std::string initial, Scenario s, Tolerance tol)
      : kernel_(std::move(kernel)), initial_(std::move(initial)), s_(std::move(s)), tol_(tol) {}

  void TestBody() override {
    const auto& reg = KernelRegistry::instance();
    const KernelInfo& k = reg.get(kernel_);
    const KernelInfo& init = reg.get(initial_);
    require_device(std::max(k.min_sm, init.min_sm));
    if (IsSkipped()) {
      write_result(kernel_, s_, "skipped", "no CUDA device of the required architecture", nullptr, kSkipNoDevice);
      return;
    }
    cudaStream_t stream = nullptr;
    ATTNGATE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    try {
      const auto outcome = verify::verify_case(k, init, s_, tol_, base_seed(), stream);
      write_result(kernel_, s_, outcome.status, outcome.detail, &outcome);
      if (outcome.status == "skipped") {
        cudaStreamDestroy(stream);
        GTEST_SKIP() << outcome.detail;
      }
      if (outcome.status == "error") throw std::runtime_error(outcome.detail);
      std::cout << verify::describe(outcome, s_);
      EXPECT_TRUE(outcome.pass()) << kernel_ << " fails on " << s_.id << " (" << s_.origin << ")";
    } catch (const std::exception& e) {
      cudaStreamDestroy(stream);
      // A kernel that declines a shape (cuDNN) is skipped with its reason, never passed.
      if (auto why = attngate::unsupported_reason(e)) {
        write_result(kernel_, s_, "skipped", *why, nullptr);
        GTEST_SKIP() << *why;
      }
      write_result(kernel_, s_, "error", e.what(), nullptr);
      throw;
    }
    ATTNGATE_CUDA_CHECK(cudaStreamDestroy(stream));
  }

 private:
  std::string kernel_, initial_;
  Scenario s_;
  Tolerance tol_;
};

// ---- Batch mode ---------------------------------------------------------------------------

// Text a kernel controls (its worker's error messages, what it left on its stream) is printed
// with GoogleTest's skip marker defused: the tests' SKIP_REGULAR_EXPRESSION must not read a
// failing case as skipped because the kernel said so.
std::string defuse(std::string text) {
  for (size_t at; (at = text.find("SKIPPED")) != std::string::npos;) text.replace(at, 7, "skipped");
  return text;
}

// The kernels a batch checks on a suite's scenario, `initial` first when it is among them.
std::vector<const KernelInfo*> batch_kernels(const Options& opt, const Suite& suite, const Scenario& s);
bool wanted(const KernelInfo& k, const Suite& suite, const Scenario& s);

std::string one_line(const verify::CaseOutcome& c) {
  char buf[256];
  double o = 0, lse = 0, io = 0;
  for (const auto& r : c.runs) {
    o = std::max(o, r.o.max_abs);
    lse = std::max(lse, r.lse.max_scaled);
    if (r.has_initial) io = std::max(io, r.initial_o.max_abs);
  }
  std::snprintf(buf, sizeof buf, "O max abs %.3e (initial %.3e), LSE max scaled %.3e", o, io, lse);
  return buf;
}

struct BatchItem {
  const Suite* suite;
  Scenario scenario;
  std::vector<const KernelInfo*> kernels;
};

// The batch's cases: per scenario of its shard, the kernels it checks. Removes the results they will
// replace and writes, at once, the skips of the kernels that do not offer a shape. `writes`: the
// result files the batch owes (its start record lists them).
std::vector<BatchItem> batch_cases(const Options& opt, const std::vector<Suite>& suites, std::vector<std::string>& writes) {
  const ShardSpec shard = parse_shard(opt.shard);
  std::vector<BatchItem> items;
  for (const std::string& name : opt.suites) {
    const Suite* suite = nullptr;
    for (const auto& x : suites)
      if (x.name == name) suite = &x;
    if (!suite) throw std::runtime_error("no suite '" + name + "' in " + opt.scenario_dir.string());
    for (const Scenario& sc : shard_scenarios(suite->scenarios, shard)) {
      // A result left from an earlier run must not be read as this one's, whether or not the
      // kernel still offers the shape.
      for (const auto& k : opt.kernels) std::filesystem::remove(opt.results_dir / verify::result_file_name(k, sc.id));
      auto ks = batch_kernels(opt, *suite, sc);
      for (const auto& k : opt.kernels) writes.push_back(verify::result_file_name(k, sc.id));
      for (const KernelInfo* k : ks)
        if (std::find(opt.kernels.begin(), opt.kernels.end(), k->name) == opt.kernels.end())
          writes.push_back(verify::result_file_name(k->name, sc.id));
      if (!ks.empty()) items.push_back({suite, sc, std::move(ks)});
      // A kernel named for the batch that does not offer the shape now (its worker's hello decides)
      // is skipped with the reason, never passed.
      for (const auto& k : opt.kernels) {
        const KernelInfo* info = KernelRegistry::instance().find(k);
        if (info && wanted(*info, *suite, sc)) continue;
        write_result(k, sc, "skipped",
                     info ? k + " does not offer " + dtype_name(sc.dtype) + " at head dim " + std::to_string(sc.head_dim)
                          : "no kernel '" + k + "' in this process (its worker did not offer it)",
                     nullptr);
      }
    }
  }
  return items;
}

// Checks every (kernel, scenario) of the batch in this process: one fp32 ground truth per scenario
// and input draw, shared by all its kernels, judged on the device. Writes one result per case;
// returns 0 when every case was checked (whatever its verdict: the per-case tests report it), 1
// when the batch stopped early (the cases it did not reach get an `error` result saying why).
int run_batch(const Options& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto suites = load_suites(opt);
  std::vector<std::string> writes;
  const std::vector<BatchItem> items = batch_cases(opt, suites, writes);
  // The gate's batches say that they started and what they owe, so that the gate's report can tell
  // a batch that did not run from one that crashed or timed out.
  verify::StartRecorder started(opt.start_record, writes);
  size_t cases = 0;
  for (const auto& it : items) cases += it.kernels.size();
  std::cout << "attngate_verify: batch " << opt.batch_name << ": " << cases << " cases on " << items.size()
            << " scenarios, base seed " << base_seed() << " (replay with ATTNGATE_SEED=" << base_seed() << ")"
            << std::endl;
  const verify::DeviceStatus dev = verify::probe_device();
  int sm_needed = 0;
  for (const auto& it : items)
    for (const KernelInfo* k : it.kernels) sm_needed = std::max(sm_needed, k->min_sm);
  if (!dev.available || dev.sm < sm_needed) {
    const std::string why = !dev.available ? "needs a CUDA GPU: " + dev.why
                                           : "needs compute capability " + std::to_string(sm_needed) + ", device " +
                                                 dev.name + " has " + std::to_string(dev.sm);
    for (const auto& it : items)
      for (const KernelInfo* k : it.kernels) write_result(k->name, it.scenario, "skipped", why, nullptr, kSkipNoDevice);
    started.skipped(why);
    std::cout << "[  SKIPPED ] " << why << std::endl;
    return 0;
  }
  const KernelInfo& initial = KernelRegistry::instance().get(opt.initial);
  cudaStream_t stream = nullptr;
  ATTNGATE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::map<std::string, int> counts;
  // Each kernel's buffers come from its own pool, which its worker maps once (verify::KernelPool).
  verify::use_kernel_pools(true);
  for (size_t i = 0; i < items.size(); ++i) {
    const BatchItem& it = items[i];
    std::vector<verify::CaseOutcome> outcomes;
    const auto t_scenario = std::chrono::steady_clock::now();
    try {
      if (it.kernels.size() == 1 && it.kernels[0]->name == "reference")
        outcomes = {verify::verify_case(*it.kernels[0], initial, it.scenario, it.suite->tolerance, base_seed(), stream)};
      else
        outcomes = verify::verify_scenario(it.kernels, initial, it.scenario, it.suite->tolerance, base_seed(), stream);
    } catch (const std::exception& e) {
      // The judge's own device is unusable (a sticky error): no later case can be checked.
      const std::string why = std::string("the batch stopped at ") + it.scenario.id + ": " + e.what();
      std::cout << "attngate_verify: " << why << std::endl;
      for (size_t j = i; j < items.size(); ++j)
        for (const KernelInfo* k : items[j].kernels) write_result(k->name, items[j].scenario, "error", why, nullptr);
      return 1;
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_scenario).count();
    std::printf("attngate_verify: %s: %zu kernels in %.1f ms (%.3g GFLOP per call)\n", it.scenario.id.c_str(),
                it.kernels.size(), ms, it.scenario.flops() * 1e-9);
    for (const auto& c : outcomes) {
      write_result(c.kernel, it.scenario, c.status, c.detail, &c);
      ++counts[c.status];
      std::cout << "verify." << c.kernel << "." << it.scenario.id << ": " << c.status;
      if (c.status == "passed" || c.status == "failed") std::cout << ", " << one_line(c);
      else std::cout << ": " << defuse(c.detail);
      std::cout << "\n";
      if (c.status == "failed") std::cout << defuse(verify::describe(c, it.scenario));
    }
    std::cout.flush();
  }
  ATTNGATE_CUDA_CHECK(cudaStreamDestroy(stream));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "attngate_verify: batch " << opt.batch_name << " done in " << secs << " s: " << counts["passed"]
            << " passed, " << counts["failed"] << " failed, " << counts["skipped"] << " skipped, " << counts["error"]
            << " errors" << std::endl;
  return 0;
}

// A per-case test: prints the result the batch wrote and exits with its verdict (0 passed, 1
// failed or error; a skip prints GoogleTest's marker, which the test's SKIP_REGULAR_EXPRESSION reads).
int show_result(const Options& opt) {
  const std::filesystem::path file = opt.show_result;
  std::ifstream in(file);
  if (!in) {
    std::cout << "attngate_verify: no result " << file.string() << ": the batch test " << opt.batch_name
              << " did not write it (it crashed, timed out or did not run; see its output)\n";
    return 1;
  }
  verify::ResultDocument doc;
  try {
    doc = verify::parse_result_document(nlohmann::json::parse(in));
  } catch (const std::exception& e) {
    std::cout << "attngate_verify: " << file.string() << " is not a verify result: " << e.what() << "\n";
    return 1;
  }
  // The file must be this test's: a result renamed into place would otherwise stand for another case.
  const std::string expected = file.filename().string();
  if (verify::result_file_name(doc.kernel, doc.scenario) != expected || doc.test != "verify." + doc.kernel + "." + doc.scenario) {
    std::cout << "attngate_verify: " << file.string() << " holds the result of " << doc.test << ", not of "
              << expected << "\n";
    return 1;
  }
  std::cout << doc.test << ": " << doc.status << (doc.batch ? " (checked by " + *doc.batch + ")" : "")
            << (doc.base_seed ? ", base seed " + *doc.base_seed : "") << "\n";
  for (const auto& r : doc.runs) {
    char line[512];
    std::snprintf(line, sizeof line, "  %-12s seed=%s  O max_abs=%.3e rel_l2=%.3e at [%s]  LSE max_scaled=%.3e at [%s]  %s\n",
                  r.distribution.c_str(), r.seed.c_str(), r.o.max_abs, r.o.rel_l2, r.o_worst_at.c_str(),
                  r.lse.max_scaled, r.lse_worst_at.c_str(), r.pass ? "PASS" : "FAIL");
    std::cout << line;
    for (const auto& why : r.reasons) std::cout << "    - " << defuse(why) << "\n";
  }
  if (doc.status == "skipped") {
    std::cout << "[  SKIPPED ] " << defuse(doc.detail) << "\n";
    return 0;
  }
  if (!doc.detail.empty()) std::cout << "  " << defuse(doc.detail) << "\n";
  if (doc.status == "passed") return 0;
  if (doc.status == "failed" && doc.base_seed)
    std::cout << "  replay: ATTNGATE_SEED=" << *doc.base_seed << " ctest -R '" << doc.test << "$'\n";
  return 1;
}


// The gate suite names the kernel it judges and the one it times it against.
std::string gate_kernel(const Suite& gate) {
  auto it = gate.settings.find("candidate_kernel");
  return it == gate.settings.end() || it->second.empty() ? "candidate" : it->second;
}
std::string gate_baseline(const Suite& gate) {
  auto it = gate.settings.find("baseline_kernel");
  return it == gate.settings.end() || it->second.empty() ? "initial" : it->second;
}

// The reference kernel is proven against Eigen, which only the smoke suite is small enough for.
bool wanted(const KernelInfo& k, const Suite& suite, const Scenario& s) {
  if (!verify::planted_cheat_allowed(k, suite)) return false;  // cheats run on the adversarial suite only
  if (k.name == "reference") return suite.name == "smoke";
  return k.supports(s.dtype, s.head_dim);
}

void register_tests(const Options& opt) {
  const auto suites = load_suites(opt);
  for (const KernelInfo* k : KernelRegistry::instance().all()) {
    for (const Suite& suite : suites) {
      for (const Scenario& s : suite.scenarios) {
        if (!wanted(*k, suite, s)) continue;
        testing::RegisterTest(k->name.c_str(), s.id.c_str(), nullptr, s.origin.c_str(), __FILE__, __LINE__,
                              [name = k->name, init = opt.initial, s, tol = suite.tolerance]() -> testing::Test* {
                                return new VerifyTest(name, init, s, tol);
                              });
      }
    }
  }
}

std::vector<const KernelInfo*> batch_kernels(const Options& opt, const Suite& suite, const Scenario& s) {
  std::vector<const KernelInfo*> out;
  for (const KernelInfo* k : KernelRegistry::instance().all()) {
    if (!opt.kernels.empty() && std::find(opt.kernels.begin(), opt.kernels.end(), k->name) == opt.kernels.end())
      continue;
    if (!wanted(*k, suite, s)) continue;
    if (k->name == opt.initial) out.insert(out.begin(), k);
    else out.push_back(k);
  }
  return out;
}

// Timeouts of the gate's tests; the report is told them so it can tell a timeout from a crash.
constexpr int kVerifyTimeoutS = 900;
constexpr int kShowTimeoutS = 60;

using attngate::worker::worker_args;

// The suites the gate judges correctness on (gate.yaml settings.correctness_suites, plus the gate
// suite itself); the gate times only its own suite.
std::vector<std::string> gate_correctness_suites(const Suite& gate) {
  std::vector<std::string> out = {gate.name};
  auto it = gate.settings.find("correctness_suites");
  if (it == gate.settings.end()) return out;
  std::string item;
  for (char c : it->second + ",") {
    if (c == ',' || c == ' ') {
      if (!item.empty() && std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

// What a batch's scenarios cost (shard.hpp's scenario_cost).
double batch_cost(const std::vector<Scenario>& v) {
  double c = 0;
  for (const auto& s : v) c += scenario_cost(s);
  return c;
}
// About 3 s of an H200's fp32 reference per shard: enough shards to spread a suite over the GPUs
// (and the slots of each) that CTest's resource spec offers, few enough that start-up stays small.
constexpr double kShardCost = 6e13;
constexpr int kMaxShards = 12;

// One batch test: a group of kernels on one shard of one suite, checked in one process.
struct Batch {
  std::string name;            // verify.batch.<suite>[.<group>][.<i>of<n>]
  std::string suite, group;    // group: "gate" (the gate's kernel and baseline), "others", "reference"
  std::vector<std::string> kernels;
  int shard = 0, shards = 1;
  bool gate_labelled = false;
};

// The CTest file being written: add_test and set_tests_properties lines, every argument quoted.
class CtestFile {
 public:
  explicit CtestFile(const std::string& path) : path_(path), f_(path) {
    if (!f_) throw std::runtime_error("cannot write " + path);
  }
  static std::string quoted(const std::string& s) { return "[==[" + s + "]==]"; }
  void add_test(const std::string& name, const std::vector<std::string>& argv) {
    f_ << "add_test(" << quoted(name);
    for (const auto& a : argv) f_ << " " << quoted(a);
    f_ << ")\n";
  }
  std::ofstream& out() { return f_; }
  void close() {
    if (!f_.flush()) throw std::runtime_error("cannot write " + path_);
  }

 private:
  std::string path_;
  std::ofstream f_;
};

// What the gate suite's settings say about the gate's tests (none of it when there is no gate suite).
struct GatePlan {
  const Suite* gate = nullptr;
  std::string kernel, baseline;
  std::vector<std::string> checked;  // the suites whose verification the gate includes
  bool checks(const std::string& suite) const {
    return std::find(checked.begin(), checked.end(), suite) != checked.end();
  }
};

GatePlan plan_gate(const Options& opt, const std::vector<Suite>& suites) {
  GatePlan g;
  for (const auto& s : suites)
    if (s.name == "gate") g.gate = &s;
  g.kernel = g.gate ? gate_kernel(*g.gate) : "candidate";
  g.baseline = g.gate ? gate_baseline(*g.gate) : opt.initial;
  if (g.gate) g.checked = gate_correctness_suites(*g.gate);
  for (const auto& name : g.checked) {
    bool found = false;
    for (const auto& s : suites) found |= s.name == name;
    if (!found)
      throw std::runtime_error("gate.yaml settings.correctness_suites names suite '" + name + "', which is not in " +
                               opt.scenario_dir.string());
  }
  return g;
}

// gate.device: the judge fails without a GPU of the compute capability the gate's kernels need. It
// waits for gate.setup (the gate's, agent_hooks/gate), as the gate's batches do.
void emit_gate_device(CtestFile& t, const Options& opt, const GatePlan& g) {
  if (opt.emit_judge.empty() || opt.emit_workers.empty() || opt.emit_gate_batches.empty())
    throw std::runtime_error("the suites include `gate`: --emit-ctest needs --emit-judge, --emit-workers and "
                             "--emit-gate-batches");
  if (opt.results_dir.empty()) throw std::runtime_error("the gate needs --results-dir");
  int sm = 90;  // Hopper: what the gate is for
  for (const std::string& k : {g.kernel, g.baseline})
    if (const KernelInfo* info = KernelRegistry::instance().find(k)) sm = std::max(sm, info->min_sm);
  t.add_test("gate.device", {opt.emit_judge, "--require-device=" + std::to_string(sm)});
  t.out() << "set_tests_properties(gate.device PROPERTIES LABELS [==[gate;gpu]==] DEPENDS gate.setup TIMEOUT 120"
             " RESOURCE_GROUPS gpus:1)\n";
}

// The batches: per suite, the gate's kernel apart from the other kernels (so that the gate
// never waits for the baseline's own checks or a library's kernels), the GPU reference (checked
// against Eigen) apart from both.
std::vector<Batch> plan_batches(const std::vector<Suite>& suites, const GatePlan& g) {
  std::vector<Batch> batches;
  for (const Suite& suite : suites) {
    std::map<std::string, std::vector<std::string>> groups;
    for (const KernelInfo* k : KernelRegistry::instance().all()) {
      bool any = false;
      for (const Scenario& s : suite.scenarios) any |= wanted(*k, suite, s);
      if (!any) continue;
      // The gate's kernel alone: the baseline runs in its batch only to set the error bound (one
      // call per draw), and is judged itself with the other kernels.
      const std::string group = k->name == "reference" ? "reference" : k->name == g.kernel ? "gate" : "others";
      groups[group].push_back(k->name);
    }
    const int shards = int(std::clamp(std::ceil(batch_cost(suite.scenarios) / kShardCost), 1.0, double(kMaxShards)));
    for (const auto& [group, kernels] : groups) {
      const int n = group == "reference" ? 1 : shards;
      for (int i = 0; i < n; ++i)
        batches.push_back({"verify.batch." + suite.name + (group == "gate" ? "" : "." + group) +
                               (n > 1 ? "." + std::to_string(i + 1) + "of" + std::to_string(n) : ""),
                           suite.name, group, kernels, i, n, g.gate && group == "gate" && g.checks(suite.name)});
    }
  }
  return batches;
}

// One batch test: its kernels checked in one process (the judge with their workers where they have them).
void emit_batch(CtestFile& t, const Options& opt, const Batch& b) {
  // The kernels run in workers where they have one, always so for the gate's (agent_hooks/SECURITY.md).
  auto has_worker = [&](const std::string& k) {
    return std::find(opt.worker_libs.begin(), opt.worker_libs.end(), attngate::worker::library_of(k)) != opt.worker_libs.end();
  };
  bool isolated = b.group != "reference" && !opt.emit_judge.empty();
  for (const auto& k : b.kernels) isolated &= has_worker(k);
  if (b.group != "reference" && !isolated && b.gate_labelled)
    throw std::runtime_error("the gate's kernels " + fmt::format("{}", fmt::join(b.kernels, ", ")) + " need workers (--emit-worker-libs)");
  std::vector<std::string> argv = {isolated ? opt.emit_judge : opt.emit_exe};
  if (isolated) {
    std::vector<std::string> run = b.kernels;
    run.push_back(opt.initial);
    for (const auto& w : worker_args(opt.emit_workers, run)) argv.push_back(w);
  }
  argv.insert(argv.end(), {"--batch", "--batch-name=" + b.name, "--suite=" + b.suite, "--kernels=" + fmt::format("{}", fmt::join(b.kernels, ",")),
                           "--shard=" + std::to_string(b.shard) + "/" + std::to_string(b.shards),
                           "--scenarios=" + opt.scenario_dir.string(), "--results-dir=" + opt.results_dir.string()});
  // The gate's report tells a batch that did not run from one that crashed or timed out by it.
  if (b.gate_labelled)
    argv.push_back("--start-record=" + verify::start_record_file(verify::start_records_dir(opt.results_dir), b.name).string());
  t.add_test(b.name, argv);
  // The suite's name as a label, except `gate` on batches that are not the gate's own.
  std::vector<std::string> labels = {"gpu", "verify", "batch"};
  if (b.suite != "gate" || b.gate_labelled) labels.push_back(b.suite);
  if (b.gate_labelled && b.suite != "gate") labels.push_back("gate");
  t.out() << "set_tests_properties(" << CtestFile::quoted(b.name) << " PROPERTIES LABELS "
          << CtestFile::quoted(fmt::format("{}", fmt::join(labels, ";"))) << " FIXTURES_SETUP " << CtestFile::quoted(b.name)
          << " SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==] TIMEOUT " << kVerifyTimeoutS
          << (b.gate_labelled ? " DEPENDS gate.setup" : "") << " RESOURCE_GROUPS gpus:1)\n";
}

// One test per (kernel, scenario) of a batch, reading what the batch wrote: `ctest -R` on one of
// them runs its batch first (the fixture), then prints the case. Returns the gate's own.
std::vector<std::string> emit_cases(CtestFile& t, const Options& opt, const Batch& b, const Suite& suite,
                                    const GatePlan& g) {
  std::vector<std::string> gate_cases;
  for (const Scenario& s : shard_scenarios(suite.scenarios, {b.shard, b.shards})) {
    for (const auto& kname : b.kernels) {
      if (!wanted(KernelRegistry::instance().get(kname), suite, s)) continue;
      const std::string test = "verify." + kname + "." + s.id;
      t.add_test(test, {opt.emit_judge.empty() ? opt.emit_exe : opt.emit_judge,
                        "--show-result=" + (opt.results_dir / verify::result_file_name(kname, s.id)).string(),
                        "--batch-name=" + b.name});
      // `ctest -L gate` is the gate's stop condition, so the label `gate` (which is also the gate
      // suite's name) goes to the gate's own tests only: its kernel on the suites it checks.
      // Other kernels' tests on the gate suite are selected by name (-R 'verify\.initial\.gate_').
      const bool gate_case = b.gate_labelled && kname == g.kernel;
      std::vector<std::string> labels = {"gpu", "verify"};
      if (suite.name != "gate" || gate_case) labels.push_back(suite.name);
      if (gate_case && suite.name != "gate") labels.push_back("gate");
      t.out() << "set_tests_properties(" << CtestFile::quoted(test) << " PROPERTIES LABELS "
              << CtestFile::quoted(fmt::format("{}", fmt::join(labels, ";"))) << " FIXTURES_REQUIRED " << CtestFile::quoted(b.name)
              << " SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==] TIMEOUT " << kShowTimeoutS
              << (gate_case ? " DEPENDS gate.setup" : "") << ")\n";
      if (gate_case) gate_cases.push_back(test);
    }
  }
  return gate_cases;
}

// The gate's verify tests, for the gate's own tests to wait for (gate_batches.hpp).
void write_gate_batches(const Options& opt, const GatePlan& g, const std::vector<std::string>& gate_tests) {
  verify::GateBatches doc;
  if (g.gate) doc.kernel = g.kernel, doc.baseline = g.baseline;
  doc.tests = gate_tests;
  doc.verify_timeout_s = kVerifyTimeoutS;
  doc.results_dir = opt.results_dir.string();
  doc.scenarios_dir = opt.scenario_dir.string();
  write_file_atomically(opt.emit_gate_batches, nlohmann::json(doc).dump(1) + "\n");
}

// The verify tests. With a gate suite (agent_hooks/README.md, "The gate") also gate.device and the
// gate's batches and cases, each after gate.setup; the list of them goes to --emit-gate-batches,
// from which agent_hooks/gate writes gate.setup, gate.performance and gate.report.
void emit_ctest(const Options& opt) {
  CtestFile t(opt.emit_ctest);
  const auto suites = load_suite_dir(opt.scenario_dir);
  const GatePlan g = plan_gate(opt, suites);
  if (g.gate) emit_gate_device(t, opt, g);
  std::vector<std::string> gate_tests;  // the gate's batches and per-case tests: gate.performance waits for them
  for (const Batch& b : plan_batches(suites, g)) {
    emit_batch(t, opt, b);
    if (b.gate_labelled) gate_tests.push_back(b.name);
    const auto suite = std::find_if(suites.begin(), suites.end(), [&](const Suite& s) { return s.name == b.suite; });
    for (auto& c : emit_cases(t, opt, b, *suite, g)) gate_tests.push_back(std::move(c));
  }
  t.add_test("gpu.selfcheck.host_inputs_match_device",
             {opt.emit_exe, "--gtest_filter=selfcheck.host_inputs_match_device", "--scenarios=" + opt.scenario_dir.string()});
  t.out() << "set_tests_properties(gpu.selfcheck.host_inputs_match_device PROPERTIES LABELS [==[gpu;verify]==]"
             " SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==] TIMEOUT 300 RESOURCE_GROUPS gpus:1)\n";
  if (!opt.emit_gate_batches.empty()) write_gate_batches(opt, g, gate_tests);  // empty without a gate suite
  t.close();
}

// attngate's own flags, parsed with CLI11 after load_plugins, load_workers and InitGoogleTest took
// theirs (--plugin=PATH, --worker=PATH, --gtest_*) out of argv: whatever is left must be ours, so an
// unknown flag is an error (exit 2). `--help` prints GoogleTest's help (InitGoogleTest) and then these.
const char* kUsage =
    "usage: attngate_verify [gtest flags] [--worker=PATH]... [--scenarios=DIR] [--initial=KERNEL] [--results-dir=DIR]\n"
    "       attngate_verify --emit-ctest=FILE --emit-exe=PATH [--emit-judge=PATH --emit-workers=DIR"
    " --emit-gate-batches=FILE]   (a gate suite needs the last three)\n"
    "       attngate_verify --require-device=SM   (exit 0 only with a GPU of compute capability >= SM/10)\n"
    "       attngate_verify [--worker=PATH]... --batch --batch-name=NAME --suite=SUITE... [--kernels=K,..] [--shard=i/N]"
    " --results-dir=DIR   (many cases in one process)\n"
    "       attngate_verify --show-result=FILE [--batch-name=NAME]   (one case's verdict, as its CTest test)\n"
    "  ATTNGATE_SEED=N replays a run's inputs\n";

Options parse(int argc, char** argv) {
  Options opt;
  CLI::App app{"attngate_verify: one GoogleTest test per (kernel, scenario) of the YAML suites", "attngate_verify"};
  app.footer(kUsage);
  std::string scenario_dir = opt.scenario_dir.string(), results_dir;
  app.add_option("--scenarios", scenario_dir, "Directory of the YAML suites (default: the shipped scenarios/)");
  app.add_option("--shape", opt.shapes,
                 "Verify this ad-hoc shape (suite `adhoc`) instead of the folder's suites (repeatable; e.g. "
                 "b=4,sq=8192,sk=8192,hq=32,hkv=8,d=128,causal,bf16; scenarios/README.md)");
  app.add_option("--initial", opt.initial, "The initial kernel other kernels' errors are compared with (default initial)");
  app.add_option("--results-dir", results_dir, "Write one result JSON per test into DIR (the gate reads them)");
  app.add_option("--require-device", opt.require_device,
                 "Only check for a CUDA device of compute capability >= SM/10 (e.g. 90): exit 0 if there is one, "
                 "1 if not; runs no test");
  auto* exe = app.add_option("--emit-exe", opt.emit_exe, "The test binary the emitted script runs");
  app.add_option("--emit-ctest", opt.emit_ctest, "Write the CTest script of the generated tests to FILE and exit")
      ->needs(exe);
  app.add_option("--emit-gate-batches", opt.emit_gate_batches,
                 "Gate suite: write the list of the gate's verify tests (attngate.gate_batches/1) to FILE");
  app.add_option("--emit-judge", opt.emit_judge, "Gate tests: attngate_verify_judge, which runs the gate's tests");
  app.add_option("--emit-workers", opt.emit_workers, "Gate tests: the folder of the attngate_worker_<library> binaries");
  app.add_flag("--batch", opt.batch, "Check every case of --suite (one shard, the --kernels) in this process; "
               "one result per case in --results-dir");
  app.add_option("--batch-name", opt.batch_name, "The batch's CTest name, kept in its results");
  app.add_option("--suite", opt.suites, "Batch: a suite to check (repeatable)");
  app.add_option("--kernels", opt.kernels, "Batch: the kernels whose results it writes (default: every wanted one)")
      ->delimiter(',');
  app.add_option("--shard", opt.shard, "Batch: shard i/N of each suite (default 0/1)");
  app.add_option("--start-record", opt.start_record,
                 "Batch: write FILE (attngate.start_record/1: pid, start time, the results it owes) when it starts");
  app.add_option("--show-result", opt.show_result, "Print one result file and exit 0 (passed), 1 (failed, error, "
                 "missing) or 0 with a SKIPPED line");
  app.add_option("--emit-worker-libs", opt.worker_libs, "The kernel libraries that have a worker (comma-separated)")
      ->delimiter(',');
  try {
    app.parse(argc, argv);
    if (opt.batch && (opt.suites.empty() || results_dir.empty()))
      throw CLI::ValidationError("--batch", "needs --suite and --results-dir");
  } catch (const CLI::CallForHelp& e) {
    std::exit(app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::cerr << "attngate_verify: " << e.what() << "\n" << kUsage << "  (--help lists every flag)\n";
    std::exit(2);
  }
  opt.scenario_dir = scenario_dir;
  opt.results_dir = results_dir;
  return opt;
}

}  // namespace

// The host and device input generators must agree bit for bit, or the CPU reference would check
// other inputs than the kernels saw.
TEST(selfcheck, host_inputs_match_device) {
  require_device(80);
  if (IsSkipped()) return;
  Scenario s;
  s.id = "selfcheck";
  s.batch = 2; s.seqlen_q = 37; s.seqlen_k = 53; s.heads_q = 4; s.heads_kv = 2; s.head_dim = 64;
  s.causal = false;
  for (DType t : {DType::bf16, DType::fp16}) {
    s.dtype = t;
    verify::Problem p(s);
    for (Distribution d : {Distribution::standard, Distribution::large_scores}) {
      p.fill(1234, d, nullptr);
      const verify::DeviceBuffer* bufs[3] = {&p.q, &p.k, &p.v};
      for (int tensor = 0; tensor < 3; ++tensor) {
        const auto want = host_input(p.params, tensor, 1234, d);
        const verify::DeviceBuffer& b = *bufs[tensor];
        std::vector<uint16_t> raw(b.bytes() / 2);
        ATTNGATE_CUDA_CHECK(cudaMemcpy(raw.data(), b.get(), b.bytes(), cudaMemcpyDeviceToHost));
        ASSERT_EQ(raw.size(), want.size());
        for (size_t i = 0; i < raw.size(); ++i) {
          // Widen the stored 16-bit value exactly and compare with the host's rounded float.
          float got;
          if (t == DType::bf16) {
            const uint32_t bits = uint32_t(raw[i]) << 16;
            std::memcpy(&got, &bits, 4);
          } else {
            __half h;
            std::memcpy(static_cast<void*>(&h), &raw[i], 2);  // __half's bits from the raw 16-bit word
            got = __half2float(h);
          }
          ASSERT_EQ(got, want[i]) << dtype_name(t) << " tensor " << tensor << " element " << i;
        }
      }
      EXPECT_EQ(count_input_mismatches(p.params, 1234, d, nullptr), 0u);
    }
  }
}

// A gate batch whose workers did not start (a candidate that dies in a static initializer or fails
// its hello) has not parsed its options yet: its start record, if one was asked for, says why.
void record_failed_start(int argc, char** argv, const std::string& why) {
  const std::string flag = "--start-record=";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind(flag, 0) != 0) continue;
    try {
      verify::write_failed_start_record(a.substr(flag.size()), why);
    } catch (const std::exception& e) {
      std::cerr << "attngate_verify: " << e.what() << "\n";
    }
  }
}

int main(int argc, char** argv) {
  const std::string ctest_gpu = verify::pin_to_ctest_gpu();
  if (!attngate::plugin::load_plugins(argc, argv)) return 2;
  try {
    attngate::verify::remote::load_workers(argc, argv);  // --worker=PATH: kernels in their own process
  } catch (const std::exception& e) {
    std::cerr << "attngate_verify: " << e.what() << "\n";
    record_failed_start(argc, argv, e.what());
    return 2;
  }
  testing::InitGoogleTest(&argc, argv);
  options() = parse(argc, argv);
  options().ctest_gpu = ctest_gpu;
  const Options& opt = options();
  if (opt.require_device > 0) {
    // The gate's device check: a missing GPU fails here instead of skipping.
    const verify::DeviceStatus dev = verify::probe_device();
    if (!dev.available) {
      std::cout << "attngate: FAIL: " << dev.why << "\n";
      return 1;
    }
    std::cout << "attngate: device " << dev.name << ", compute capability " << dev.sm / 10 << "." << dev.sm % 10
              << "\n";
    if (dev.sm < opt.require_device) {
      std::cout << "attngate: FAIL: needs compute capability >= " << opt.require_device / 10 << "."
                << opt.require_device % 10 << "\n";
      return 1;
    }
    return 0;
  }
  if (!opt.show_result.empty()) return show_result(opt);
  try {
    if (!opt.emit_ctest.empty()) {
      emit_ctest(opt);
      return 0;
    }
    if (opt.batch) return run_batch(opt);
    register_tests(opt);
  } catch (const std::exception& e) {
    std::cerr << "attngate_verify: " << e.what() << "\n";
    return 2;
  }
  std::cout << "attngate_verify: base seed " << base_seed() << " (replay with ATTNGATE_SEED=" << base_seed()
            << ")\n";
  return RUN_ALL_TESTS();
}
