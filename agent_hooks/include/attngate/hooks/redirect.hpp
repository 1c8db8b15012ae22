#pragma once
// A supervisor that redirects: on a stall or cycle signal, a digest of the trajectory; on stall
// signals in a row, a restart from an elite (the best version per scenario group), then a human.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attngate/hooks/lineage.hpp"
#include "attngate/hooks/supervisor.hpp"

namespace attngate::hooks {

// A scenario group: head dimension, causal or not, short (seqlen <= 2048) or long, where seqlen is
// the larger of seqlen_q and seqlen_k.
struct ScenarioGroup {
  int head_dim = 0;
  bool causal = false;
  bool long_seq = false;
  std::string name() const;  // "d128 causal long"
  auto operator<=>(const ScenarioGroup&) const = default;
};
inline constexpr long kShortSeqlenMax = 2048;

// From the scenario's shape ("... sq=4096 sk=4096 ... d=128 causal bf16"), else its id
// ("gate_mha_d128_s4096_causal"); nullopt when neither names the head dimension and seqlen.
std::optional<ScenarioGroup> scenario_group(const ScenarioResult& s);

// Per group, the geometric mean of its scenarios' speedups (those with a positive speedup).
std::map<ScenarioGroup, double> group_geomeans(const Record& r);

// The best scored version of each group by that group's geomean (the earlier on a tie).
struct Elite {
  ScenarioGroup group;
  int version = 0;
  double group_geomean = 0;
  std::optional<double> geomean;  // the version's overall geomean
};
std::vector<Elite> elites(const std::vector<Record>& evaluations);

// The trajectory: the last cfg.redirect.digest_versions versions (id, verdict, geomean, note) and
// which groups moved between the previous version and `cur`.
std::string trajectory_digest(const std::vector<Record>& earlier, const Record& cur, const SupervisorConfig& cfg);

// How to put a version's candidate folder back (a shell command), empty when its source is not kept.
using RestoreCommand = std::function<std::string(const Record&)>;

// Added to `signals` (the supervisor's signals of `cur`): the digest on a stall or cycle; on the
// redirect.restart_after-th stall signal in a row a restart (stall/restart) naming the best version
// and other elites with their restore commands; on the redirect.human_after-th a human (human/escalate).
std::vector<Signal> redirect_signals(const std::vector<Record>& earlier, const Record& cur,
                                     const std::vector<Signal>& signals, const SupervisorConfig& cfg,
                                     const RestoreCommand& restore);

}  // namespace attngate::hooks
