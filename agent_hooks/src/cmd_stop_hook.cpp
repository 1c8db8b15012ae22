#include "command_support.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using namespace cmd;

int cmd_stop_hook(const Context& ctx, const std::string& hook_input, const GateOptions& o) {
  const StopHookInput input = parse_stop_hook_input(hook_input);
  const bool active = input.stop_hook_active;
  const std::string& session = input.session_id;
  auto& err = *ctx.err;

  int max_refusals = 10;
  if (const char* env = std::getenv("ATTNGATE_STOP_MAX_REFUSALS"); env && *env) max_refusals = std::atoi(env);
  try {
    LineageContents c = Lineage(ctx.lineage).read();
    auto evals = c.evaluations();
    int refusals = 0;
    for (auto it = evals.rbegin(); it != evals.rend(); ++it) {
      if (it->source != "stop_hook" || it->session != session || it->verdict == "pass") break;
      ++refusals;
    }
    // Loop guards: the runner says this stop follows one we refused. Re-running the gate on the same
    // source cannot change the verdict, and a cap bounds a session that keeps trying.
    if (active && refusals > 0) {
      const Record& last = evals.back();
      // The whole folder when the record has its hash (older records: candidate.cu alone).
      bool unchanged = last.candidate_tree_sha256.empty()
                           ? last.candidate_sha256 == sha256_file(ctx.candidate).value_or("")
                           : last.candidate_tree_sha256 == current_tree_sha256(ctx);
      if (unchanged) {
        err << "attngate stop hook: the candidate is unchanged since version " << evals.back().version
            << " failed the gate; letting the agent stop without re-running it (the gate still fails)\n";
        return kExitPass;
      }
      if (max_refusals > 0 && refusals >= max_refusals) {
        err << "attngate stop hook: refused " << refusals << " stops in a row in this session (limit "
            << max_refusals << ", ATTNGATE_STOP_MAX_REFUSALS); letting the agent stop (the gate still fails)\n";
        return kExitPass;
      }
    }
    GateOptions quiet = o;
    quiet.quiet = true;
    quiet.progress = false;  // the runner hands a refusal's stderr to the agent: the reason only
    EvaluationInput in;
    in.source = "stop_hook";
    in.session = session;
    in.agent_triggers_on_fail = {"done"};
    GateOutcome g = gate_and_record(ctx, quiet, in);
    if (!g.evaluation) {
      // Nothing the agent can fix: refuse once so it is seen, then let the agent stop.
      err << "attngate stop hook: the gate cannot run here: " << g.environment_failure << "\n";
      return active ? kExitPass : kExitRefuse;
    }
    const Evaluation& e = *g.evaluation;
    if (e.record.verdict == "pass") {
      *ctx.out << g.remeasured << format_verdict(ctx, e);
      return kExitPass;
    }
    // The supervisor asks for a human (stalls in a row): the agent stops and hands over, the gate
    // still failing; refusing the stop would keep it going where a person should decide.
    for (const auto& sig : e.record.signals)
      if (sig.trigger == "human") {
        err << "attngate stop hook: the supervisor asks for a human (" << sig.detail
            << "); letting the agent stop (the gate still fails)\n"
            << format_verdict(ctx, e);
        return kExitPass;
      }
    fs::path build = build_dir_of(ctx, o);
    err << "The attngate gate does not pass yet, so the work is not done.\n"
        << g.remeasured << format_verdict(ctx, e)
        << "  gate output: " << (build / "gate" / "attngate_gate.log").string() << "\n";
    return kExitRefuse;
  } catch (const std::exception& ex) {
    // Refuse once so the error is seen; on the runner's retry let the agent stop, since an error
    // the agent cannot fix would otherwise trap it.
    err << "attngate stop hook: " << ex.what() << "\n";
    return active ? kExitPass : kExitRefuse;
  }
}

}  // namespace attngate::hooks
