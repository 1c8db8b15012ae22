// attngate_adversarial: proves that attngate catches a planted cheat. It runs one kernel of
// kernels/adversarial/cheats.yaml through attngate_verify, attngate_bench and compute-sanitizer,
// each as a child process with a timeout (so a fault or a hang in the kernel ends only that child),
// and checks that the outcome is the one the catalogue expects: the right tests failed, with the
// right reasons. CTest runs it as adversarial.<name> (labels adversarial;gpu); without a usable GPU
// it prints "attngate-adversarial: SKIPPED: ..." and CTest reports a skip, never a pass.
//
//   attngate_adversarial --cheat=NAME --catalogue=FILE --scenarios=DIR --verify=EXE --bench=EXE
//                        --work-dir=DIR [--sanitizer=EXE --sanitize-verify=EXE]
//                        [--workers=DIR --attngate=EXE --source-dir=DIR]
//       With --workers, --verify and --bench are the judge builds and every kernel runs in its worker
//       (kernels/worker); with --attngate too, a gate stage runs the whole adversarial suite through
//       the judge and `attngate report` and checks the report's reason codes against gate_code.
//   attngate_adversarial --check-catalogue --catalogue=FILE --scenarios=DIR --expect-tests=A,B,...
//       (CPU: the catalogue names every registered cheat_*/control_* kernel, each entry is well formed and
//        uses scenarios the kernel supports, and CMake registered one test per entry)
//   --no-device-check runs without a GPU; only the driver's own test uses it, with fake tools.
#include <cuda_runtime_api.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attngate/bench/comparison_document.hpp"
#include "attngate/registry.hpp"
#include "attngate/scenario.hpp"
#include "attngate/verify/gpu_pinning.hpp"
#include "attngate/verify/process.hpp"
#include "attngate/worker/libraries.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSkipped = "attngate-adversarial: SKIPPED: ";
constexpr int kMinSm = 90;  // the cheats are built for sm_90a only

// ---- The catalogue ------------------------------------------------------------------------------

struct VerifyExpect {
  std::string expect;  // pass | fail | fail_any | crash | timeout
  std::vector<std::string> fail, pass, reasons;
  int timeout_s = 600;
};
struct BenchExpect {
  std::string expect;  // pass | fail | flag
  std::string scenario;
  std::vector<std::string> errors;    // fail: one of them in the benchmark's error message
  std::vector<std::string> counters;  // flag: each > 0 in the benchmark JSON and the comparison JSON
};
struct SanitizerExpect {
  std::string tool, scenario, expect;  // expect: errors | clean
};
struct Entry {
  std::string name, does, gate_code;  // gate_code: PASS, or codes the report must give ("A|B": either)
  std::optional<double> gate_max_speedup;  // PASS entries: the geomean may not exceed this
  std::optional<double> gate_min_speedup;  // PASS entries: nor fall below this (the fast honest control)
  bool own_worker = false;                 // registered only in a worker of its own, not in-process
  std::vector<std::string> gate_ignore;    // codes the gate stage leaves out (a slow control's speed)
  bool optional = false;                   // a kernel not every build has (cudnn): no test without it
  std::optional<VerifyExpect> verify;
  std::optional<BenchExpect> bench;
  std::optional<SanitizerExpect> sanitizer;
};

[[noreturn]] void bad_catalogue(const YAML::Node& n, const std::string& what) {
  throw std::runtime_error("catalogue line " + std::to_string(n.Mark().line + 1) + ": " + what);
}

void only_keys(const YAML::Node& n, std::initializer_list<const char*> keys, const std::string& where) {
  if (!n.IsMap()) bad_catalogue(n, where + " must be a mapping");
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (std::none_of(keys.begin(), keys.end(), [&](const char* x) { return k == x; }))
      bad_catalogue(kv.first, "unknown key '" + k + "' in " + where);
  }
}

std::vector<std::string> strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (!n) return out;
  if (!n.IsSequence()) bad_catalogue(n, "expected a list");
  for (const auto& x : n) out.push_back(x.as<std::string>());
  return out;
}

std::vector<Entry> load_catalogue(const fs::path& file) {
  const YAML::Node root = YAML::LoadFile(file.string());
  only_keys(root, {"cheats"}, "the top level");
  std::vector<Entry> out;
  for (const YAML::Node& c : root["cheats"]) {
    only_keys(c, {"name", "does", "gate_code", "gate_max_speedup", "gate_min_speedup", "gate_ignore", "optional", "own_worker", "verify", "bench",
                  "sanitizer"},
              "an entry");
    Entry e;
    e.name = c["name"].as<std::string>();
    e.does = c["does"] ? c["does"].as<std::string>() : "";
    e.gate_code = c["gate_code"] ? c["gate_code"].as<std::string>() : "";
    if (c["gate_max_speedup"]) e.gate_max_speedup = c["gate_max_speedup"].as<double>();
    if (c["gate_min_speedup"]) e.gate_min_speedup = c["gate_min_speedup"].as<double>();
    e.own_worker = c["own_worker"] && c["own_worker"].as<bool>();
    e.gate_ignore = strings(c["gate_ignore"]);
    e.optional = c["optional"] && c["optional"].as<bool>();
    if (const YAML::Node v = c["verify"]) {
      only_keys(v, {"expect", "fail", "pass", "reasons", "timeout_s"}, e.name + ".verify");
      VerifyExpect x;
      x.expect = v["expect"].as<std::string>();
      x.fail = strings(v["fail"]);
      x.pass = strings(v["pass"]);
      x.reasons = strings(v["reasons"]);
      if (v["timeout_s"]) x.timeout_s = v["timeout_s"].as<int>();
      e.verify = x;
    }
    if (const YAML::Node b = c["bench"]) {
      only_keys(b, {"expect", "scenario", "errors", "counters"}, e.name + ".bench");
      e.bench = BenchExpect{b["expect"].as<std::string>(), b["scenario"].as<std::string>(), strings(b["errors"]),
                            strings(b["counters"])};
    }
    if (const YAML::Node s = c["sanitizer"]) {
      only_keys(s, {"tool", "scenario", "expect"}, e.name + ".sanitizer");
      e.sanitizer = SanitizerExpect{s["tool"].as<std::string>(), s["scenario"].as<std::string>(),
                                    s["expect"].as<std::string>()};
    }
    out.push_back(std::move(e));
  }
  return out;
}

// ---- Child processes ----------------------------------------------------------------------------

struct Child {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
  std::string output;

  std::string status() const {
    if (timed_out) return "killed after its timeout";
    if (signal) return std::string("killed by signal ") + strsignal(signal);
    return "exit code " + std::to_string(exit_code);
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs argv in its own process group with stdout and stderr in `log`; kills the whole group after
// timeout_s seconds (attngate/verify/process.hpp).
Child run_child(const std::vector<std::string>& argv, const fs::path& log, int timeout_s) {
  namespace proc = attngate::verify::process;
  std::cout << "$";
  for (const auto& a : argv) std::cout << " " << a;
  std::cout << "\n  (output: " << log.string() << ", timeout " << timeout_s << " s)" << std::endl;
  const auto t0 = std::chrono::steady_clock::now();
  proc::Exit e;
  {
    const proc::Fd out = proc::open_output(log, false);
    proc::SpawnOptions options;
    options.out = options.err = proc::Stream::to(out.get());
    options.own_group = true;
    e = proc::run(argv, options, timeout_s);
  }
  Child c;
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  c.timed_out = e.timed_out;
  c.signal = e.timed_out ? 0 : e.signal;  // the timeout's SIGKILL is ours, not the child's doing
  c.exit_code = e.signal ? -1 : e.code;
  c.output = read_file(log);
  std::cout << "  -> " << c.status() << " after " << int(c.seconds + 0.5) << " s" << std::endl;
  return c;
}

std::string tail(const std::string& s, size_t n = 3000) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

bool contains_any(const std::string& text, const std::vector<std::string>& needles, std::string* which = nullptr) {
  for (const auto& n : needles)
    if (text.find(n) != std::string::npos) {
      if (which) *which = n;
      return true;
    }
  return false;
}

// ---- One kernel through the checks -------------------------------------------------------------

struct Paths {
  fs::path catalogue, scenarios, verify, bench, sanitizer, work;
  fs::path sanitize_verify;        // the in-process verify binary compute-sanitizer runs (default: verify)
  fs::path workers, attngate, source;  // the isolated judge: worker folder, the report tool, the repository
};

// The judge's --worker arguments for a kernel and the baseline, each in the worker that holds it
// (attngate::worker::library_of). The baseline's
// worker comes first, as in the gate, so its round trip is measured before any other worker exists.
std::vector<std::string> worker_args(const Paths& p, const std::string& kernel) {
  if (p.workers.empty()) return {};
  return attngate::worker::worker_args(p.workers, {"initial", kernel});
}

// argv of a judge binary: the executable, the workers, the rest.
std::vector<std::string> judge_argv(const Paths& p, const fs::path& exe, const std::string& kernel,
                                    std::vector<std::string> rest) {
  std::vector<std::string> argv = {exe.string()};
  for (auto& w : worker_args(p, kernel)) argv.push_back(std::move(w));
  for (auto& a : rest) argv.push_back(std::move(a));
  return argv;
}

class Checker {
 public:
  Checker(const Entry& e, const Paths& p) : e_(e), p_(p) {}

  int run() {
    std::cout << "adversarial." << e_.name << ": " << e_.does << " (gate code " << e_.gate_code << ")\n";
    if (e_.verify) check_verify(*e_.verify);
    if (e_.bench) check_bench(*e_.bench);
    if (e_.sanitizer) check_sanitizer(*e_.sanitizer);
    if (!p_.attngate.empty() && !(e_.verify && e_.verify->expect == "timeout")) check_gate();
    std::cout << "\n";
    for (const auto& line : caught_) std::cout << "  ok: " << line << "\n";
    for (const auto& line : notes_) std::cout << "  note: " << line << "\n";
    for (const auto& line : failures_) std::cout << "  FAILED: " << line << "\n";
    const bool ok = failures_.empty();
    std::cout << (ok ? "PASS: " : "FAIL: ") << e_.name
              << (ok ? (e_.gate_code == "PASS" ? " passed every check, as an honest kernel must"
                                               : " was caught as expected")
                     : " was not caught as expected")
              << std::endl;
    return ok ? 0 : 1;
  }

 private:
  void fail(const std::string& s) { failures_.push_back(s); }

  // The result JSON attngate_verify wrote for one scenario, or null when there is none.
  json result(const fs::path& dir, const std::string& scenario) {
    const fs::path f = dir / ("verify." + e_.name + "." + scenario + ".json");
    if (!fs::exists(f)) return nullptr;
    try {
      return json::parse(read_file(f));
    } catch (const std::exception& ex) {
      fail(f.string() + " is not valid JSON: " + ex.what());
      return nullptr;
    }
  }

  static std::vector<std::string> reasons_of(const json& r) {
    std::vector<std::string> out;
    if (r.is_null()) return out;
    if (r.contains("runs"))
      for (const auto& run : r["runs"])
        for (const auto& why : run.value("reasons", json::array())) out.push_back(run.value("distribution", "?") + ": " + why.get<std::string>());
    return out;
  }

  void check_verify(const VerifyExpect& v) {
    const fs::path results = p_.work / "verify_results";
    fs::remove_all(results);
    fs::create_directories(results);
    std::vector<std::string> scenarios = v.fail;
    scenarios.insert(scenarios.end(), v.pass.begin(), v.pass.end());
    std::string filter;
    for (const auto& s : scenarios) filter += (filter.empty() ? "" : ":") + e_.name + "." + s;
    const Child c = run_child(judge_argv(p_, p_.verify, e_.name,
                                         {"--gtest_filter=" + filter, "--scenarios=" + p_.scenarios.string(),
                                          "--results-dir=" + results.string()}),
                              p_.work / "verify.log", v.timeout_s);
    const std::string what = "verify (" + c.status() + ")";

    if (v.expect == "timeout") {
      if (!c.timed_out) fail(what + ": expected to be still running after " + std::to_string(v.timeout_s) + " s");
      for (const auto& s : v.fail) {
        const json r = result(results, s);
        if (!r.is_null() && r.value("status", "") == "passed") fail(s + ": a hung kernel's test reported passed");
      }
      if (failures_.empty())
        caught_.push_back("verify: " + v.fail.front() + " never finished; killed after " +
                          std::to_string(v.timeout_s) + " s (as CTest's TIMEOUT does)");
      return;
    }
    if (c.timed_out) {
      fail(what + ": the verification did not finish; last output:\n" + tail(c.output));
      return;
    }
    if (v.expect == "crash") {
      const std::string& s = v.fail.front();
      const json r = result(results, s);
      if (c.exit_code == 0) fail(what + ": expected the process to fail");
      if (r.is_null()) {
        if (c.signal == 0 && c.exit_code == 0) fail(s + ": no result and a clean exit");
        else caught_.push_back("verify: " + s + ": process ended (" + c.status() + ") without a result: a crash");
      } else {
        const std::string status = r.value("status", "");
        const std::string detail = r.value("detail", "");
        std::string which;
        if (status != "error") fail(s + ": status '" + status + "', expected 'error'");
        else if (!contains_any(detail, v.reasons, &which)) fail(s + ": error detail lacks the expected reason: " + detail);
        else caught_.push_back("verify: " + s + ": status error, \"" + detail + "\"");
      }
      return;
    }

    for (const auto& s : v.pass) {
      const json r = result(results, s);
      const std::string status = r.is_null() ? "no result" : r.value("status", "?");
      if (status != "passed") {
        std::string why;
        for (const auto& x : reasons_of(r)) why += "\n      " + x;
        if (!r.is_null() && r.contains("detail") && !r["detail"].get<std::string>().empty())
          why += "\n      " + r["detail"].get<std::string>();
        fail("verify: " + s + " must pass, got " + status + why);
      } else if (v.expect == "pass") {
        caught_.push_back("verify: " + s + ": passed");
      } else {
        notes_.push_back("verify: " + s + ": passed (the bug cannot reach this shape)");
      }
    }
    if (v.expect == "pass") {
      if (c.exit_code != 0 && failures_.empty()) fail(what + ": every result passed but the process failed:\n" + tail(c.output));
      return;
    }
    int caught = 0;
    std::vector<std::string> missed;
    for (const auto& s : v.fail) {
      const json r = result(results, s);
      const std::string status = r.is_null() ? "no result" : r.value("status", "?");
      std::string matched;
      for (const auto& why : reasons_of(r)) {
        if (status == "failed" && contains_any(why, v.reasons)) {
          matched = why;
          break;
        }
      }
      if (!matched.empty()) {
        ++caught;
        caught_.push_back("verify: " + s + ": failed: " + matched);
      } else {
        std::string got;
        for (const auto& x : reasons_of(r)) got += "\n      " + x;
        if (!r.is_null() && !r.value("detail", "").empty()) got += "\n      " + r.value("detail", "");
        missed.push_back(s + ": " + status + " without an expected reason" + got);
      }
    }
    if (v.expect == "fail") {
      for (const auto& m : missed) fail("verify: " + m);
    } else if (caught == 0) {
      for (const auto& m : missed) fail("verify: " + m);
      fail("verify: none of the scenarios caught it");
    } else {
      for (const auto& m : missed) notes_.push_back("verify: " + m);
    }
  }

  void check_bench(const BenchExpect& b) {
    const fs::path perf = p_.work / "perf.json";
    const fs::path gb = p_.work / "bench.json";
    fs::remove(perf);
    fs::remove(gb);
    const std::string bench_name = e_.name + "_vs_initial/" + b.scenario;
    const Child c = run_child(judge_argv(p_, p_.bench, e_.name,
                                         {"--scenarios=" + p_.scenarios.string(), "--suite=adversarial",
                                          "--compare=" + e_.name + ",initial", "--compare_out=" + perf.string(),
                                          "--benchmark_filter=^" + bench_name, "--benchmark_out=" + gb.string(),
                                          "--benchmark_out_format=json", "--time-cap-s=0.3"}),
                              p_.work / "bench.log", 600);
    const std::string what = "bench (" + c.status() + ")";
    if (c.timed_out || c.signal) {
      fail(what + ": the benchmark did not finish; last output:\n" + tail(c.output));
      return;
    }
    json run = nullptr;
    try {
      const json j = json::parse(read_file(gb));
      for (const auto& x : j.value("benchmarks", json::array())) {
        const std::string name = x.value("name", "");
        if (name == bench_name || name.rfind(bench_name + "/", 0) == 0) run = x;
      }
    } catch (const std::exception& ex) {
      fail(what + ": no readable " + gb.string() + " (" + ex.what() + "); last output:\n" + tail(c.output));
      return;
    }
    if (run.is_null()) {
      fail(what + ": " + gb.string() + " has no benchmark " + bench_name + "; last output:\n" + tail(c.output));
      return;
    }
    const bool errored = run.value("error_occurred", false);
    const std::string message = run.value("error_message", "");
    if (b.expect == "flag") {
      if (errored) {
        fail("bench: " + bench_name + " errored (" + message + "); expected it timed and flagged");
        return;
      }
      std::optional<attngate::bench::KernelTiming> timed;  // the comparison's, read through its type
      try {
        for (const auto& s : attngate::bench::parse_comparison_document(json::parse(read_file(perf))).scenarios)
          if (s.id == b.scenario) timed = s.kernel_timing;
      } catch (const std::exception& ex) {
        fail("bench: no readable " + perf.string() + ": " + ex.what());
      }
      for (const auto& counter : b.counters) {
        const double v = run.contains(counter) && run[counter].is_number() ? run[counter].get<double>() : 0.0;
        if (v <= 0) fail("bench: " + bench_name + ": counter " + counter + " is " + std::to_string(v) + ", expected > 0");
        else caught_.push_back("bench: " + bench_name + ": " + counter + " = " + std::to_string(v));
        // --check-catalogue refused a counter that is no figure of KernelTiming.
        const attngate::bench::TimingFigure* f = attngate::bench::timing_figure(counter);
        if (timed && f && !((*timed).*(f->member) > 0))
          fail("bench: " + perf.string() + ": kernel_timing." + counter + " is not > 0 for " + b.scenario);
      }
      return;
    }
    if (b.expect == "pass") {
      if (errored) fail("bench: " + bench_name + " must be timed, got the error: " + message);
      else if (c.exit_code != 0) fail(what + ": timed without error but the process failed:\n" + tail(c.output));
      else {
        std::ostringstream s;
        s << "bench: " << bench_name << ": timed, " << run.value("real_time", 0.0) << " us per call, "
          << "kernels_per_call " << run.value("kernels_per_call", -1.0) << ", foreign_stream_kernels "
          << run.value("foreign_stream_kernels", -1.0) << ", speedup " << run.value("speedup", 0.0);
        caught_.push_back(s.str());
        if (run.value("foreign_stream_kernels", 0.0) > 0)
          fail("bench: an honest kernel shows foreign_stream_kernels > 0 (CUPTI attribution problem)");
      }
      return;
    }
    if (!errored) {
      fail("bench: " + bench_name + " was timed without error; expected one of the timed-run checks to stop it");
      return;
    }
    if (!contains_any(message, b.errors)) fail("bench: " + bench_name + " errored without an expected reason: " + message);
    else caught_.push_back("bench: " + bench_name + ": " + message);
    if (c.exit_code == 0) fail(what + ": a benchmark errored but the process exited 0");
    // The comparison JSON carries the failure too (failed[]) when any scenario was compared.
    if (fs::exists(perf)) {
      try {
        const json j = json::parse(read_file(perf));
        bool listed = false;
        for (const auto& f : j.value("failed", json::array())) listed = listed || f.value("id", "") == b.scenario;
        if (!listed) fail("bench: " + perf.string() + " does not list " + b.scenario + " in failed[]");
      } catch (const std::exception& ex) {
        fail("bench: " + perf.string() + " is not valid JSON: " + ex.what());
      }
    }
  }

  void check_sanitizer(const SanitizerExpect& s) {
    if (p_.sanitizer.empty() || !fs::exists(p_.sanitizer)) {
      notes_.push_back("compute-sanitizer not found: the " + s.tool + " expectation (" + s.expect +
                       ") on " + s.scenario + " was not checked");
      return;
    }
    const fs::path verify = p_.sanitize_verify.empty() ? p_.verify : p_.sanitize_verify;
    const Child c = run_child({p_.sanitizer.string(), "--tool", s.tool, "--error-exitcode", "1", verify.string(),
                               "--gtest_filter=" + e_.name + "." + s.scenario, "--scenarios=" + p_.scenarios.string()},
                              p_.work / ("sanitizer_" + s.tool + ".log"), 1200);
    const std::string what = s.tool + " (" + c.status() + ")";
    if (c.timed_out || c.signal) {
      fail(what + ": did not finish; last output:\n" + tail(c.output));
      return;
    }
    long findings = -1;
    std::smatch m;
    const std::regex race(R"(RACECHECK SUMMARY: (\d+))"), errors(R"(ERROR SUMMARY: (\d+))");
    if (std::regex_search(c.output, m, race) || std::regex_search(c.output, m, errors)) findings = std::stol(m[1]);
    if (findings < 0) {
      fail(what + ": no summary line in its output:\n" + tail(c.output));
    } else if (s.expect == "errors") {
      if (findings == 0) fail(what + ": reported nothing on " + s.scenario);
      else caught_.push_back("compute-sanitizer " + s.tool + " on " + s.scenario + ": " + m[0].str() + "...");
    } else {
      if (findings > 0 || c.exit_code != 0) fail(what + " on " + s.scenario + " must be clean:\n" + tail(c.output));
      else caught_.push_back("compute-sanitizer " + s.tool + " on " + s.scenario + ": clean");
    }
  }

  // The gate on the whole adversarial suite, as `ctest -L gate` runs it on the gate suite: the judge
  // verifies every scenario and times every scenario against `initial`, kernels in their workers,
  // then `attngate report` judges; its reason codes must include gate_code (PASS: a pass).
  void check_gate() {
    const fs::path dir = p_.work / "gate";
    fs::remove_all(dir);
    fs::create_directories(dir / "results");
    const fs::path marker = dir / "started", perf = dir / "performance.json";
    std::ofstream(marker) << "adversarial gate stage\n";
    run_child(judge_argv(p_, p_.verify, e_.name,
                         {"--gtest_filter=" + e_.name + ".*", "--scenarios=" + p_.scenarios.string(),
                          "--results-dir=" + (dir / "results").string()}),
              dir / "verify.log", 600);
    run_child(judge_argv(p_, p_.bench, e_.name,
                         {"--scenarios=" + p_.scenarios.string(), "--suite=adversarial",
                          "--compare=" + e_.name + ",initial", "--compare_out=" + perf.string(), "--time-cap-s=0.2"}),
              dir / "bench.log", 600);
    const Child r = run_child({p_.attngate.string(), "report", "--repo=" + p_.source.string(), "--suite=adversarial",
                               "--scenarios=" + p_.scenarios.string(), "--kernel=" + e_.name, "--baseline=initial",
                               "--results-dir=" + (dir / "results").string(), "--perf=" + perf.string(),
                               "--out-dir=" + dir.string(), "--started-after=" + marker.string()},
                              dir / "report.log", 300);
    json report;
    try {
      report = json::parse(read_file(dir / "report.json"));
    } catch (const std::exception& ex) {
      fail("gate: no readable report (" + r.status() + "): " + ex.what() + "\n" + tail(r.output));
      return;
    }
    // The harness check is about the repository, not the kernel: a working tree with uncommitted
    // changes would fail every entry alike, so it is left out here (the real gate keeps it).
    std::set<std::string> codes;
    for (const auto& x : report.value("reasons", json::array())) {
      const std::string code = x.value("code", "");
      const bool ignored = std::find(e_.gate_ignore.begin(), e_.gate_ignore.end(), code) != e_.gate_ignore.end();
      if (code != "HARNESS_MODIFIED" && code != "HARNESS_UNVERIFIED" && !ignored) codes.insert(code);
    }
    std::string got;
    for (const auto& c : codes) got += (got.empty() ? "" : ", ") + c;
    // null where the report has no geomean (nothing was timed): read as 0, never thrown on.
    const json geomean = report.value("geomean", json::object());
    const double speedup = geomean.contains("speedup") && geomean["speedup"].is_number() ? geomean["speedup"].get<double>() : 0.0;
    if (e_.gate_code == "PASS") {
      if (!codes.empty()) fail("gate: an honest kernel must pass, the report says " + got + first_detail(report));
      else caught_.push_back("gate: pass, geomean " + std::to_string(speedup) + "x");
      if (e_.gate_max_speedup && speedup > *e_.gate_max_speedup)
        fail("gate: geomean " + std::to_string(speedup) + "x above " + std::to_string(*e_.gate_max_speedup));
      if (e_.gate_min_speedup && speedup < *e_.gate_min_speedup)
        fail("gate: geomean " + std::to_string(speedup) + "x below " + std::to_string(*e_.gate_min_speedup) +
             ": the gate fails an honest fast kernel");
      return;
    }
    std::stringstream alternatives(e_.gate_code);
    std::vector<std::string> matched;
    for (std::string code; std::getline(alternatives, code, '|');)
      if (codes.count(code)) matched.push_back(code);
    if (matched.empty()) fail("gate: expected " + e_.gate_code + ", the report says " + (got.empty() ? "pass" : got) + first_detail(report));
    else caught_.push_back("gate: " + matched.front() + " (all codes: " + got + ")" + first_detail(report, matched.front()));
  }

  static std::string first_detail(const json& report, const std::string& code = "") {
    for (const auto& x : report.value("reasons", json::array()))
      if (code.empty() || x.value("code", "") == code) return "; " + x.value("detail", "");
    return "";
  }

  const Entry& e_;
  const Paths& p_;
  std::vector<std::string> caught_, notes_, failures_;
};

// ---- The catalogue check (CPU) -----------------------------------------------------------------

// The comma-separated names of `list` as a set.
std::set<std::string> name_set(const std::string& list) {
  std::set<std::string> out;
  std::stringstream ss(list);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.insert(t);
  return out;
}

// The README's table of the catalogue (kernels/adversarial/README.md holds exactly this;
// unit.adversarial.readme_table checks it).
std::string render_table(const std::vector<Entry>& cat) {
  std::ostringstream out;
  out << "| kernel | what it does | stages (verify, bench, sanitizer expectations) | gate code |\n"
      << "| --- | --- | --- | --- |\n";
  for (const Entry& e : cat) {
    std::vector<std::string> stages;
    if (e.verify) stages.push_back("verify: " + e.verify->expect);
    if (e.bench) stages.push_back("bench: " + e.bench->expect);
    if (e.sanitizer) stages.push_back(e.sanitizer->tool + ": " + e.sanitizer->expect);
    std::string joined, code = e.gate_code;
    for (const auto& st : stages) joined += (joined.empty() ? "" : "; ") + st;
    for (size_t at; (at = code.find('|')) != std::string::npos;) code.replace(at, 1, " or ");
    std::string kernel = "`" + e.name + "`";
    if (e.optional) kernel += " (when built)";
    if (e.own_worker) kernel += " (own worker)";
    out << "| " << kernel << " | " << e.does << " | " << joined << " | " << code << " |\n";
  }
  return out.str();
}

int check_catalogue(const std::vector<Entry>& cat, const fs::path& scenario_dir, const std::string& expect_tests,
                    const std::string& expect_pass) {
  std::vector<std::string> problems;
  std::map<std::string, attngate::Scenario> scenarios;
  for (const auto& suite : attngate::load_suite_dir(scenario_dir)) {
    if (suite.name != "adversarial") problems.push_back("unexpected suite '" + suite.name + "' in " + scenario_dir.string());
    for (const auto& s : suite.scenarios) scenarios[s.id] = s;
  }
  const auto& reg = attngate::KernelRegistry::instance();
  std::set<std::string> names;
  for (const Entry& e : cat) {
    if (!names.insert(e.name).second) problems.push_back(e.name + ": listed twice");
    const attngate::KernelInfo* k = reg.find(e.name);
    if (e.own_worker) {  // in no in-process binary: its worker's library must be its own
      if (k) problems.push_back(e.name + ": own_worker, but linked into the in-process tools too");
      if (attngate::worker::library_of(e.name) == "adversarial")
        problems.push_back(e.name + ": own_worker, but attngate::worker::library_of puts it in the adversarial worker");
      if (!e.verify && !e.bench) problems.push_back(e.name + ": neither verify nor bench");
      if (e.gate_code.empty()) problems.push_back(e.name + ": no gate_code");
      std::vector<std::string> ids;  // which kernel supports them only its worker knows; they must exist
      if (e.verify) ids.insert(ids.end(), e.verify->pass.begin(), e.verify->pass.end());
      if (e.verify) ids.insert(ids.end(), e.verify->fail.begin(), e.verify->fail.end());
      if (e.bench) ids.push_back(e.bench->scenario);
      for (const auto& id : ids)
        if (!scenarios.count(id)) problems.push_back(e.name + ": unknown scenario '" + id + "'");
      continue;
    }
    if (!k && e.optional) {
      names.erase(e.name);  // not built here: CMake registers no test for it either
      continue;
    }
    if (!k) {
      problems.push_back(e.name + ": no registered kernel of that name");
      continue;
    }
    if (e.gate_code.empty()) problems.push_back(e.name + ": no gate_code");
    auto scenario_ok = [&](const std::string& id, const std::string& where) {
      auto it = scenarios.find(id);
      if (it == scenarios.end()) problems.push_back(e.name + "." + where + ": unknown scenario '" + id + "'");
      else if (!k->supports(it->second.dtype, it->second.head_dim))
        problems.push_back(e.name + "." + where + ": kernel does not support scenario '" + id + "'");
    };
    if (!e.verify && !e.bench) problems.push_back(e.name + ": neither verify nor bench");
    if (e.verify) {
      const VerifyExpect& v = *e.verify;
      static const std::set<std::string> kinds = {"pass", "fail", "fail_any", "crash", "timeout"};
      if (!kinds.count(v.expect)) problems.push_back(e.name + ".verify: unknown expect '" + v.expect + "'");
      if (v.expect == "pass" && (v.pass.empty() || !v.fail.empty()))
        problems.push_back(e.name + ".verify: expect pass needs `pass` and no `fail`");
      if (v.expect != "pass" && v.fail.empty()) problems.push_back(e.name + ".verify: expect " + v.expect + " needs `fail`");
      if ((v.expect == "fail" || v.expect == "fail_any" || v.expect == "crash") && v.reasons.empty())
        problems.push_back(e.name + ".verify: expect " + v.expect + " needs `reasons`");
      if ((v.expect == "crash" || v.expect == "timeout") && (v.fail.size() != 1 || !v.pass.empty()))
        problems.push_back(e.name + ".verify: expect " + v.expect + " takes exactly one scenario in `fail`");
      if (v.timeout_s <= 0) problems.push_back(e.name + ".verify: timeout_s must be positive");
      for (const auto& s : v.fail) scenario_ok(s, "verify.fail");
      for (const auto& s : v.pass) scenario_ok(s, "verify.pass");
    }
    if (e.bench) {
      if (e.bench->expect != "pass" && e.bench->expect != "fail" && e.bench->expect != "flag")
        problems.push_back(e.name + ".bench: unknown expect '" + e.bench->expect + "'");
      if (e.bench->expect == "fail" && e.bench->errors.empty()) problems.push_back(e.name + ".bench: expect fail needs `errors`");
      if (e.bench->expect == "flag" && e.bench->counters.empty())
        problems.push_back(e.name + ".bench: expect flag needs `counters`");
      for (const auto& counter : e.bench->counters)
        if (!attngate::bench::timing_figure(counter))
          problems.push_back(e.name + ".bench: counter " + counter +
                             " is no figure of the comparison's kernel_timing (bench/comparison_document.hpp)");
      scenario_ok(e.bench->scenario, "bench.scenario");
    }
    if (e.sanitizer) {
      static const std::set<std::string> tools = {"memcheck", "racecheck", "initcheck", "synccheck"};
      if (!tools.count(e.sanitizer->tool)) problems.push_back(e.name + ".sanitizer: unknown tool '" + e.sanitizer->tool + "'");
      if (e.sanitizer->expect != "errors" && e.sanitizer->expect != "clean")
        problems.push_back(e.name + ".sanitizer: expect must be errors or clean");
      scenario_ok(e.sanitizer->scenario, "sanitizer.scenario");
    }
  }
  int cheats = 0;
  for (const attngate::KernelInfo* k : reg.all()) {
    if (!attngate::worker::is_planted(k->name)) continue;
    ++cheats;
    if (!names.count(k->name)) problems.push_back(k->name + ": registered but not in the catalogue");
  }
  const std::set<std::string> tests = name_set(expect_tests);
  // The entries that must pass their gate stage run alone on the GPU (CMake's RUN_SERIAL list).
  std::set<std::string> pass;
  for (const auto& e : cat)
    if (e.gate_code == "PASS") pass.insert(e.name);
  if (const std::set<std::string> serial = name_set(expect_pass); serial != pass) {
    for (const auto& n : pass)
      if (!serial.count(n)) problems.push_back(n + ": gate_code PASS, but CMake does not run adversarial." + n + " alone");
    for (const auto& n : serial)
      if (!pass.count(n)) problems.push_back(n + ": CMake runs it alone, but its gate_code is not PASS");
  }
  if (tests != names) {
    for (const auto& n : names)
      if (!tests.count(n)) problems.push_back(n + ": in the catalogue but CMake registers no adversarial." + n);
    for (const auto& t : tests)
      if (!names.count(t)) problems.push_back(t + ": CMake registers adversarial." + t + " but the catalogue lacks it");
  }
  for (const auto& p : problems) std::cout << "FAIL: " << p << "\n";
  std::cout << cat.size() << " catalogue entries, " << cheats << " registered cheat_*/control_* kernels, " << scenarios.size()
            << " adversarial scenarios: " << (problems.empty() ? "consistent" : "inconsistent") << "\n";
  return problems.empty() ? 0 : 1;
}

// Why the adversarial tests cannot run here, or "" when they can.
std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return std::string("needs a CUDA GPU: ") + cudaGetErrorString(err);
  if (count == 0) return "needs a CUDA GPU: none present";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "cannot read the device's properties";
  const int sm = prop.major * 10 + prop.minor;
  if (sm < kMinSm)
    return "needs compute capability 9.0 (the cheats are built for sm_90a), " + std::string(prop.name) + " has " +
           std::to_string(prop.major) + "." + std::to_string(prop.minor);
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  Paths p;
  std::string cheat, expect_tests, expect_pass;
  bool check = false;
  bool no_device_check = false;
  CLI::App app{"attngate_adversarial: proves that attngate catches a planted cheat of kernels/adversarial/cheats.yaml "
               "(usage at the top of agent_hooks/gate/adversarial/adversarial_main.cpp)",
               "attngate_adversarial"};
  // Paths are read as strings (CLI11 2.1 takes std::filesystem::path for a container).
  std::string catalogue, scenarios, verify, bench, sanitizer, sanitize_verify, workers, attngate, source, work;
  app.add_option("--cheat", cheat, "The catalogue entry (kernel) to run");
  app.add_option("--catalogue", catalogue, "kernels/adversarial/cheats.yaml");
  app.add_option("--scenarios", scenarios, "Directory of the adversarial YAML suite");
  app.add_option("--verify", verify, "attngate_verify (attngate_verify_judge with --workers)");
  app.add_option("--bench", bench, "attngate_bench (attngate_bench_judge with --workers)");
  app.add_option("--work-dir", work, "Where the children's logs and results go");
  app.add_option("--sanitizer", sanitizer, "compute-sanitizer, for the entries with a sanitizer stage");
  app.add_option("--sanitize-verify", sanitize_verify, "The in-process verify binary compute-sanitizer runs (default: --verify)");
  app.add_option("--workers", workers, "Folder of the attngate_worker_<library> binaries: every kernel runs in its worker");
  app.add_option("--attngate", attngate, "agent_hooks' attngate: with --workers, a gate stage runs `attngate report`");
  app.add_option("--source-dir", source, "The repository the gate stage's report hashes");
  app.add_flag("--check-catalogue", check,
               "CPU: check the catalogue against the registered cheat_*/control_* kernels and --expect-tests");
  bool table = false;
  app.add_flag("--render-table", table, "Print the README's markdown table of the catalogue and exit");
  app.add_option("--expect-tests", expect_tests, "A,B,...: the adversarial.<name> tests CMake registered");
  app.add_option("--expect-pass", expect_pass, "A,B,...: the entries CMake runs alone (RUN_SERIAL): those whose gate_code is PASS");
  app.add_flag("--no-device-check", no_device_check, "Run without a GPU (only the driver's own test, with fake tools)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "attngate_adversarial: " << e.what() << " (--help lists the flags)\n";
    return 2;
  }
  const bool device_check = !no_device_check;
  p.catalogue = catalogue;
  p.scenarios = scenarios;
  p.verify = verify;
  p.bench = bench;
  p.sanitizer = sanitizer;
  p.sanitize_verify = sanitize_verify;
  p.workers = workers;
  p.attngate = attngate;
  p.source = source;
  p.work = work;
  try {
    const std::vector<Entry> cat = load_catalogue(p.catalogue);
    if (check) return check_catalogue(cat, p.scenarios, expect_tests, expect_pass);
    if (table) {
      std::cout << render_table(cat);
      return 0;
    }
    auto it = std::find_if(cat.begin(), cat.end(), [&](const Entry& e) { return e.name == cheat; });
    if (it == cat.end()) {
      std::cerr << "attngate_adversarial: '" << cheat << "' is not in " << p.catalogue << "\n";
      return 2;
    }
    // With `ctest --resource-spec-file`, the GPU CTest allocated; the children inherit it.
    attngate::verify::pin_to_ctest_gpu();
    if (const std::string why = device_check ? no_gpu_reason() : ""; !why.empty()) {
      std::cout << kSkipped << why << std::endl;
      return 0;
    }
    if (p.verify.empty() || p.bench.empty() || p.work.empty() || p.scenarios.empty()) {
      std::cerr << "attngate_adversarial: --verify, --bench, --scenarios and --work-dir are required\n";
      return 2;
    }
    fs::create_directories(p.work);
    return Checker(*it, p).run();
  } catch (const std::exception& e) {
    std::cout << "FAIL: attngate_adversarial: " << e.what() << std::endl;
    return 1;
  }
}
