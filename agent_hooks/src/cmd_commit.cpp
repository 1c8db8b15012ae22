#include "command_support.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace cmd;

namespace cmd {

std::string version_name(const Record& r) { return "version " + std::to_string(r.version); }

// Proof that the record is what a gate run wrote on this machine, at this HEAD, for this tree.
std::string provenance_refusal(const Context& ctx, const Record& r) {
  const std::string v = version_name(r);
  if (r.dry_run || r.source == "dry_run")
    return v + " is a dry-run record: attngate gate --dry-run simulated it without a build or a GPU, so nothing "
               "was measured (run attngate gate)";
  if (r.source != "gate" && r.source != "stop_hook")
    return v + " was recorded by `attngate " + (r.source.empty() ? std::string("?") : r.source) +
           "`, not measured by a gate run (run attngate gate)";
  if (!r.receipt) return v + " carries no gate receipt (a hand-written lineage record?); run attngate gate";
  std::string key;
  try {
    key = load_receipt_key(receipt_key_file(), ctx.repo, /*create=*/false);
  } catch (const std::exception& e) {
    return "cannot check the receipt of " + v + ": " + e.what();
  }
  if (!receipt_valid(r, key))
    return "the receipt of " + v + " does not match its record (edited by hand, signed on another machine, or "
           "by an attngate before attngate.receipt/2); run attngate gate";
  if (r.receipt->machine_id != machine_id())
    return v + " was measured on another machine (" + r.receipt->machine_id + "); run attngate gate here";
  const std::string head = git_state(ctx.repo, candidate_rel(ctx)).commit;
  if (r.git.commit.empty() || r.git.commit != head)
    return "git HEAD moved since " + v + " was measured (" + short_or(r.git.commit, "none") + " then, " +
           short_or(head, "none") + " now); run attngate gate";
  const std::string tree = current_tree_sha256(ctx);
  if (tree != r.candidate_tree_sha256)
    return candidate_dir_rel(ctx) + " changed since " + v + " was evaluated (tree " +
           tree_name(r.candidate_tree_sha256) + " then, " + tree_name(tree) + " now); run attngate gate";
  return {};
}

// What the measurement says: a pass with nothing that makes its speed doubtful.
std::string judgement_refusal(const Record& r) {
  const std::string v = version_name(r);
  for (const auto& reason : r.reasons)
    if (reason.code == "IMPLAUSIBLE")
      return v + " is IMPLAUSIBLE: " + (reason.detail.empty() ? "faster than the device allows" : reason.detail);
  if (r.verdict != "pass") {
    std::vector<std::string> codes;
    for (const auto& reason : r.reasons) codes.push_back(reason.code);
    return v + " failed the gate" + (codes.empty() ? std::string{} : " (" + fmt::format("{}", fmt::join(codes, ", ")) + ")");
  }
  for (const auto& s : r.signals)
    if (s.kind == "above_peak") return v + " ran above the device's peak, so it was not measured honestly: " + s.detail;
  for (const auto& s : r.signals)
    if (s.trigger == "suspicious" && !r.suspicious_confirmed)
      return v + " has an unconfirmed suspicious gain (" + s.kind + ": " + s.detail +
             "); run attngate gate again so the re-measurement confirms it";
  if (!r.geomean.speedup || !r.geomean.ci_low) return v + " has no geomean confidence interval";
  return {};
}

// The supervisor's step signal compares with the best earlier version, which after a second run
// of the same tree is that tree itself; against the committed bar a rerun cannot hide the step.
std::string step_refusal(const Record& r, double bar, const std::string& bar_what, double step) {
  const double g = *r.geomean.speedup;
  if (r.suspicious_confirmed || !(bar > 0) || g / bar <= step) return {};
  return version_name(r) + " has an unconfirmed suspicious gain (geomean " + fmt::format("{:.3f}x", g) + " is " +
         fmt::format("{:.3f}x", g / bar) + " " + bar_what + "); run attngate gate again so the re-measurement confirms it";
}

// The trailers (git_commits.hpp CommitTrailers), signed with the receipt key (receipt.hpp) so that a later lineage on
// this machine can believe the geomean without a record of it.
std::string commit_message(const Record& r, const std::string& bar_what, const std::string& key) {
  const double lo = *r.geomean.ci_low, hi = r.geomean.ci_high.value_or(lo);
  const CommitTrailers t{std::to_string(r.version), fmt::format("{:.6g}", *r.geomean.speedup),
                         fmt::format("{:.6g} {:.6g}", lo, hi), r.target.baseline.empty() ? "unknown" : r.target.baseline,
                         r.candidate_sha256, r.candidate_tree_sha256};
  std::ostringstream msg;
  msg << "candidate: attngate version " << r.version << ", geomean " << fmt::format("{:.3f}x", *r.geomean.speedup) << " (CI "
      << fmt::format("{:.3f}", lo) << "-" << fmt::format("{:.3f}", hi) << ")\n\n"
      << "Passed the gate" << (r.target.baseline.empty() ? "" : " against " + r.target.baseline)
      << " and its CI lower bound clears " << bar_what << ".\n\n"
      << "Attngate-Version: " << t.version << "\n"
      << "Attngate-Geomean: " << t.geomean << "\n"
      << "Attngate-CI: " << t.ci << "\n"
      << "Attngate-Baseline: " << t.baseline << "\n"
      << "Attngate-Candidate-Sha256: " << t.candidate_sha256 << "\n"
      << "Attngate-Candidate-Tree-Sha256: " << t.candidate_tree_sha256 << "\n"
      << "Attngate-Receipt: " << commit_receipt_hmac(t, key) << "\n";
  return msg.str();
}

// The tree hash of `dir` as staged in the index git is told to use.
std::string staged_tree_sha256(const std::function<RunResult(std::vector<std::string>)>& git, const std::string& dir) {
  auto ls = git({"ls-files", "-s", "-z", "--", dir});
  if (ls.exit_code != 0) return {};
  TreeListing listing;
  std::istringstream entries(ls.out);
  for (std::string e; std::getline(entries, e, '\0');) {
    auto tab = e.find('\t');  // "<mode> <object> <stage>\t<path>"
    if (tab == std::string::npos) return {};
    std::string mode, object;
    std::istringstream(e.substr(0, tab)) >> mode >> object;
    auto blob = git({"cat-file", "blob", object});
    if (blob.exit_code != 0) return {};
    listing.push_back({e.substr(tab + 1 + dir.size() + 1), sha256_hex(blob.out)});
  }
  return tree_sha256(listing);
}

// Commits exactly the measured tree of the candidate folder and nothing else: the folder is staged
// into a private index (HEAD plus the folder), checked against the recorded tree hash (an edit
// after the checks above shows here), and committed from that index; the real index then takes
// the folder from the new HEAD, so whatever else was staged stays staged.
std::string commit_folder(const Context& ctx, const Record& r, const std::string& message) {
  const std::string dir = candidate_dir_rel(ctx);
  const fs::path index = state_dir(ctx) / ("commit-index." + std::to_string(::getpid()));
  fs::create_directories(index.parent_path());
  struct Remove {
    fs::path p;
    ~Remove() {
      std::error_code ec;
      fs::remove(p, ec);
    }
  } cleanup{index};
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", ctx.repo.string()});
    RunOptions o;
    o.env = {{"GIT_INDEX_FILE", index.string()}};
    return run_process(args, o);
  };
  if (auto rt = git({"read-tree", "HEAD"}); rt.exit_code != 0) return "git read-tree HEAD failed: " + rt.err;
  if (auto add = git({"add", "-A", "-f", "--", dir}); add.exit_code != 0) return "git add failed: " + add.err;
  const std::string staged = staged_tree_sha256(git, dir);
  if (staged != r.candidate_tree_sha256)
    return "what git staged from " + dir + " (tree " + tree_name(staged) + ") is not what " + version_name(r) +
           " measured (" + tree_name(r.candidate_tree_sha256) +
           "): the folder changed while committing, or holds something git stores differently (a symlink)";
  if (git({"diff", "--cached", "--quiet", "HEAD", "--", dir}).exit_code == 0)
    return "the candidate folder " + dir + " is unchanged since HEAD";
  if (auto c = git({"commit", "-q", "-m", message}); c.exit_code != 0) return "git commit failed: " + c.err + c.out;
  if (run_process({"git", "-C", ctx.repo.string(), "reset", "-q", "--", dir}).exit_code != 0)
    *ctx.err << "attngate commit: warning: git reset -- " << dir
             << " failed; the index may show the folder as changed\n";
  return {};
}

// The questions logged since the previous committed version's evaluation (its own included) up to
// the evaluation of `version` (not its own: those came after the gain was measured).
std::vector<QuestionRef> questions_before(const LineageContents& c, int version) {
  int previous = 0;
  for (const auto& r : c.records)
    if (r.type == "commit" && r.version < version) previous = std::max(previous, r.version);
  std::vector<QuestionRef> out;
  bool on = previous == 0;
  for (const auto& r : c.records) {
    if (r.is_evaluation() && r.version == version) break;
    if (r.is_evaluation() && r.version == previous) on = true;
    if (on && (r.is_evaluation() || r.type == "ask")) out.insert(out.end(), r.questions.begin(), r.questions.end());
  }
  return out;
}

// A "commit" record: which questions preceded this committed gain (shown by `attngate history`).
void log_commit(const Context& ctx, int version) {
  Lineage(ctx.lineage).append(
      [&](const LineageContents& earlier, int) {
        Record r;
        r.type = "commit";
        r.version = version;
        r.time = now_iso8601();
        r.source = "commit";
        r.questions_before = questions_before(earlier, version);
        return r;
      },
      false);
}

}  // namespace cmd

namespace {

// The evaluation to commit: the latest, or version N when no later evaluation measured its tree
// or its candidate.cu again. This is bookkeeping, not a guard: code changed by a comment measures
// as another version, so picking the luckiest of several runs stays possible, bounded by commit's
// interval bar (SECURITY.md).
std::optional<Record> chosen_evaluation(const LineageContents& c, int version, std::string& why) {
  if (version == 0) return c.last_evaluation();
  std::optional<Record> found;
  for (const auto& r : c.records) {
    if (!r.is_evaluation()) continue;
    if (r.version == version) found = r;
    else if (found && r.version > version &&
             (r.candidate_tree_sha256 == found->candidate_tree_sha256 ||
              (!r.candidate_sha256.empty() && r.candidate_sha256 == found->candidate_sha256))) {
      // (The tree clause covers records without candidate_sha256.)
      why = "version " + std::to_string(version) + " is not the latest evaluation of its code: version " +
            std::to_string(r.version) + " measured the same tree or candidate source again (commit that one)";
      return std::nullopt;
    }
  }
  if (!found) why = "no evaluation with version " + std::to_string(version) + " in the lineage";
  return found;
}

}  // namespace

int cmd_commit(const Context& ctx, int version) {
  auto& err = *ctx.err;
  auto refuse = [&](const std::string& why) {
    err << "attngate commit: not committing: " << why << "\n";
    return kExitFail;
  };
  LineageContents c;
  try {
    c = Lineage(ctx.lineage).read();
  } catch (const std::exception& e) {
    err << "attngate commit: " << e.what() << "\n";
    return kExitError;
  }
  print_issues(ctx, c.issues);
  std::string not_chosen;
  auto latest = chosen_evaluation(c, version, not_chosen);
  if (!not_chosen.empty()) return refuse(not_chosen);
  if (!latest) return refuse("no evaluation in " + ctx.lineage.string() + " (run attngate gate first)");
  const std::string dir = candidate_dir_rel(ctx);
  if (dir.empty() || dir == "." || dir.rfind("..", 0) == 0)
    return refuse("the candidate folder " + candidate_dir(ctx).string() + " is not a folder inside " +
                  ctx.repo.string());
  if (!git_state(ctx.repo, candidate_rel(ctx)).is_repo) return refuse(ctx.repo.string() + " is not a git repository");
  if (auto why = provenance_refusal(ctx, *latest); !why.empty()) return refuse(why);
  if (auto why = judgement_refusal(*latest); !why.empty()) return refuse(why);

  auto [best, best_what] = commit_bar(ctx, *latest);
  try {
    if (auto why = step_refusal(*latest, best, best_what, load_supervisor(ctx).suspicious.step_speedup); !why.empty())
      return refuse(why);
  } catch (const std::exception& e) {
    err << "attngate commit: " << e.what() << "\n";
    return kExitError;
  }
  const double lo = *latest->geomean.ci_low;
  if (!(lo > best))
    return refuse("the CI lower bound " + fmt::format("{:.3f}", lo) + " of " + version_name(*latest) + " does not clear " +
                  best_what);
  try {
    const std::string key = load_receipt_key(receipt_key_file(), ctx.repo, /*create=*/false);
    if (auto why = commit_folder(ctx, *latest, commit_message(*latest, best_what, key)); !why.empty())
      return refuse(why);
  } catch (const std::exception& e) {
    err << "attngate commit: " << e.what() << "\n";
    return kExitError;
  }
  try {
    log_commit(ctx, latest->version);
  } catch (const std::exception& e) {
    err << "attngate commit: warning: the commit is made but not logged in the lineage: " << e.what() << "\n";
  }
  auto head = run_process({"git", "-C", ctx.repo.string(), "rev-parse", "--short=12", "HEAD"});
  *ctx.out << "attngate commit: committed " << dir << " as version " << latest->version << " ("
           << fmt::format("{:.3f}x", *latest->geomean.speedup) << ", CI low " << fmt::format("{:.3f}", lo) << ") as "
           << head.out.substr(0, head.out.find('\n')) << "\n";
  return kExitPass;
}

}  // namespace attngate::hooks
