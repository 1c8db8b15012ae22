#include "fuzz_one.hpp"

#include <cmath>
#include <set>

#include "attngate/scenario.hpp"

namespace attngate::fuzz {

namespace {

bool is_word(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw InvariantViolation(std::string("loaded suite breaks an invariant: ") + what);
}

void check_tolerance(const DtypeTolerance& t, const char* dtype) {
  for (double v : {t.o_atol, t.initial_o_max_abs, t.lse_atol, t.initial_lse_max_abs})
    require(std::isfinite(v) && v > 0, std::string("tolerance of ") + dtype + " not finite and positive");
}

void check_suite(const Suite& s) {
  require(s.name == "fuzz", "suite name '" + s.name + "' differs from the file stem 'fuzz'");
  require(s.file == kLabel, "suite file '" + s.file + "'");
  require(!s.scenarios.empty(), "no scenarios");
  require(std::isfinite(s.tolerance.ratio_to_initial) && s.tolerance.ratio_to_initial > 0, "ratio_to_initial");
  check_tolerance(s.tolerance.bf16, "bf16");
  check_tolerance(s.tolerance.fp16, "fp16");
  std::set<std::string> ids;
  for (const Scenario& sc : s.scenarios) {
    const std::string at = "scenario '" + sc.id + "': ";
    require(is_word(sc.id), at + "id is not [A-Za-z0-9_]+");
    require(ids.insert(sc.id).second, at + "duplicate id");
    require(sc.suite == "fuzz", at + "suite '" + sc.suite + "'");
    require(sc.batch > 0 && sc.seqlen_q > 0 && sc.seqlen_k > 0 && sc.heads_q > 0 && sc.heads_kv > 0,
            at + "a size is not positive");
    require(sc.heads_q % sc.heads_kv == 0, at + "heads_q is not a multiple of heads_kv");
    require(sc.head_dim == 64 || sc.head_dim == 128 || sc.head_dim == 256, at + "head_dim");
    require(sc.dtype == DType::bf16 || sc.dtype == DType::fp16, at + "dtype");
    std::set<std::string> tags;
    for (const std::string& t : sc.tags) {
      require(is_word(t), at + "tag '" + t + "'");
      require(tags.insert(t).second, at + "duplicate tag '" + t + "'");
    }
    require(sc.origin.rfind(kLabel, 0) == 0, at + "origin '" + sc.origin + "' does not name the file");
    // The figures the consumers derive from a scenario must be finite.
    require(std::isfinite(sc.flops()) && sc.flops() > 0, at + "flops() not finite and positive");
    require(!scenario_summary(sc).empty(), at + "empty summary");
  }
}

}  // namespace

Outcome load_one(std::string_view bytes) {
  Outcome out;
  Suite suite;
  try {
    suite = load_suite_string(std::string(bytes), kLabel);
  } catch (const ScenarioError& e) {
    out.message = e.what();
    // Every message starts with the file label ("fuzz.yaml" or "fuzz.yaml:line:col").
    if (out.message.rfind(kLabel, 0) != 0)
      throw InvariantViolation("ScenarioError does not start with the file label: " + out.message);
    return out;
  }
  check_suite(suite);
  out.loaded = true;
  out.scenarios = int(suite.scenarios.size());
  return out;
}

}  // namespace attngate::fuzz
