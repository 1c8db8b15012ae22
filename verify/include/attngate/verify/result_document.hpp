// The verify result document (schema attngate.verify_result/1): one JSON file per verify test,
// `<results-dir>/verify.<kernel>.<scenario>.json`, written by attngate_verify(_judge) at the end of
// every test (skipped and failed too) and read by the gate report (agent_hooks) and
// ci/merge_shards.py. One typed definition for the writer and the readers; the JSON Schema is
// verify/schema/verify_result.schema.json (its required keys are the ones every writer sets).
//
// Header only, no CUDA: agent_hooks includes it without linking CUDA (target attngate::verify_result).
#pragma once

#include <nlohmann/json.hpp>

#include "attngate/verify/json_document.hpp"  // std::optional <-> null, parse_document

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attngate::verify {

inline constexpr const char* kVerifyResultSchema = "attngate.verify_result/1";

// The summary of verify::ErrorStats (metrics.hpp) that the document keeps.
struct ResultStats {
  double max_abs = 0, max_scaled = 0, rel_l2 = 0;
  int64_t nonfinite = 0, masked_mismatch = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ResultStats, max_abs, max_scaled, rel_l2, nonfinite, masked_mismatch)

// One input distribution of the case (verify::DistributionOutcome).
struct ResultRun {
  std::string distribution;             // "standard", "large_scores", ...
  std::string seed;                     // this distribution's seed, decimal (a uint64 kept exact)
  bool pass = true;
  std::vector<std::string> reasons;     // why not pass (metrics.cpp, verify_case.hpp's kReason*)
  ResultStats o, lse;                   // the kernel under test against the ground truth
  std::optional<ResultStats> initial_o, initial_lse;  // `initial` on the same inputs; null when not judged against it
  std::string o_worst_at, lse_worst_at;  // "b=0 s=17 h=3 d=5", "b=0 h=3 s=17"
  int64_t o_guard_violations = 0, lse_guard_violations = 0;
  uint64_t input_mismatches = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ResultRun, distribution, seed, pass, reasons, o, lse, initial_o,
                                                initial_lse, o_worst_at, lse_worst_at, o_guard_violations,
                                                lse_guard_violations, input_mismatches)

struct ResultDocument {
  std::string schema = kVerifyResultSchema;
  std::string test;      // "verify.<kernel>.<scenario>"
  std::string kernel, scenario, suite;
  std::string status;    // "passed", "failed", "skipped", "error"
  std::string detail;    // skipped: why; error: the exception text; else ""
  // Skipped: "no_device" (no usable GPU of the required architecture: the gate's NO_DEVICE) or
  // "unsupported" (the kernel declines or does not offer the shape); null otherwise.
  std::optional<std::string> skip_reason;
  std::optional<std::string> ctest_gpu;     // the GPU id CTest's resource allocation gave the test
  // Only when the case ran (passed or failed); null otherwise.
  std::optional<std::string> pci_bus_id;    // the device that ran it
  std::optional<std::string> ground_truth;  // "gpu_reference_fp32" or "eigen_cpu"
  std::optional<std::string> base_seed;     // ATTNGATE_SEED replays the run; decimal
  std::vector<ResultRun> runs;              // one per input distribution; empty when the case did not run
  // The judge's device memory for the scenario (inputs, guarded outputs, fp32 truth, snapshots),
  // checked against the free memory before anything was allocated; null when not computed.
  std::optional<int64_t> device_bytes;
  std::optional<std::string> batch;         // the batch test that checked it (verify.batch.*); null: a single test
  // The hash of the kernel's source folder built into its worker; null when it ran in the judge.
  std::optional<std::string> kernel_tree_sha256;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ResultDocument, schema, test, kernel, scenario, suite, status, detail,
                                                skip_reason, ctest_gpu, pci_bus_id, ground_truth, base_seed, runs, device_bytes,
                                                batch, kernel_tree_sha256)

// The file name of a test's result in the results folder.
inline std::string result_file_name(const std::string& kernel, const std::string& scenario) {
  return "verify." + kernel + "." + scenario + ".json";
}

// The document of `j`; throws nlohmann::json::exception when it is not an attngate.verify_result/1
// (no or another `schema`, or a field of the wrong type). Other absent fields take their defaults.
inline ResultDocument parse_result_document(const nlohmann::json& j) {
  return parse_document<ResultDocument>(j, kVerifyResultSchema);
}

}  // namespace attngate::verify
