#include "attngate/gate/rules_provenance.hpp"

#include <fmt/format.h>

#include "attngate/gate/candidate_tree.hpp"
#include "attngate/gate/digest.hpp"
#include "attngate/gate/git.hpp"
#include "attngate/gate/harness.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;

namespace {

// `path` relative to the repository, as the report names it; as given when it lies elsewhere.
std::string relative_name(const fs::path& path, const fs::path& repo) {
  std::error_code ec;
  const std::string rel = fs::relative(path, repo, ec).generic_string();
  return ec || rel.empty() ? path.string() : rel;
}

// CANDIDATE_CHANGED: the folder judged now is the one compiled into the measured worker, and the
// build verification judged is the build that was timed. Records the folder's hashes in `prov`.
void judge_candidate_tree(const ReportInputs& in, const std::string& kernel, const TimingTally& timing,
                          const VerifyTally& tally, Provenance& prov, Reasons& reasons) {
  const std::set<std::string>& built = timing.built_trees;
  // The folder the worker hashed when it was built (kernels/candidate for the candidate; the
  // adversarial library's for a planted cheat), else the candidate source's folder.
  const fs::path tree_dir = !in.candidate_tree.empty()         ? in.candidate_tree
                            : !timing.built_tree_dir.empty() ? in.repo / timing.built_tree_dir
                                                             : in.candidate.parent_path();
  const std::string tree = relative_name(tree_dir, in.repo);
  std::string tree_now, tree_error;
  try {
    tree_now = candidate_tree_sha256(tree_dir);
  } catch (const std::exception& e) {
    tree_error = e.what();
  }
  prov.candidate_tree = tree;
  if (!tree_now.empty()) prov.candidate_tree_sha256 = tree_now;
  prov.candidate_tree_error = tree_error;
  const std::string built_one = built.size() == 1 ? *built.begin() : "";
  if (!built_one.empty()) prov.candidate_tree_sha256_built = built_one;
  auto changed = [&](const std::string& detail) { reasons.add("CANDIDATE_CHANGED", "", detail); };
  if (built.size() > 1)
    changed(fmt::format("{}'s scenarios were measured with {} different builds of {} (kernel_tree_sha256 {})",
                        in.perf.filename().string(), built.size(), tree, fmt::join(built, ", ")));
  else if (!built_one.empty() && tree_now.empty())
    changed(fmt::format("the worker was built from {} tree {}, but the folder cannot be hashed now: {}", tree, built_one,
                        tree_error));
  else if (!built_one.empty() && built_one != tree_now)
    changed(fmt::format("the worker was built from {} tree {}, but {} hashes to {} now: the candidate changed after it "
                        "was built (build again before ctest -L gate; attngate gate builds first)",
                        tree, built_one, tree, tree_now));
  // The build verification judged must be the build that was timed.
  const std::set<std::string>& verified = tally.verified_trees;
  if (verified.size() > 1 || (verified.size() == 1 && !built_one.empty() && *verified.begin() != built_one))
    changed(fmt::format("verification judged build(s) {} of {}{}: the candidate was rebuilt between the gate's tests",
                        fmt::join(verified, ", "), tree, built_one.empty() ? "" : ", the timing build " + built_one));
  // A worker names the build it was compiled from at its hello; one that names none (its hash blanked
  // or never compiled in) cannot be tied to the folder judged.
  if (!timing.timed_unhashed.empty())
    changed(fmt::format("{} scenario(s) of {} were timed in a worker that named no build of {} (first: {}): the timing "
                        "cannot be tied to the folder judged", timing.timed_unhashed.size(), kernel, tree,
                        timing.timed_unhashed.front()));
  // A worker was timed, so verification ran one too: a result naming no build cannot be tied to it.
  if (timing.timed_in_worker && !tally.verified_unhashed.empty())
    changed(fmt::format("{} verify result(s) of {} name no build of {} (first: {}), while the timed worker was built "
                        "from {}: verification cannot be tied to the timed build", tally.verified_unhashed.size(), kernel,
                        tree, tally.verified_unhashed.front(), built.empty() ? "no named build" : *built.begin()));
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
    reasons.add("HARNESS_MODIFIED", "", fmt::format("{} harness file(s) differ from commit {}: {}", h.modified.size(),
                                                    commit.substr(0, 12), first_listed(h.modified, 8, ", ")));
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

}  // namespace

Provenance judge_provenance(const ReportInputs& in, const std::string& kernel,
                            const std::optional<bench::ComparisonDocument>& perf, const TimingTally& timing,
                            const VerifyTally& tally, Reasons& reasons, HarnessRecord& harness) {
  Provenance prov = device_provenance(perf);
  const std::string cand_rel = relative_name(in.candidate, in.repo);
  const GitState git = git_state(in.repo, cand_rel);
  prov.attngate_commit = git.commit;
  prov.attngate_dirty = git.dirty;
  prov.candidate = cand_rel;
  prov.candidate_sha256 = sha256_file(in.candidate).value_or("");
  prov.base_seed = tally.base_seed;
  if (prov.candidate_sha256.empty()) reasons.add("TEST_CRASHED", "", "cannot read the candidate source " + in.candidate.string());
  judge_candidate_tree(in, kernel, timing, tally, prov, reasons);
  harness = judge_harness(in, kernel, cand_rel, git.commit, reasons);
  return prov;
}

}  // namespace attngate::hooks
