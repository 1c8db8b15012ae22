#pragma once
// The provenance rules: the folder judged is the one built into the timed worker, verification and
// timing judged one build (CANDIDATE_CHANGED), every harness file is the commit's (HARNESS_MODIFIED,
// HARNESS_UNVERIFIED, the kernel's own folders excluded); and the device the figures were measured on.
#include <optional>
#include <string>

#include "attngate/bench/comparison_document.hpp"
#include "attngate/gate/gate_report.hpp"
#include "attngate/gate/reasons.hpp"
#include "attngate/gate/report.hpp"
#include "attngate/gate/rules_correctness.hpp"
#include "attngate/gate/rules_timing.hpp"

namespace attngate::hooks {

// The report's provenance (the commit, the candidate's source and folder, the device) and its
// harness record, with the reasons these rules find.
Provenance judge_provenance(const ReportInputs& in, const std::string& kernel,
                            const std::optional<bench::ComparisonDocument>& perf, const TimingTally& timing,
                            const VerifyTally& tally, Reasons& reasons, HarnessRecord& harness);

}  // namespace attngate::hooks
