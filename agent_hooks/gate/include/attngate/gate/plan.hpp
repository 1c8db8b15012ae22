#pragma once
// The gate's own CTest tests (agent_hooks/README.md, "The gate"): gate.setup (`attngate report
// --prepare`: clears the last run's outcomes, writes the marker), gate.performance (the bench times
// the kernel against its baseline, alone on the machine, after every gate verify test) and
// gate.report (`attngate report`, last). verify emits the gate's verify tests and gate.device, each
// after gate.setup, and lists them (verify/gate_batches.hpp); this plan waits for them.
#include <string>
#include <vector>

#include "attngate/verify/gate_batches.hpp"

namespace attngate::hooks {

inline constexpr int kPerfTimeoutS = 1800;  // gate.performance's CTest TIMEOUT

// What the gate's tests run, and where they write.
struct GateTools {
  std::string attngate;     // this command, for gate.setup and gate.report
  std::string bench;        // attngate_bench_judge
  std::string workers_dir;  // the attngate_worker_<library> binaries
  std::string build_dir;    // <build>/gate holds the marker, performance.json and the report
  std::string source_dir;   // the repository the report hashes
};

// `attngate report` as the gate runs it (gate.setup adds --prepare).
std::vector<std::string> gate_report_command(const verify::GateBatches& b, const GateTools& t);
// The CTest script of gate.setup, gate.performance and gate.report.
std::string gate_ctest_script(const verify::GateBatches& b, const GateTools& t);

}  // namespace attngate::hooks
