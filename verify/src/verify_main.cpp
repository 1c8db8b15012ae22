// attngate_verify: one GoogleTest test per (kernel, scenario), generated from the kernel registry and
// the YAML suites at start-up. `--emit-ctest=FILE` writes the matching CTest script instead of
// running, so CTest names and labels follow the suites (gtest_discover_tests cannot give per-test
// labels).
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
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
#include "attngate/kernel_status.hpp"
#include "attngate/plugin_loader.hpp"
#include "attngate/registry.hpp"
#include "attngate/scenario.hpp"
#include "attngate/verify/gpu_pinning.hpp"
#include "attngate/verify/problem.hpp"
#include "attngate/verify/remote.hpp"
#include "attngate/verify/result_document.hpp"
#include "attngate/verify/verify_case.hpp"

#ifndef ATTNGATE_DEFAULT_SCENARIO_DIR
#error "ATTNGATE_DEFAULT_SCENARIO_DIR must be defined by the build"
#endif

namespace {

using namespace attngate;

struct Options {
  std::filesystem::path scenario_dir = ATTNGATE_DEFAULT_SCENARIO_DIR;
  std::string emit_ctest;
  std::string emit_exe;
  // The gate tests (emitted when the suites include `gate`) run these; CMake passes them.
  std::string emit_bench;      // attngate_bench
  std::string emit_attngate;   // agent_hooks' attngate
  std::string emit_build_dir;  // the build tree: <build>/gate holds the performance JSON and the report
  std::string emit_source_dir; // the repository the report hashes (commit, candidate, harness)
  // The gate runs kernels apart from the judge: attngate_verify_judge with workers from this folder.
  std::string emit_judge;      // attngate_verify_judge
  std::string emit_workers;    // the folder of attngate_worker_<library> binaries
  std::string initial = "initial";
  std::filesystem::path results_dir;  // one JSON per test when set (the gate reads them)
  int require_device = 0;             // > 0: only check for a device of this compute capability
  std::string ctest_gpu;              // the GPU id CTest's resource allocation pinned this process to
};

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
void write_result(const std::string& kernel, const Scenario& s, const std::string& status,
                  const std::string& detail, const verify::CaseOutcome* c) {
  if (options().results_dir.empty()) return;
  verify::ResultDocument doc;
  doc.test = "verify." + kernel + "." + s.id;
  doc.kernel = kernel;
  doc.scenario = s.id;
  doc.suite = s.suite;
  doc.status = status;
  doc.detail = detail;
  // Which GPU ran the test: evidence that `ctest -j` over a resource spec spread the tests.
  if (!options().ctest_gpu.empty()) doc.ctest_gpu = options().ctest_gpu;
  if (c) {
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
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp);
    f << j.dump(1) << "\n";
    if (!f.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);  // atomic: a reader never sees half a file
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
      write_result(kernel_, s_, "skipped", "no CUDA device of the required architecture", nullptr);
      return;
    }
    cudaStream_t stream = nullptr;
    ATTNGATE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    try {
      const auto outcome = verify::verify_case(k, init, s_, tol_, base_seed(), stream);
      std::cout << verify::describe(outcome, s_);
      write_result(kernel_, s_, outcome.pass() ? "passed" : "failed", "", &outcome);
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

struct Generated {
  std::string gtest_name;  // Suite.Test for --gtest_filter
  std::string ctest_name;
  std::vector<std::string> labels;
  bool gate = false;  // the kernel under test on the gate suite
};

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

std::vector<Generated> register_tests(const Options& opt) {
  std::vector<Generated> out;
  const auto suites = load_suite_dir(opt.scenario_dir);
  for (const KernelInfo* k : KernelRegistry::instance().all()) {
    for (const Suite& suite : suites) {
      for (const Scenario& s : suite.scenarios) {
        if (!wanted(*k, suite, s)) continue;
        testing::RegisterTest(k->name.c_str(), s.id.c_str(), nullptr, s.origin.c_str(), __FILE__, __LINE__,
                              [name = k->name, init = opt.initial, s, tol = suite.tolerance]() -> testing::Test* {
                                return new VerifyTest(name, init, s, tol);
                              });
        // `ctest -L gate` is the gate's stop condition, so the label `gate` (which is also the gate
        // suite's name) goes to the gate's own tests only: the kernel under test on that suite.
        // Other kernels' tests on it are selected by name (-R 'verify\.initial\.gate_').
        Generated g{k->name + "." + s.id, "verify." + k->name + "." + s.id, {"gpu", "verify"}};
        g.gate = suite.name == "gate" && k->name == gate_kernel(suite);
        if (suite.name != "gate" || g.gate) g.labels.push_back(suite.name);
        out.push_back(std::move(g));
      }
    }
  }
  return out;
}

// Timeouts of the gate's tests; the report is told them so it can tell a timeout from a crash.
constexpr int kVerifyTimeoutS = 900;
constexpr int kPerfTimeoutS = 1800;

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ";") + x;
  return out;
}

// `--worker=` arguments for the workers holding `kernels`: planted cheats live in the adversarial
// library's worker, every other kernel in the worker named after it (kernels/worker/CMakeLists.txt).
std::vector<std::string> worker_args(const std::filesystem::path& dir, const std::vector<std::string>& kernels) {
  std::vector<std::string> out;
  for (const auto& k : kernels) {
    const std::string lib = k.rfind("cheat_", 0) == 0 || k.rfind("control_", 0) == 0 ? "adversarial" : k;
    const std::string arg = "--worker=" + (dir / ("attngate_worker_" + lib)).string();
    if (std::find(out.begin(), out.end(), arg) == out.end()) out.push_back(arg);
  }
  return out;
}

void emit_ctest(const Options& opt, const std::vector<Generated>& tests) {
  std::ofstream f(opt.emit_ctest);
  if (!f) throw std::runtime_error("cannot write " + opt.emit_ctest);
  auto quoted = [](const std::string& s) { return "[==[" + s + "]==]"; };
  auto add_test = [&](const std::string& name, const std::vector<std::string>& argv) {
    f << "add_test(" << quoted(name);
    for (const auto& a : argv) f << " " << quoted(a);
    f << ")\n";
  };

  // The gate (agent_hooks/README.md): one CTest run of `-L gate` verifies the kernel under test on
  // the gate suite, times it against the baseline and writes the report. Every gate test is
  // defined here, in one directory, so DEPENDS orders them: gate.setup first (clears the previous
  // run's outcomes, writes the marker that makes older files stale), gate.performance after the
  // verify tests and alone on the machine, gate.report last.
  const Suite* gate = nullptr;
  const auto suites = load_suite_dir(opt.scenario_dir);
  for (const auto& s : suites)
    if (s.name == "gate") gate = &s;
  std::vector<std::string> gate_verify;
  for (const auto& t : tests)
    if (t.gate) gate_verify.push_back(t.ctest_name);
  std::vector<std::string> report_args;
  std::filesystem::path gate_dir;
  if (gate) {
    if (opt.emit_bench.empty() || opt.emit_attngate.empty() || opt.emit_build_dir.empty() || opt.emit_source_dir.empty() ||
        opt.emit_judge.empty() || opt.emit_workers.empty())
      throw std::runtime_error("the suites include `gate`: --emit-ctest needs --emit-bench, --emit-attngate, "
                               "--emit-build-dir, --emit-source-dir, --emit-judge and --emit-workers");
    const std::filesystem::path build = opt.emit_build_dir;
    gate_dir = build / "gate";
    const std::string kernel = gate_kernel(*gate), baseline = gate_baseline(*gate);
    int sm = 90;  // Hopper: what the gate is for
    for (const std::string& k : {kernel, baseline})
      if (const KernelInfo* info = KernelRegistry::instance().find(k)) sm = std::max(sm, info->min_sm);
    if (opt.results_dir.empty()) throw std::runtime_error("the gate needs --results-dir");
    report_args = {opt.emit_attngate,
                   "report",
                   "--repo=" + opt.emit_source_dir,
                   "--suite=gate",
                   "--scenarios=" + opt.scenario_dir.string(),
                   "--kernel=" + kernel,
                   "--baseline=" + baseline,
                   "--results-dir=" + opt.results_dir.string(),
                   "--perf=" + (gate_dir / "performance.json").string(),
                   "--out-dir=" + gate_dir.string(),
                   "--started-after=" + (gate_dir / "started").string(),
                   "--ctest-log-dir=" + (build / "Testing" / "Temporary").string(),
                   "--verify-timeout=" + std::to_string(kVerifyTimeoutS),
                   "--perf-timeout=" + std::to_string(kPerfTimeoutS)};
    std::vector<std::string> setup = report_args;
    setup.push_back("--prepare");
    add_test("gate.setup", setup);
    f << "set_tests_properties(gate.setup PROPERTIES LABELS gate TIMEOUT 120)\n";
    add_test("gate.device", {opt.emit_judge, "--require-device=" + std::to_string(sm)});
    f << "set_tests_properties(gate.device PROPERTIES LABELS [==[gate;gpu]==] DEPENDS gate.setup TIMEOUT 120"
         " RESOURCE_GROUPS gpus:1)\n";
  }

  // The gate's kernels run in workers, never in the judge's process (agent_hooks/SECURITY.md).
  std::vector<std::string> workers;
  if (gate) workers = worker_args(opt.emit_workers, {gate_kernel(*gate), gate_baseline(*gate)});
  for (const auto& t : tests) {
    std::vector<std::string> argv = {gate && t.gate ? opt.emit_judge : opt.emit_exe};
    if (gate && t.gate) argv.insert(argv.end(), workers.begin(), workers.end());
    argv.push_back("--gtest_filter=" + t.gtest_name);
    argv.push_back("--scenarios=" + opt.scenario_dir.string());
    if (!opt.results_dir.empty()) argv.push_back("--results-dir=" + opt.results_dir.string());
    add_test(t.ctest_name, argv);
    f << "set_tests_properties(" << quoted(t.ctest_name) << " PROPERTIES LABELS " << quoted(join(t.labels))
      << " SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==] TIMEOUT " << kVerifyTimeoutS
      << (gate && t.gate ? " DEPENDS gate.setup" : "") << " RESOURCE_GROUPS gpus:1)\n";
  }

  if (gate) {
    std::vector<std::string> after = {"gate.setup"};
    after.insert(after.end(), gate_verify.begin(), gate_verify.end());
    std::vector<std::string> perf = {opt.emit_bench};
    perf.insert(perf.end(), workers.begin(), workers.end());
    perf.insert(perf.end(), {"--suite=gate", "--scenarios=" + opt.scenario_dir.string(),
                             "--compare=" + gate_kernel(*gate) + "," + gate_baseline(*gate),
                             "--compare_out=" + (gate_dir / "performance.json").string()});
    add_test("gate.performance", perf);
    // RUN_SERIAL: nothing else runs while it times. Without a GPU the bench prints SKIPPED (a skip,
    // never a pass) and the report fails for want of its JSON.
    f << "set_tests_properties(gate.performance PROPERTIES LABELS [==[gate;gpu;bench]==] RUN_SERIAL TRUE DEPENDS "
      << quoted(join(after)) << " SKIP_REGULAR_EXPRESSION [==[SKIPPED:]==] TIMEOUT " << kPerfTimeoutS
      << " RESOURCE_GROUPS gpus:1)\n";
    after.insert(after.begin() + 1, "gate.device");
    after.push_back("gate.performance");
    add_test("gate.report", report_args);
    f << "set_tests_properties(gate.report PROPERTIES LABELS gate DEPENDS " << quoted(join(after))
      << " TIMEOUT 300)\n";
  }
  if (!f.flush()) throw std::runtime_error("cannot write " + opt.emit_ctest);
}

// attngate's own flags, parsed with CLI11 after load_plugins, load_workers and InitGoogleTest took
// theirs (--plugin=PATH, --worker=PATH, --gtest_*) out of argv: whatever is left must be ours, so an
// unknown flag is an error (exit 2). `--help` prints GoogleTest's help (InitGoogleTest) and then these.
const char* kUsage =
    "usage: attngate_verify [gtest flags] [--worker=PATH]... [--scenarios=DIR] [--initial=KERNEL] [--results-dir=DIR]\n"
    "       attngate_verify --emit-ctest=FILE --emit-exe=PATH [--emit-bench=PATH --emit-attngate=PATH"
    " --emit-build-dir=DIR --emit-source-dir=DIR --emit-judge=PATH --emit-workers=DIR]"
    "   (the gate tests need the last six)\n"
    "       attngate_verify --require-device=SM   (exit 0 only with a GPU of compute capability >= SM/10)\n"
    "  ATTNGATE_SEED=N replays a run's inputs\n";

Options parse(int argc, char** argv) {
  Options opt;
  CLI::App app{"attngate_verify: one GoogleTest test per (kernel, scenario) of the YAML suites", "attngate_verify"};
  app.footer(kUsage);
  std::string scenario_dir = opt.scenario_dir.string(), results_dir;
  app.add_option("--scenarios", scenario_dir, "Directory of the YAML suites (default: the shipped scenarios/)");
  app.add_option("--initial", opt.initial, "The initial kernel other kernels' errors are compared with (default initial)");
  app.add_option("--results-dir", results_dir, "Write one result JSON per test into DIR (the gate reads them)");
  app.add_option("--require-device", opt.require_device,
                 "Only check for a CUDA device of compute capability >= SM/10 (e.g. 90): exit 0 if there is one, "
                 "1 if not; runs no test");
  auto* exe = app.add_option("--emit-exe", opt.emit_exe, "The test binary the emitted script runs");
  app.add_option("--emit-ctest", opt.emit_ctest, "Write the CTest script of the generated tests to FILE and exit")
      ->needs(exe);
  app.add_option("--emit-bench", opt.emit_bench, "Gate tests: attngate_bench(_judge) for gate.performance");
  app.add_option("--emit-attngate", opt.emit_attngate, "Gate tests: agent_hooks' attngate for gate.setup/gate.report");
  app.add_option("--emit-build-dir", opt.emit_build_dir, "Gate tests: the build tree (<build>/gate holds the report)");
  app.add_option("--emit-source-dir", opt.emit_source_dir, "Gate tests: the repository the report hashes");
  app.add_option("--emit-judge", opt.emit_judge, "Gate tests: attngate_verify_judge, which runs the gate's tests");
  app.add_option("--emit-workers", opt.emit_workers, "Gate tests: the folder of the attngate_worker_<library> binaries");
  try {
    app.parse(argc, argv);
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
            std::memcpy(&h, &raw[i], 2);
            got = __half2float(h);
          }
          ASSERT_EQ(got, want[i]) << dtype_name(t) << " tensor " << tensor << " element " << i;
        }
      }
      EXPECT_EQ(count_input_mismatches(p.params, 1234, d, nullptr), 0u);
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
  std::vector<Generated> generated;
  try {
    generated = register_tests(opt);
    generated.push_back({"selfcheck.host_inputs_match_device", "gpu.selfcheck.host_inputs_match_device",
                         {"gpu", "verify"}});
    if (!opt.emit_ctest.empty()) {
      emit_ctest(opt, generated);
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "attngate_verify: " << e.what() << "\n";
    return 2;
  }
  std::cout << "attngate_verify: base seed " << base_seed() << " (replay with ATTNGATE_SEED=" << base_seed()
            << ")\n";
  return RUN_ALL_TESTS();
}
