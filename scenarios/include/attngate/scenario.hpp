// Scenarios: the attention shapes the gate verifies and times, loaded from the YAML suites in
// scenarios/*.yaml. Format, defaults and error rules: scenarios/README.md.
#pragma once

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attngate/params.hpp"

namespace attngate {

struct Scenario {
  std::string id;     // [A-Za-z0-9_]+: ids become GoogleTest/CTest names and filters
  std::string suite;  // name of the suite (file stem) it belongs to
  int batch = 0;
  int seqlen_q = 0;
  int seqlen_k = 0;
  int heads_q = 0;
  int heads_kv = 0;
  int head_dim = 0;
  bool causal = false;
  DType dtype = DType::bf16;
  std::vector<std::string> tags;
  std::string origin;  // "file:line:col" of its definition (for sweeps: of the sweep)

  // Keys each query row attends to, averaged over rows: seqlen_k, or for causal (bottom-right
  // aligned, key j visible to query i iff j <= i + seqlen_k - seqlen_q) the exact mean, counting
  // fully masked rows as 0.
  double seqlen_k_effective() const;
  // 4 * batch * heads_q * seqlen_q * seqlen_k_effective * head_dim (two GEMMs, 2 FLOPs per MAC).
  double flops() const;
  bool has_tag(std::string_view tag) const;
};

// Per-dtype bounds on max|O - ref| and max|LSE - ref|; see Tolerance.
struct DtypeTolerance {
  double o_atol;
  double initial_o_max_abs;
  double lse_atol;
  double initial_lse_max_abs;
};

// The pass rule (applied by the verifier): a candidate passes when
//   max|O_cand - ref| <= ratio_to_initial * max|O_initial - ref| + o_atol   (same for LSE), and
//   the initial kernel itself stays within max|O_initial - ref| <= initial_o_max_abs (same for LSE).
struct Tolerance {
  double ratio_to_initial = 2.0;
  DtypeTolerance bf16{1.0e-3, 2.0e-2, 1.0e-3, 5.0e-3};
  DtypeTolerance fp16{2.5e-4, 4.0e-3, 1.0e-3, 5.0e-3};

  const DtypeTolerance& of(DType t) const { return t == DType::fp16 ? fp16 : bf16; }
};

struct Suite {
  std::string name;         // equals the file stem
  std::string description;
  std::string file;         // path or label it was loaded from
  Tolerance tolerance;
  // Free-form scalar settings (e.g. gate targets), kept as written; readers validate them.
  std::map<std::string, std::string> settings;
  std::vector<Scenario> scenarios;  // in file order: explicit ones and sweep expansions as they appear
};

// Every load error. what(): "<file>:<line>:<col>: scenario '<id>': <what>"; the scenario part is
// "sweep '<id pattern>'" inside a sweep and absent outside both.
class ScenarioError : public std::runtime_error {
 public:
  explicit ScenarioError(const std::string& message) : std::runtime_error(message) {}
};

Suite load_suite_file(const std::filesystem::path& file);
// Parses yaml as if it were the file file_label (used in messages; its stem must equal `suite:`).
Suite load_suite_string(const std::string& yaml, const std::string& file_label);
// Every *.yaml directly in dir, sorted by file name; ids must be unique across all of them.
std::vector<Suite> load_suite_dir(const std::filesystem::path& dir);

// A suite named `name` of ad-hoc shapes, one per spec ("b=4,sq=8192,sk=8192,hq=32,hkv=8,d=128,causal,bf16";
// commas or spaces between items; sk defaults to sq, hkv to hq; noncausal and bf16 unless said; id=NAME
// names it adhoc_NAME, else shape_b4_sq8192_..., so that it never takes a suite's id), loaded by the
// same rules as a suite file. Throws ScenarioError
// naming the spec on an unknown key, a repeated one, a missing one or what the loader refuses.
Suite adhoc_suite(const std::vector<std::string>& specs, const std::string& name = "adhoc");

// One line, e.g. "b=1 sq=16384 sk=16384 hq=16 hkv=16 d=128 causal bf16" ("noncausal" otherwise).
std::string scenario_summary(const Scenario& s);

}  // namespace attngate
