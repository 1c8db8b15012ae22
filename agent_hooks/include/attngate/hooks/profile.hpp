// `attngate profile`: one scenario's call of a kernel under Nsight Compute, summarized for a kernel
// engineer or an agent. The document (schema agent_hooks/schema/profile.schema.json,
// attngate.profile/1) is the typed form of what ncu measured; the parsing and the summary are pure
// functions of ncu's CSV, unit-tested without a GPU (tests/test_profile.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attngate::hooks::profile {

// What ncu is asked for (`--metrics`, `regex:` entries for the families whose members differ by
// architecture): every metric summarize() reads.
std::vector<std::string> ncu_metrics();

// One row of `ncu --import ... --csv --page raw --print-units base`: a kernel launch.
struct NcuRow {
  std::string process;  // "Process Name" (ncu may shorten it)
  int64_t pid = 0;      // "Process ID": the worker's, which ProfiledCall records
  std::string kernel;   // "Kernel Name"
  std::vector<std::pair<std::string, std::string>> values;  // metric name -> its text
  std::optional<double> number(const std::string& metric) const;
  std::optional<std::string> text(const std::string& metric) const;
};
// Throws std::runtime_error when the text is not ncu's raw CSV (no header with Kernel Name).
std::vector<NcuRow> parse_ncu_csv(const std::string& csv);

struct Stall {
  std::string reason;        // e.g. long_scoreboard
  double per_issue = 0;      // warps stalled for it per issued instruction
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Stall, reason, per_issue)

// One kernel's profiled call: its launches inside the range, summed where a sum means something.
struct KernelProfile {
  std::string kernel;                  // attngate's name (candidate, initial, ...)
  std::string worker;                  // the process ncu saw it in
  std::vector<std::string> launches;   // the CUDA kernels of the call, in order
  std::optional<double> duration_us, tflops, peak_pct;
  std::optional<double> tensor_pipe_pct;          // busiest tensor pipe, % of peak sustained
  std::optional<double> dram_bytes, dram_gbps, dram_pct;
  std::optional<double> l2_hit_pct, occupancy_pct, issue_slots_pct, xu_pct;
  std::optional<double> registers_per_thread, smem_per_block_bytes, local_memory_ops;
  std::vector<Stall> top_stalls;       // the largest five, descending
};

struct ProfileDocument {
  std::string schema = "attngate.profile/1";
  std::string scenario, shape;  // id and scenario_summary
  double flops = 0;
  std::string device;
  double peak_tflops = 0;  // dense bf16, for peak_pct (0: unknown device)
  std::string report;      // the .ncu-rep file, for the Nsight Compute UI
  std::vector<KernelProfile> kernels;
};

void to_json(nlohmann::json& j, const KernelProfile& k);
void from_json(const nlohmann::json& j, KernelProfile& k);
void to_json(nlohmann::json& j, const ProfileDocument& d);
void from_json(const nlohmann::json& j, ProfileDocument& d);

// The rows of the worker process `pid` (every launch of the kernel's call) as one KernelProfile;
// `worker` names it. Throws when the process has no row (the call was not profiled).
KernelProfile summarize(const std::vector<NcuRow>& rows, const std::string& kernel, const std::string& worker,
                        int64_t pid, double flops, double peak_tflops);

// At most 40 lines: the scenario, then one column per kernel (side by side with --compare).
std::string render_summary(const ProfileDocument& d);

}  // namespace attngate::hooks::profile
