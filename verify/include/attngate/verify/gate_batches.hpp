#pragma once
// The gate's verify tests as verify emitted them (schema attngate.gate_batches/1): what the gate's
// own tests (gate.setup, gate.performance, gate.report: agent_hooks/gate, `attngate plan`) order
// themselves around. attngate_verify --emit-ctest writes it beside its CTest script; header only.
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attngate::verify {

inline constexpr const char* kGateBatchesSchema = "attngate.gate_batches/1";

struct GateBatches {
  std::string schema = kGateBatchesSchema;
  std::string kernel, baseline;    // the gate suite's settings: the kernel under test, its baseline
  std::vector<std::string> tests;  // the gate's batches and per-case tests, in the order emitted
  int verify_timeout_s = 0;        // their CTest TIMEOUT
  std::string results_dir;         // where they write verify.<kernel>.<scenario>.json
  std::string scenarios_dir;       // the suites they were planned from
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GateBatches, schema, kernel, baseline, tests, verify_timeout_s,
                                                results_dir, scenarios_dir)

// Throws std::runtime_error naming the file: unreadable, not JSON, another schema, or a gate (a
// kernel named) without tests. No kernel: the suites have no gate suite, so there is no gate.
inline GateBatches read_gate_batches(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file);
  GateBatches b;
  try {
    b = nlohmann::json::parse(in).get<GateBatches>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file + ": not an " + std::string(kGateBatchesSchema) + " document: " + e.what());
  }
  if (b.schema != kGateBatchesSchema) throw std::runtime_error(file + ": schema '" + b.schema + "', not " + kGateBatchesSchema);
  if (!b.kernel.empty() && (b.tests.empty() || b.baseline.empty()))
    throw std::runtime_error(file + ": names the gate's kernel but no verify tests or baseline");
  return b;
}

}  // namespace attngate::verify
