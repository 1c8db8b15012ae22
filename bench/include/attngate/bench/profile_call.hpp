// What attngate_profile_call (bench/tools) tells `attngate profile` (agent_hooks) about the calls
// it made, in `--calls-out FILE`: one record per kernel, or why it made none. The worker's pid is
// how the profile tells the kernels' launches apart in Nsight Compute's report (its Process ID
// column). Read only through these types, never from the tool's console text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attngate::bench {

struct ProfiledCall {
  std::string kernel;      // attngate's name
  int64_t worker_pid = 0;  // the worker process the profiled call ran in
  int64_t nan = 0;         // NaN elements in its output after the call (0 unless it skipped work)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProfiledCall, kernel, worker_pid, nan)

struct ProfileCallDocument {
  std::string skipped;              // non-empty: no call was made, and why (no usable GPU)
  std::vector<ProfiledCall> calls;  // one per kernel, in the order given
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProfileCallDocument, skipped, calls)

}  // namespace attngate::bench
