#include "attngate/gate/plan.hpp"

#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "attngate/verify/start_record.hpp"
#include "attngate/worker/libraries.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;

namespace {

std::string quoted(const std::string& s) { return "[==[" + s + "]==]"; }

void add_test(std::ostringstream& out, const std::string& name, const std::vector<std::string>& argv) {
  out << "add_test(" << quoted(name);
  for (const auto& a : argv) out << " " << quoted(a);
  out << ")\n";
}

fs::path gate_dir(const GateTools& t) { return fs::path(t.build_dir) / "gate"; }

}  // namespace

std::vector<std::string> gate_report_command(const verify::GateBatches& b, const GateTools& t) {
  const fs::path dir = gate_dir(t);
  return {t.attngate,
          "report",
          "--repo=" + t.source_dir,
          "--suite=gate",
          "--scenarios=" + b.scenarios_dir,
          "--kernel=" + b.kernel,
          "--baseline=" + b.baseline,
          "--results-dir=" + b.results_dir,
          "--perf=" + (dir / "performance.json").string(),
          "--out-dir=" + dir.string(),
          "--started-after=" + (dir / "started").string(),
          "--start-records=" + verify::start_records_dir(b.results_dir).string(),
          "--verify-timeout=" + std::to_string(b.verify_timeout_s),
          "--perf-timeout=" + std::to_string(kPerfTimeoutS)};
}

std::string gate_ctest_script(const verify::GateBatches& b, const GateTools& t) {
  std::ostringstream out;
  if (b.kernel.empty()) return "# no gate suite in " + b.scenarios_dir + ": no gate tests\n";
  std::vector<std::string> setup = gate_report_command(b, t);
  setup.push_back("--prepare");
  add_test(out, "gate.setup", setup);
  out << "set_tests_properties(gate.setup PROPERTIES LABELS gate TIMEOUT 120)\n";

  std::vector<std::string> after = {"gate.setup"};
  after.insert(after.end(), b.tests.begin(), b.tests.end());
  std::vector<std::string> perf = {t.bench};
  // The baseline's worker first: the bench measures the round trip to it before any other exists.
  for (const auto& w : worker::worker_args(t.workers_dir, {b.baseline, b.kernel})) perf.push_back(w);
  perf.insert(perf.end(), {"--suite=gate", "--scenarios=" + b.scenarios_dir, "--compare=" + b.kernel + "," + b.baseline,
                           "--compare_out=" + (gate_dir(t) / "performance.json").string(),
                           // When it starts, and whether it skipped: the report tells a crash from a timeout by it.
                           "--start-record=" +
                               verify::start_record_file(verify::start_records_dir(b.results_dir), "gate.performance").string()});
  add_test(out, "gate.performance", perf);
  // RUN_SERIAL: nothing else runs while it times. Without a GPU the bench prints SKIPPED (CTest's
  // skip, never a pass), its start record says so, and the report fails for want of its JSON.
  out << "set_tests_properties(gate.performance PROPERTIES LABELS [==[gate;gpu;bench]==] RUN_SERIAL TRUE DEPENDS "
      << quoted(fmt::format("{}", fmt::join(after, ";"))) << " SKIP_REGULAR_EXPRESSION [==[SKIPPED:]==] TIMEOUT "
      << kPerfTimeoutS << " RESOURCE_GROUPS gpus:1)\n";

  after.insert(after.begin() + 1, "gate.device");
  after.push_back("gate.performance");
  add_test(out, "gate.report", gate_report_command(b, t));
  out << "set_tests_properties(gate.report PROPERTIES LABELS gate DEPENDS " << quoted(fmt::format("{}", fmt::join(after, ";")))
      << " TIMEOUT 300)\n";
  return out.str();
}

}  // namespace attngate::hooks
