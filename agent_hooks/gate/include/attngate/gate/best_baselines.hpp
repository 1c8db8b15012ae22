#pragma once
// The best measured baseline per scenario on one GPU: <repo>/bench/baselines/<slug>.json (schema
// attngate.best_baselines/1, written by bench/python/attngate_baselines.py), read by the gate report
// so that the agent sees how far the candidate is from the fastest library on each scenario.
#include <filesystem>
#include <map>
#include <string>

#include "attngate/gate/report.hpp"  // BestBaselineRef, BestBaselinesInfo

namespace attngate::hooks {

inline constexpr const char* kBestBaselinesSchema = "attngate.best_baselines/1";

struct BestBaselines {
  // The report's record of the file: its path, GPU, date and count, or the note why nothing was
  // read ("no best-baseline file for NVIDIA H200 ..."; empty when read).
  BestBaselinesInfo info;
  std::map<std::string, BestBaselineRef> scenarios;  // scenario id -> its best correct baseline
};

// "NVIDIA H200" -> "nvidia_h200": lowercased, every character that is not a letter or digit -> '_'.
std::string gpu_slug(const std::string& device);
std::filesystem::path best_baselines_file(const std::filesystem::path& repo, const std::string& device);

// Never throws: a missing, unreadable or malformed file gives no scenarios and a note that says why.
// Entries with correct == false or without positive TFLOPS are left out.
BestBaselines load_best_baselines(const std::filesystem::path& repo, const std::string& device);

}  // namespace attngate::hooks
