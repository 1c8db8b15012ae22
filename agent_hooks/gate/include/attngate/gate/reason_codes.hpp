// Every reason code a gate verdict can carry: the one table that the report's writers check each
// code against (a code not here is a programming error, thrown), and that the README's table, the
// report's schema and the tests are held to (tests/test_reason_codes.cpp). The meaning of each is
// in agent_hooks/README.md ("Reason codes").
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace attngate::hooks {

struct ReasonCode {
  const char* code;
  bool by_attngate;  // written by the `attngate` command around the gate, not by `attngate report`
};

inline constexpr ReasonCode kReasonCodes[] = {
    {"NO_DEVICE", false},           {"BUILD_FAILED", true},          {"TEST_SKIPPED", false},
    {"TEST_CRASHED", false},        {"TEST_TIMEOUT", false},         {"CORRECTNESS_FAILED", false},
    {"NONDETERMINISTIC", false},    {"NO_PERF", false},              {"GEOMEAN_BELOW_TARGET", false},
    {"SCENARIO_BELOW_FLOOR", false}, {"BASELINE_DISTURBED", false},  {"FORBIDDEN_SYMBOL", false},
    {"SANDBOX_UNAVAILABLE", false}, {"SIDE_STREAM_WORK", false},     {"STREAM_STATE", false},
    {"KERNEL_COUNT_CHANGED", false}, {"WALL_KERNEL_MISMATCH", false}, {"MEMCPY_IN_CALL", false},
    {"MEMSET_IN_CALL", false},      {"GPU_SHARED", false},           {"NOT_ISOLATED", false},
    {"CLOCK_DISAGREE", false},      {"IMPLAUSIBLE", false},          {"FOREIGN_KERNEL", false},
    {"CANDIDATE_CHANGED", false},   {"HARNESS_MODIFIED", false},     {"HARNESS_UNVERIFIED", false},
    {"NO_REPORT", true},            {"CTEST_FAILED", true},          {"HEAD_CHANGED", true},
    {"TARGET_NOT_APPLIED", true},   {"SUSPICIOUS_UNCONFIRMED", true},
};

inline bool known_reason_code(std::string_view code) {
  for (const ReasonCode& r : kReasonCodes)
    if (code == r.code) return true;
  return false;
}

// `code`, or a throw when it is not in the table (every writer of a reason goes through this).
inline const std::string& checked_reason_code(const std::string& code) {
  if (!known_reason_code(code))
    throw std::logic_error("reason code '" + code + "' is not in agent_hooks/gate/include/attngate/gate/reason_codes.hpp");
  return code;
}

}  // namespace attngate::hooks
