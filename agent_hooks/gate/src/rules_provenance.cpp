#include "attngate/gate/rules_provenance.hpp"

#include <fmt/format.h>

#include "attngate/gate/candidate_tree.hpp"
#include "attngate/gate/harness.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;

// CANDIDATE_CHANGED: the folder judged now is the one compiled into the measured worker, and the
// build verification judged is the build that was timed. Records the folder's hashes in `prov`.
void judge_candidate_tree(const ReportInputs& in, const std::string& kernel, const TimingTally& timing,
                          const VerifyTally& tally, Provenance& prov, Reasons& reasons) {
  const std::set<std::string>& built_trees = timing.built_trees;
  std::error_code rel_ec;
  // The folder the worker hashed when it was built (kernels/candidate for the candidate; the
  // adversarial library's for a planted cheat), else the candidate source's folder.
  const fs::path tree_dir = !in.candidate_tree.empty() ? in.candidate_tree
                            : !timing.built_tree_dir.empty() ? in.repo / timing.built_tree_dir
                                                       : in.candidate.parent_path();
  std::string tree_rel = fs::relative(tree_dir, in.repo, rel_ec).generic_string();
  if (rel_ec || tree_rel.empty()) tree_rel = tree_dir.string();
  std::string tree_now, tree_error;
  try {
    tree_now = candidate_tree_sha256(tree_dir);
  } catch (const std::exception& e) {
    tree_error = e.what();
  }
  prov.candidate_tree = tree_rel;
  if (!tree_now.empty()) prov.candidate_tree_sha256 = tree_now;
  prov.candidate_tree_error = tree_error;
  if (built_trees.size() == 1) prov.candidate_tree_sha256_built = *built_trees.begin();
  if (built_trees.size() > 1) {
    const std::vector<std::string> trees(built_trees.begin(), built_trees.end());
    reasons.add("CANDIDATE_CHANGED", "", in.perf.filename().string() + "'s scenarios were measured with " +
                                             std::to_string(trees.size()) + " different builds of " + tree_rel +
                                             " (kernel_tree_sha256 " + fmt::format("{}", fmt::join(trees, ", ")) + ")");
  } else if (built_trees.size() == 1 && tree_now.empty()) {
    reasons.add("CANDIDATE_CHANGED", "", "the worker was built from " + tree_rel + " tree " + *built_trees.begin() +
                                             ", but the folder cannot be hashed now: " + tree_error);
  } else if (built_trees.size() == 1 && *built_trees.begin() != tree_now) {
    reasons.add("CANDIDATE_CHANGED", "", "the worker was built from " + tree_rel + " tree " + *built_trees.begin() +
                                             ", but " + tree_rel + " hashes to " + tree_now +
                                             " now: the candidate changed after it was built");
  }
  // The build verification judged must be the build that was timed.
  if (tally.verified_trees.size() > 1 ||
      (tally.verified_trees.size() == 1 && built_trees.size() == 1 && *tally.verified_trees.begin() != *built_trees.begin())) {
    const std::vector<std::string> trees(tally.verified_trees.begin(), tally.verified_trees.end());
    reasons.add("CANDIDATE_CHANGED", "", "verification judged build(s) " + fmt::format("{}", fmt::join(trees, ", ")) + " of " + tree_rel +
                                             (built_trees.size() == 1 ? ", the timing build " + *built_trees.begin() : "") +
                                             ": the candidate was rebuilt between the gate's tests");
  }
  // A worker names the build it was compiled from at its hello; one that names none (its hash blanked
  // or never compiled in) cannot be tied to the folder judged.
  if (!timing.timed_unhashed.empty())
    reasons.add("CANDIDATE_CHANGED", "", std::to_string(timing.timed_unhashed.size()) + " scenario(s) of " + kernel +
                                             " were timed in a worker that named no build of " + tree_rel +
                                             " (first: " + timing.timed_unhashed.front() +
                                             "): the timing cannot be tied to the folder judged");
  // A worker was timed, so verification ran one too: a result naming no build cannot be tied to it.
  if (timing.timed_in_worker && !tally.verified_unhashed.empty())
    reasons.add("CANDIDATE_CHANGED", "", std::to_string(tally.verified_unhashed.size()) + " verify result(s) of " + kernel +
                                             " name no build of " + tree_rel + " (first: " + tally.verified_unhashed.front() +
                                             "), while the timed worker was built from " +
                                             (built_trees.empty() ? std::string("no named build") : *built_trees.begin()) +
                                             ": verification cannot be tied to the timed build");
}

// HARNESS_UNVERIFIED / HARNESS_MODIFIED: every harness file is the commit's (the kernel's own
// folders excluded).
HarnessRecord judge_harness(const ReportInputs& in, const std::string& kernel, const std::string& cand_rel,
                            const std::string& commit, Reasons& reasons) {
  std::vector<std::string> excluded = {"kernels/" + kernel};
  if (cand_rel.rfind("../", 0) != 0 && fs::path(cand_rel).has_parent_path())
    excluded.push_back(fs::path(cand_rel).parent_path().generic_string());
  HarnessCheck h = check_harness(in.repo, excluded);
  if (!h.verified) {
    reasons.add("HARNESS_UNVERIFIED", "", h.why);
  } else if (!h.modified.empty()) {
    std::vector<std::string> first(h.modified.begin(), h.modified.begin() + std::min<std::size_t>(h.modified.size(), 8));
    reasons.add("HARNESS_MODIFIED", "", std::to_string(h.modified.size()) + " harness file(s) differ from commit " +
                                            commit.substr(0, 12) + ": " + fmt::format("{}", fmt::join(first, ", ")) +
                                            (h.modified.size() > first.size() ? ", ..." : ""));
  }
  return {h.verified, h.why, h.modified, excluded, harness_roots(), h.sha256};
}

// The device, driver and clocks the comparison was measured with.
Provenance device_provenance(const std::optional<bench::ComparisonDocument>& perf) {
  Provenance prov;
  if (!perf) return prov;
  const bench::ComparisonDocument& P = *perf;
  prov.gpu = P.device;
  prov.device_sm = P.device_sm;
  prov.driver = P.driver_version;
  prov.cuda_driver = P.cuda_driver_version;
  prov.cuda = P.cuda_runtime_version;
  prov.peak_tflops = P.peak_tflops;
  prov.sm_clock = P.sm_clock;
  prov.sm_clock_mhz = P.sm_clock.median_mhz;
  return prov;
}

}  // namespace attngate::hooks
