// One fuzz input through the suite loader. Shared by the libFuzzer target (fuzz_loader.cpp) and the
// corpus driver that runs in `unit` on every compiler (corpus_main.cpp), so both apply one rule:
// the loader may return a suite or throw ScenarioError, nothing else. A loaded suite must also hold
// the invariants the loader promises (scenarios/README.md), or the loader let something through.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace attngate::fuzz {

// The label every input is loaded under; its stem ("fuzz") is the only suite name that loads.
inline constexpr const char* kLabel = "fuzz.yaml";

// A loaded suite that breaks a documented invariant, or a ScenarioError that does not name the file.
class InvariantViolation : public std::logic_error {
 public:
  explicit InvariantViolation(const std::string& what) : std::logic_error(what) {}
};

struct Outcome {
  bool loaded = false;  // false: rejected with a ScenarioError
  int scenarios = 0;    // when loaded
  std::string message;  // the ScenarioError's text when rejected
};

// Loads `bytes` as fuzz.yaml. Returns the outcome for a suite or a ScenarioError; throws
// InvariantViolation for a broken invariant and lets any other exception through (both are bugs).
Outcome load_one(std::string_view bytes);

}  // namespace attngate::fuzz
