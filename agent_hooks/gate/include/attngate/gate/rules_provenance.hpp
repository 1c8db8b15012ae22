#pragma once
// The provenance rules: the folder judged is the one built into the timed worker, verification and
// timing judged one build (CANDIDATE_CHANGED), every harness file is the commit's (HARNESS_MODIFIED,
// HARNESS_UNVERIFIED); and the device the figures were measured on.
#include <optional>
#include <string>

#include "attngate/bench/comparison_document.hpp"
#include "attngate/gate/gate_report.hpp"
#include "attngate/gate/reasons.hpp"
#include "attngate/gate/report.hpp"
#include "attngate/gate/rules_correctness.hpp"
#include "attngate/gate/rules_timing.hpp"

namespace attngate::hooks {

// Records the folder's hashes in `prov`.
void judge_candidate_tree(const ReportInputs& in, const std::string& kernel, const TimingTally& timing,
                          const VerifyTally& tally, Provenance& prov, Reasons& reasons);
// The kernel's own folders are excluded.
HarnessRecord judge_harness(const ReportInputs& in, const std::string& kernel, const std::string& cand_rel,
                            const std::string& commit, Reasons& reasons);
Provenance device_provenance(const std::optional<bench::ComparisonDocument>& perf);

}  // namespace attngate::hooks
