// attngate_profile_call: the calls `attngate profile` (agent_hooks) runs under Nsight Compute.
// For each kernel, in its worker (--worker=PATH): --warmups plain calls on new inputs, then one call
// that the worker brackets in the NVTX range `profile` of domain `attngate`, the only range the
// profiler is told to include; the judge's own kernels (fills, poison) are outside it. Prints one
// line per kernel: the profiled call's output must hold no NaN (it is poisoned before), else exit 1.
// Without a GPU it writes the reason into the calls document (--calls-out), prints a SKIPPED line
// and exits 0 (2 if the document cannot be written).
//
//   attngate_profile_call --worker=PATH... (--suite=S --scenario=ID [--scenarios=DIR] | --shape=SPEC)
//                         --kernels=K[,K] [--warmups=N] [--seed=N]
#include <cuda_runtime_api.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attngate/bench/profile_call.hpp"
#include "attngate/cuda_check.hpp"
#include "attngate/registry.hpp"
#include "attngate/scenario.hpp"
#include "attngate/verify/device_check.hpp"
#include "attngate/verify/problem.hpp"
#include "attngate/verify/remote.hpp"

namespace {

using namespace attngate;

struct Options {
  std::string scenario_dir = ATTNGATE_DEFAULT_SCENARIO_DIR, suite, scenario;
  std::vector<std::string> shapes, kernels;
  std::string calls_out;  // --calls-out: the ProfileCallDocument (the calls, or why none was made)
  int warmups = 3;
  uint64_t seed = std::random_device{}();
};

Scenario pick_scenario(const Options& o) {
  if (!o.shapes.empty()) {
    if (o.shapes.size() != 1) throw std::runtime_error("profile one shape at a time (--shape given " +
                                                       std::to_string(o.shapes.size()) + " times)");
    return adhoc_suite(o.shapes).scenarios.front();
  }
  for (const Suite& s : load_suite_dir(o.scenario_dir)) {
    if (s.name != o.suite) continue;
    for (const Scenario& x : s.scenarios)
      if (x.id == o.scenario) return x;
    throw std::runtime_error("no scenario '" + o.scenario + "' in suite " + o.suite);
  }
  throw std::runtime_error("no suite '" + o.suite + "' in " + o.scenario_dir);
}

// Warm-up calls, then the profiled one, on new contents each; the NaN count of the profiled call.
int64_t profile_kernel(const KernelInfo& k, const Scenario& s, const Options& o, cudaStream_t st) {
  verify::remote::RemoteKernel* remote = verify::remote::find(k);
  if (!remote) throw std::runtime_error("kernel '" + k.name + "' is not in a worker (pass its --worker=PATH)");
  verify::PoolScope pool(verify::pool_for(k.name));
  verify::Problem p(s);
  for (int i = 0; i <= o.warmups; ++i) {
    p.fill(verify::scenario_seed(o.seed, s.id, i), Distribution::standard, st);
    p.o.poison(st);
    p.lse.poison(st);
    if (i < o.warmups) p.launch(k, st);
  }
  const cudaError_t e = verify::remote::profiled_launch(*remote, p.params, st);
  if (e != cudaSuccess) throw std::runtime_error("the profiled call of " + k.name + " failed: " + cudaGetErrorString(e));
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
  return verify::count_nan_outputs(p, st);
}

// The calls document for `attngate profile` (nothing without --calls-out); false, said, if unwritable.
bool write_calls(const std::string& path, const bench::ProfileCallDocument& d) {
  if (path.empty()) return true;
  std::ofstream f(path);
  f << nlohmann::json(d).dump(2) << "\n";
  if (f.flush()) return true;
  std::cerr << "attngate_profile_call: cannot write " << path << "\n";
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    verify::remote::load_workers(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "attngate_profile_call: " << e.what() << "\n";
    return 2;
  }
  Options o;
  CLI::App app{"attngate_profile_call: one profiled call per kernel, for `attngate profile`", "attngate_profile_call"};
  app.add_option("--scenarios", o.scenario_dir, "Directory of the YAML suites (default: the shipped scenarios/)");
  app.add_option("--suite", o.suite, "Suite of --scenario");
  app.add_option("--scenario", o.scenario, "Scenario id");
  app.add_option("--shape", o.shapes, "An ad-hoc shape instead (scenarios/README.md)");
  app.add_option("--kernels", o.kernels, "Kernels to profile, each in its worker")->delimiter(',')->required();
  app.add_option("--warmups", o.warmups, "Plain calls before the profiled one (default 3)")->check(CLI::NonNegativeNumber);
  app.add_option("--seed", o.seed, "Base seed of the inputs (default: drawn at run time)");
  app.add_option("--calls-out", o.calls_out,
                 "Write the calls made (kernel, worker pid, NaN count), or why none was, as JSON to FILE");
  CLI11_PARSE(app, argc, argv);
  if (o.shapes.empty() == (o.suite.empty() || o.scenario.empty())) {
    std::cerr << "attngate_profile_call: give --suite and --scenario, or --shape\n";
    return 2;
  }
  const verify::DeviceStatus dev = verify::probe_device();
  if (!dev.available) {  // `attngate profile` reads the skip from the document, not this line
    std::cout << "attngate_profile_call: SKIPPED: needs a CUDA GPU: " << dev.why << std::endl;
    bench::ProfileCallDocument skipped;
    skipped.skipped = "needs a CUDA GPU: " + dev.why;
    return write_calls(o.calls_out, skipped) ? 0 : 2;
  }
  try {
    const Scenario s = pick_scenario(o);
    cudaStream_t st = nullptr;
    ATTNGATE_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    int bad = 0;
    std::vector<bench::ProfiledCall> calls;
    for (const std::string& name : o.kernels) {
      const KernelInfo* k = KernelRegistry::instance().find(name);
      if (!k) throw std::runtime_error("no kernel '" + name + "' (none of the workers registers it)");
      const int64_t nan = profile_kernel(*k, s, o, st);
      calls.push_back({name, verify::remote::worker_pid(*verify::remote::find(*k)), nan});
      std::cout << "attngate_profile_call: " << name << " on " << s.id << " (" << scenario_summary(s)
                << "): profiled call done in worker pid " << calls.back().worker_pid << ", " << nan
                << " NaN in its output (seed " << o.seed << ")\n";
      bad += nan != 0;
    }
    bench::ProfileCallDocument made;
    made.calls = calls;
    if (!write_calls(o.calls_out, made)) return 2;
    return bad == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "attngate_profile_call: " << e.what() << "\n";
    return 2;
  }
}
