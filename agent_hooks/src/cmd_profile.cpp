// `attngate profile`: one scenario's call of a kernel (and of --compare's) under Nsight Compute,
// each kernel in its own worker (attngate_profile_call, bench/tools), summarized from ncu's own
// report (profile.hpp). A profile is not a verdict: the workers run unsealed (ncu's injection
// writes under /tmp and talks to its host over sockets), so the kernel has the user's own rights
// while it runs, and nothing here is recorded in the lineage.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "attngate/bench/device_peak.hpp"
#include <fmt/format.h>

#include "attngate/bench/profile_call.hpp"
#include "attngate/hooks/commands.hpp"
#include "attngate/gate/process.hpp"
#include "attngate/hooks/profile.hpp"
#include "attngate/scenario.hpp"
#include "attngate/worker/libraries.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using profile::ProfileDocument;

namespace {

// ncu: --ncu, else on PATH, else the CUDA toolkit's; empty when there is none.
std::string find_ncu(const std::string& given) {
  if (!given.empty()) return fs::exists(given) ? given : "";
  if (on_path("ncu")) return "ncu";
  for (const char* p : {"/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"})
    if (fs::exists(p)) return p;
  return "";
}

Scenario pick(const ProfileOptions& o, const fs::path& scenarios) {
  if (!o.shape.empty()) return adhoc_suite({o.shape}).scenarios.front();
  for (const Suite& s : load_suite_dir(scenarios)) {
    if (s.name != o.suite) continue;
    for (const Scenario& x : s.scenarios)
      if (x.id == o.scenario) return x;
    throw std::runtime_error("no scenario '" + o.scenario + "' in suite " + o.suite + " (" + s.file + ")");
  }
  throw std::runtime_error("no suite '" + o.suite + "' in " + scenarios.string());
}

// attngate_profile_call's document, if it wrote a readable one (else why not, in `why`).
std::optional<bench::ProfileCallDocument> read_calls(const fs::path& file, std::string& why) {
  try {
    return nlohmann::json::parse(std::ifstream(file)).get<bench::ProfileCallDocument>();
  } catch (const std::exception& e) {
    why = e.what();
    return std::nullopt;
  }
}

// Nsight Compute's own message when no kernel ran in the profiled range (its text: ncu has no
// document to read it from).
bool profiled_nothing(const RunResult& r) {
  return (r.out + r.err).find("No kernels were profiled") != std::string::npos;
}

// Why ncu failed, with the fix where the reason is a known one.
std::string ncu_failure(const RunResult& r) {
  const std::string text = r.out + r.err;
  if (profiled_nothing(r))
    return "ncu profiled no kernel: nothing ran inside the NVTX range attngate@profile (was the worker built with "
           "its NVTX ranges?)\n" + (text.size() > 2000 ? text.substr(text.size() - 2000) : text);
  if (text.find("ERR_NVGPUCTRPERM") != std::string::npos)
    return "the driver lets only administrators read GPU performance counters (ERR_NVGPUCTRPERM): run as root, "
           "or load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
           "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
  const std::string tail = text.size() > 2000 ? text.substr(text.size() - 2000) : text;
  return "ncu exited " + std::to_string(r.exit_code) + ":\n" + tail;
}

// The ncu command that runs attngate_profile_call with every kernel in its worker.
// Clocks are left as the GPU runs them (--clock-control none), so durations compare with the
// bench's and with the boost-clock peak; ncu's default would lock them to base.
std::vector<std::string> ncu_argv(const std::string& ncu, const fs::path& build, const fs::path& report,
                                  const fs::path& calls, const std::vector<std::string>& kernels,
                                  const ProfileOptions& o, const fs::path& scenarios) {
  std::vector<std::string> argv = {ncu, "--target-processes", "all", "--nvtx", "--nvtx-include", "attngate@profile/",
                                   "--clock-control", "none", "--metrics", fmt::format("{}", fmt::join(profile::ncu_metrics(), ",")),
                                   "--export", report.string(), "--force-overwrite",
                                   (build / "bench" / "attngate_profile_call").string(), "--calls-out=" + calls.string()};
  for (const auto& k : kernels)
    argv.push_back("--worker=" + (build / "kernels" / "worker" / ("attngate_worker_" + worker::library_of(k))).string());
  argv.push_back("--kernels=" + fmt::format("{}", fmt::join(kernels, ",")));
  if (!o.shape.empty()) argv.push_back("--shape=" + o.shape);
  else argv.insert(argv.end(), {"--scenarios=" + scenarios.string(), "--suite=" + o.suite, "--scenario=" + o.scenario});
  return argv;
}

ProfileDocument run_profile(const Context& ctx, const ProfileOptions& o, const std::string& ncu) {
  const fs::path build = o.build_dir.empty() ? ctx.repo / "build" / "gpu" : o.build_dir;
  const fs::path scenarios = ctx.repo / "scenarios";
  const Scenario s = pick(o, scenarios);
  std::vector<std::string> kernels = {o.kernel};
  if (!o.compare.empty()) kernels.push_back(o.compare);
  if (kernels.size() == 2 && worker::library_of(kernels[0]) == worker::library_of(kernels[1]))
    throw std::runtime_error(kernels[0] + " and " + kernels[1] + " run in the same worker; ncu tells kernels apart by it");
  const fs::path caller = build / "bench" / "attngate_profile_call";
  if (!fs::exists(caller)) throw std::runtime_error(caller.string() + " is not built: cmake --build " + build.string());
  const fs::path out = build / "profile" / s.id;
  fs::create_directories(out);
  const fs::path report = out / "profile";
  RunOptions ro;
  ro.cwd = ctx.repo;
  ro.env = {{"ATTNGATE_SANDBOX", "off"}};
  const fs::path calls_file = out / "calls.json";
  fs::remove(calls_file);
  const RunResult run = run_process(ncu_argv(ncu, build, report, calls_file, kernels, o, scenarios), ro);
  std::string unreadable;
  const std::optional<bench::ProfileCallDocument> calls = read_calls(calls_file, unreadable);
  // A skip stands where ncu succeeded or failed only for having profiled nothing (what it does
  // when the tool made no call); any other failure of ncu, such as a call whose output held NaN
  // (the tool's exit 1), is reported as one, whatever the document says.
  if (calls && !calls->skipped.empty() && (run.exit_code == 0 || profiled_nothing(run)))
    throw std::runtime_error("SKIPPED: " + calls->skipped);
  if (run.exit_code != 0) throw std::runtime_error(ncu_failure(run));
  if (!calls) throw std::runtime_error("no readable " + calls_file.string() + " from attngate_profile_call: " + unreadable);
  const RunResult csv =
      run_process({ncu, "--import", report.string() + ".ncu-rep", "--csv", "--page", "raw", "--print-units", "base"});
  if (csv.exit_code != 0) throw std::runtime_error(ncu_failure(csv));
  const auto rows = profile::parse_ncu_csv(csv.out);
  ProfileDocument d;
  d.scenario = s.id;
  d.shape = scenario_summary(s);
  d.flops = s.flops();
  d.report = report.string() + ".ncu-rep";
  if (!rows.empty()) d.device = rows.front().text("device__attribute_display_name").value_or("");
  d.peak_tflops = bench::lookup_peak(d.device).bf16_dense_tflops;
  for (const auto& c : calls->calls)
    d.kernels.push_back(profile::summarize(rows, c.kernel, "attngate_worker_" + worker::library_of(c.kernel),
                                           c.worker_pid, d.flops, d.peak_tflops));
  std::ofstream(out / "profile.json") << nlohmann::json(d).dump(2) << "\n";
  return d;
}

}  // namespace

int cmd_profile(const Context& ctx, const ProfileOptions& o) {
  if (o.shape.empty() == o.scenario.empty()) {
    *ctx.err << "attngate profile: give --scenario ID (of --suite, default gate) or --shape SPEC\n";
    return kExitError;
  }
  const std::string ncu = find_ncu(o.ncu);
  if (ncu.empty()) {
    *ctx.err << "attngate profile: no Nsight Compute (ncu) "
             << (o.ncu.empty() ? "on PATH or in /usr/local/cuda/bin" : "at " + o.ncu)
             << ": install it (the CUDA toolkit's nsight-compute package) or pass --ncu=PATH\n";
    return kExitEnvironment;
  }
  try {
    const ProfileDocument d = run_profile(ctx, o, ncu);
    if (o.json) *ctx.out << nlohmann::json(d).dump(2) << "\n";
    else *ctx.out << profile::render_summary(d);
    return kExitPass;
  } catch (const std::exception& e) {
    *ctx.err << "attngate profile: " << e.what() << "\n";
    return kExitEnvironment;
  }
}

}  // namespace attngate::hooks
