#pragma once
// Why a scenario of a comparison could not be timed, as the comparison document's failed[].kind
// says it: its reader (the gate) maps each kind to a reason code; the failure's `error` is for
// people. The first five are the bench's checks of the timed calls (TimedRunCheckError, harness.hpp),
// `summary` a scenario's figures that could not be summarized, `error` anything else.
namespace attngate::bench::failure_kind {
inline constexpr const char* kWrongOutput = "wrong output";
inline constexpr const char* kSideStream = "side stream";
inline constexpr const char* kStreamState = "stream state";
inline constexpr const char* kJudgeClock = "judge clock";
inline constexpr const char* kBaselineClock = "baseline clock";
inline constexpr const char* kSummary = "summary";
inline constexpr const char* kError = "error";
}  // namespace attngate::bench::failure_kind
