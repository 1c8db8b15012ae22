// Unit tests for the scenario loader and the shipped suites.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attngate/scenario.hpp"

#ifndef ATTNGATE_SCENARIO_DIR
#error "ATTNGATE_SCENARIO_DIR must point at the shipped suites"
#endif

namespace attngate {
namespace {

namespace fs = std::filesystem;

#define EXPECT_HAS(haystack, needle)                                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)            \
      << "message:  " << (haystack) << "\nexpected: " << (needle)

// Joins lines so that a test can point at line numbers by position: the first line is line 1.
std::string lines(std::initializer_list<std::string> ls) {
  std::string out;
  for (const auto& l : ls) out += l + "\n";
  return out;
}

// One explicit scenario as a flow mapping; `over` replaces (or, with an empty value, drops) fields.
std::string scen(const std::string& id, const std::map<std::string, std::string>& over = {}) {
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"batch", "2"},    {"seqlen_q", "64"}, {"seqlen_k", "64"},    {"heads_q", "4"},   {"heads_kv", "2"},
      {"head_dim", "64"}, {"causal", "false"}, {"dtype", "bf16"}, {"tags", "[x]"}};
  std::string out = "  - {id: " + id;
  for (const auto& [k, v] : fields) {
    auto it = over.find(k);
    if (it == over.end()) out += ", " + k + ": " + v;
    else if (!it->second.empty()) out += ", " + k + ": " + it->second;
  }
  for (const auto& [k, v] : over) {
    bool known = false;
    for (const auto& f : fields) known = known || f.first == k;
    if (!known) out += ", " + k + ": " + v;
  }
  return out + "}";
}

const std::string kHead1 = "suite: t";
const std::string kHead2 = "description: test suite";

std::string error_of(const std::string& yaml, const std::string& label = "t.yaml") {
  try {
    load_suite_string(yaml, label);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ScenarioError for:\n" << yaml;
  return "";
}

// A scenario list with one bad scenario on line 4.
std::string one_scenario(const std::string& scenario_line) {
  return lines({kHead1, kHead2, "scenarios:", scenario_line});
}

// ---------------------------------------------------------------------------------------------
// Valid input

TEST(Load, ExplicitScenarioFieldsAndOrigin) {
  const Suite s = load_suite_string(
      lines({kHead1, kHead2, "scenarios:",
             "  - {id: a_1, batch: 3, seqlen_q: 33, seqlen_k: 77, heads_q: 8, heads_kv: 2, head_dim: 256, "
             "causal: true, dtype: fp16, tags: [gqa, odd]}",
             "  - id: b", "    batch: 1", "    seqlen_q: 1", "    seqlen_k: 1", "    heads_q: 1",
             "    heads_kv: 1", "    head_dim: 128", "    causal: false", "    dtype: bf16", "    tags: []"}),
      "dir/t.yaml");
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.description, "test suite");
  EXPECT_EQ(s.file, "dir/t.yaml");
  ASSERT_EQ(s.scenarios.size(), 2u);
  const Scenario& a = s.scenarios[0];
  EXPECT_EQ(a.id, "a_1");
  EXPECT_EQ(a.suite, "t");
  EXPECT_EQ(a.batch, 3);
  EXPECT_EQ(a.seqlen_q, 33);
  EXPECT_EQ(a.seqlen_k, 77);
  EXPECT_EQ(a.heads_q, 8);
  EXPECT_EQ(a.heads_kv, 2);
  EXPECT_EQ(a.head_dim, 256);
  EXPECT_TRUE(a.causal);
  EXPECT_EQ(a.dtype, DType::fp16);
  EXPECT_EQ(a.tags, (std::vector<std::string>{"gqa", "odd"}));
  EXPECT_TRUE(a.has_tag("odd"));
  EXPECT_FALSE(a.has_tag("mha"));
  EXPECT_EQ(a.origin, "dir/t.yaml:4:5");
  const Scenario& b = s.scenarios[1];
  EXPECT_EQ(b.id, "b");
  EXPECT_FALSE(b.causal);
  EXPECT_EQ(b.dtype, DType::bf16);
  EXPECT_TRUE(b.tags.empty());
  EXPECT_EQ(b.origin, "dir/t.yaml:5:5");
}

TEST(Load, DefaultTolerancesAreTheDocumentedOnes) {
  const Suite s = load_suite_string(one_scenario(scen("a")), "t.yaml");
  EXPECT_EQ(s.tolerance.ratio_to_initial, 2.0);
  EXPECT_EQ(s.tolerance.bf16.o_atol, 1e-3);
  EXPECT_EQ(s.tolerance.bf16.initial_o_max_abs, 2e-2);
  EXPECT_EQ(s.tolerance.bf16.lse_atol, 1e-3);
  EXPECT_EQ(s.tolerance.bf16.initial_lse_max_abs, 5e-3);
  EXPECT_EQ(s.tolerance.fp16.o_atol, 2.5e-4);
  EXPECT_EQ(s.tolerance.fp16.initial_o_max_abs, 4e-3);
  EXPECT_EQ(s.tolerance.fp16.lse_atol, 1e-3);
  EXPECT_EQ(s.tolerance.fp16.initial_lse_max_abs, 5e-3);
  EXPECT_EQ(&s.tolerance.of(DType::bf16), &s.tolerance.bf16);
  EXPECT_EQ(&s.tolerance.of(DType::fp16), &s.tolerance.fp16);
  EXPECT_TRUE(s.settings.empty());
}

TEST(Load, ToleranceOverridesOnlyTheFieldsGiven) {
  const Suite s = load_suite_string(
      lines({kHead1, kHead2, "tolerance:", "  ratio_to_initial: 3", "  fp16: {o_atol: 5.0e-4, initial_lse_max_abs: .01}",
             "scenarios:", scen("a")}),
      "t.yaml");
  EXPECT_EQ(s.tolerance.ratio_to_initial, 3.0);
  EXPECT_EQ(s.tolerance.fp16.o_atol, 5e-4);
  EXPECT_EQ(s.tolerance.fp16.initial_lse_max_abs, 0.01);
  EXPECT_EQ(s.tolerance.fp16.initial_o_max_abs, 4e-3);
  EXPECT_EQ(s.tolerance.fp16.lse_atol, 1e-3);
  EXPECT_EQ(s.tolerance.bf16.o_atol, 1e-3);
}

TEST(Load, SettingsAreKeptAsWritten) {
  const Suite s = load_suite_string(
      lines({kHead1, kHead2, "settings: {geomean_target: \"1.0\", scenario_floor: 0.90, baseline_kernel: initial}",
             "scenarios:", scen("a")}),
      "t.yaml");
  EXPECT_EQ(s.settings, (std::map<std::string, std::string>{
                            {"geomean_target", "1.0"}, {"scenario_floor", "0.90"}, {"baseline_kernel", "initial"}}));
}

TEST(Load, ScenariosAndSweepsKeepFileOrder) {
  const Suite s = load_suite_string(
      lines({kHead1, kHead2, "sweeps:",
             "  - id: \"sw_{batch}\"",
             "    base: {seqlen_q: 8, seqlen_k: 8, heads_q: 1, heads_kv: 1, head_dim: 64, causal: false, dtype: bf16, tags: []}",
             "    axes: [{batch: [1, 2]}]",
             "scenarios:", scen("z")}),
      "t.yaml");
  ASSERT_EQ(s.scenarios.size(), 3u);
  EXPECT_EQ(s.scenarios[0].id, "sw_1");
  EXPECT_EQ(s.scenarios[1].id, "sw_2");
  EXPECT_EQ(s.scenarios[2].id, "z");
}

TEST(Load, FileAndDirectoryLoading) {
  const fs::path dir = fs::temp_directory_path() /
                       ("attngate_scen_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(dir);
  std::ofstream(dir / "b.yaml") << "suite: b\ndescription: d\nscenarios:\n" << scen("b1") << "\n";
  std::ofstream(dir / "a.yaml") << "suite: a\ndescription: d\nscenarios:\n" << scen("a1") << "\n";
  std::ofstream(dir / "notes.txt") << "not a suite\n";
  const auto suites = load_suite_dir(dir);
  ASSERT_EQ(suites.size(), 2u);
  EXPECT_EQ(suites[0].name, "a");
  EXPECT_EQ(suites[1].name, "b");
  EXPECT_EQ(suites[0].file, (dir / "a.yaml").string());
  EXPECT_EQ(suites[0].scenarios[0].origin, (dir / "a.yaml").string() + ":4:5");

  // The same id in two files names both definitions.
  std::ofstream(dir / "c.yaml") << "suite: c\ndescription: d\nscenarios:\n" << scen("x") << "\n" << scen("a1") << "\n";
  try {
    load_suite_dir(dir);
    ADD_FAILURE() << "duplicate id across files was accepted";
  } catch (const ScenarioError& e) {
    EXPECT_HAS(e.what(), (dir / "c.yaml").string() + ":5:5: scenario 'a1': duplicate id");
    EXPECT_HAS(e.what(), "first defined at " + (dir / "a.yaml").string() + ":4:5");
  }
  fs::remove_all(dir);

  EXPECT_THROW(load_suite_dir(dir), ScenarioError);
  EXPECT_THROW(load_suite_file(dir / "missing.yaml"), ScenarioError);
}

TEST(Load, DirectoryWithoutSuitesIsAnError) {
  const fs::path dir = fs::temp_directory_path() /
                       ("attngate_scen_empty_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(dir);
  try {
    load_suite_dir(dir);
    ADD_FAILURE() << "an empty directory was accepted";
  } catch (const ScenarioError& e) {
    EXPECT_HAS(e.what(), "no *.yaml suite files");
  }
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Sweeps

const std::string kSweepBase =
    "    base: {batch: 1, seqlen_k: 128, heads_kv: 2, dtype: bf16, tags: [s]}";
// Every field but batch, for sweeps over batch.
const std::string kBatchSweepBase =
    "    base: {seqlen_q: 8, seqlen_k: 8, heads_q: 1, heads_kv: 1, head_dim: 64, causal: false, dtype: bf16, tags: []}";

TEST(Sweep, CrossesEntriesAndZipsFieldsWithinOne) {
  const Suite s = load_suite_string(
      lines({kHead1, kHead2, "sweeps:",
             "  - id: \"m_d{head_dim}_h{heads_q}_s{seqlen_q}_c{causal}\"",
             "    base: {batch: 1, seqlen_k: 128, heads_kv: 2, dtype: bf16, tags: [s]}",
             "    axes:",
             "      - {head_dim: [64, 128, 256], heads_q: [8, 4, 2]}",
             "      - {seqlen_q: [64, 128]}",
             "      - {causal: [false, true]}"}),
      "t.yaml");
  ASSERT_EQ(s.scenarios.size(), 12u);
  // The first entry varies slowest, the last fastest.
  const std::vector<std::string> expect_first = {"m_d64_h8_s64_c0", "m_d64_h8_s64_c1", "m_d64_h8_s128_c0",
                                                 "m_d64_h8_s128_c1", "m_d128_h4_s64_c0"};
  for (std::size_t i = 0; i < expect_first.size(); ++i) EXPECT_EQ(s.scenarios[i].id, expect_first[i]);
  EXPECT_EQ(s.scenarios.back().id, "m_d256_h2_s128_c1");
  for (const Scenario& sc : s.scenarios) {
    // Zipped: head_dim and heads_q move together.
    EXPECT_EQ(sc.head_dim * sc.heads_q, 512) << sc.id;
    EXPECT_EQ(sc.batch, 1);
    EXPECT_EQ(sc.seqlen_k, 128);
    EXPECT_EQ(sc.tags, std::vector<std::string>{"s"});
    EXPECT_EQ(sc.origin, "t.yaml:4:5");
    EXPECT_EQ(sc.suite, "t");
  }
  EXPECT_TRUE(s.scenarios[1].causal);
  EXPECT_FALSE(s.scenarios[0].causal);
}

TEST(Sweep, RendersDtypeAndTakesTagsFromAnAxis) {
  const Suite s = load_suite_string(
      lines({kHead1, kHead2, "sweeps:",
             "  - id: \"{dtype}_{batch}_{seqlen_q}x{seqlen_k}_{heads_q}_{heads_kv}_{head_dim}_{causal}\"",
             "    base: {batch: 2, seqlen_q: 1, seqlen_k: 3, heads_q: 4, heads_kv: 1, head_dim: 128, causal: true}",
             "    axes:",
             "      - dtype: [bf16, fp16]",
             "        tags: [[a, b], []]"}),
      "t.yaml");
  ASSERT_EQ(s.scenarios.size(), 2u);
  EXPECT_EQ(s.scenarios[0].id, "bf16_2_1x3_4_1_128_1");
  EXPECT_EQ(s.scenarios[1].id, "fp16_2_1x3_4_1_128_1");
  EXPECT_EQ(s.scenarios[0].dtype, DType::bf16);
  EXPECT_EQ(s.scenarios[1].dtype, DType::fp16);
  EXPECT_EQ(s.scenarios[0].tags, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(s.scenarios[1].tags.empty());
}

// ---------------------------------------------------------------------------------------------
// FLOPs

Scenario shape(int b, int sq, int sk, int hq, int d, bool causal) {
  Scenario s;
  s.batch = b;
  s.seqlen_q = sq;
  s.seqlen_k = sk;
  s.heads_q = hq;
  s.heads_kv = 1;
  s.head_dim = d;
  s.causal = causal;
  return s;
}

// Row-by-row count of visible keys with bottom-right alignment.
int64_t brute_visible(int sq, int sk) {
  int64_t total = 0;
  for (int i = 0; i < sq; ++i) {
    for (int j = 0; j < sk; ++j) total += (j <= i + sk - sq) ? 1 : 0;
  }
  return total;
}

TEST(Flops, NonCausal) {
  const Scenario s = shape(2, 100, 300, 4, 64, false);
  EXPECT_EQ(s.seqlen_k_effective(), 300.0);
  EXPECT_EQ(s.flops(), 4.0 * 2 * 4 * 100 * 300 * 64);
}

TEST(Flops, CausalSquareIsHalfPlusOneHalf) {
  for (int n : {1, 2, 17, 512, 16384}) {
    const Scenario s = shape(1, n, n, 1, 128, true);
    EXPECT_EQ(s.seqlen_k_effective(), (n + 1) / 2.0) << n;
    EXPECT_EQ(s.flops(), 4.0 * n * ((n + 1) / 2.0) * 128) << n;
  }
  // The FlashAttention-3 sweep's largest causal shape, exactly.
  EXPECT_EQ(shape(1, 16384, 16384, 16, 128, true).flops(), 4.0 * 16 * 128 * (16384.0 * 16385.0 / 2.0));
}

TEST(Flops, CausalFewerQueriesThanKeys) {
  // Sq < Sk: row i sees Sk - Sq + 1 + i keys.
  const Scenario s = shape(1, 33, 77, 1, 64, true);
  EXPECT_EQ(brute_visible(33, 77), 33 * 45 + 33 * 32 / 2);
  EXPECT_DOUBLE_EQ(s.seqlen_k_effective(), brute_visible(33, 77) / 33.0);
  EXPECT_DOUBLE_EQ(s.flops(), 4.0 * 64 * brute_visible(33, 77));
  // A single query row sees every key.
  EXPECT_EQ(shape(1, 1, 4095, 1, 64, true).seqlen_k_effective(), 4095.0);
}

TEST(Flops, CausalMoreQueriesThanKeysCountsMaskedRowsAsZero) {
  // Sq > Sk: rows 0..Sq-Sk-1 see no key; the rest see 1..Sk.
  const Scenario s = shape(3, 77, 33, 2, 256, true);
  EXPECT_EQ(brute_visible(77, 33), 33 * 34 / 2);
  EXPECT_DOUBLE_EQ(s.seqlen_k_effective(), 561.0 / 77.0);
  EXPECT_DOUBLE_EQ(s.flops(), 4.0 * 3 * 2 * 256 * 561);
  EXPECT_EQ(shape(1, 4095, 1, 1, 64, true).seqlen_k_effective(), 1.0 / 4095.0);
}

TEST(Flops, MatchesBruteForceOnManyShapes) {
  for (int sq : {1, 2, 3, 17, 64, 100, 128}) {
    for (int sk : {1, 2, 5, 17, 64, 99, 128}) {
      const Scenario s = shape(1, sq, sk, 1, 64, true);
      EXPECT_DOUBLE_EQ(s.seqlen_k_effective() * sq, static_cast<double>(brute_visible(sq, sk))) << sq << "x" << sk;
    }
  }
}

TEST(Summary, OneLine) {
  Scenario s = shape(1, 16384, 16384, 16, 128, true);
  s.heads_kv = 16;
  EXPECT_EQ(scenario_summary(s), "b=1 sq=16384 sk=16384 hq=16 hkv=16 d=128 causal bf16");
  s.causal = false;
  s.dtype = DType::fp16;
  EXPECT_EQ(scenario_summary(s), "b=1 sq=16384 sk=16384 hq=16 hkv=16 d=128 noncausal fp16");
}

// ---------------------------------------------------------------------------------------------
// Malformed input: every class of error names the file, the line and (where known) the scenario.

TEST(Errors, YamlSyntax) {
  const std::string msg = error_of(lines({kHead1, kHead2, "scenarios:", "  - {id: a, batch: [1, 2}"}));
  EXPECT_HAS(msg, "t.yaml:4:");
  EXPECT_HAS(msg, "YAML syntax error");
  const std::string msg2 = error_of(lines({kHead1, kHead2, "  bad: 1"}));
  EXPECT_HAS(msg2, "t.yaml:3:");
  EXPECT_HAS(msg2, "YAML syntax error");
}

TEST(Errors, NotOneMappingDocument) {
  EXPECT_HAS(error_of(""), "t.yaml:1:1: the file holds no YAML document");
  EXPECT_HAS(error_of("# only a comment\n"), "no YAML document");
  EXPECT_HAS(error_of("- a\n- b\n"), "t.yaml:1:1: the top level must be a mapping");
  EXPECT_HAS(error_of(lines({kHead1, kHead2, "scenarios:", scen("a"), "---", kHead1})), "t.yaml:6:");
  EXPECT_HAS(error_of(lines({kHead1, kHead2, "scenarios:", scen("a"), "---", kHead1})), "more than one YAML document");
}

TEST(Errors, UnknownKeysAtEveryLevel) {
  std::string m = error_of(lines({kHead1, kHead2, "scenario:", scen("a")}));
  EXPECT_HAS(m, "t.yaml:3:1: unknown top-level key 'scenario'");

  m = error_of(one_scenario(scen("a", {{"casual", "true"}})));
  EXPECT_HAS(m, "t.yaml:4:");
  EXPECT_HAS(m, "scenario 'a': unknown key 'casual'");

  m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{batch}\"", kBatchSweepBase,
                      "    axes: [{batch: [1]}]", "    exclude: []"}));
  EXPECT_HAS(m, "t.yaml:7:5: sweep 's_{batch}': unknown key 'exclude' in a sweep");

  m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{batch}\"",
                      "    base: {seqlen_q: 1, seqlen_k: 1, heads_q: 1, heads_kv: 1, head_dim: 64, causal: true, dtype: bf16, tag: []}",
                      "    axes: [{batch: [1]}]"}));
  EXPECT_HAS(m, "t.yaml:5:");
  EXPECT_HAS(m, "unknown field 'tag' in base");

  m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{batch}\"", kBatchSweepBase,
                      "    axes:", "      - {batch: [1], seqlen: [1]}"}));
  EXPECT_HAS(m, "t.yaml:7:");
  EXPECT_HAS(m, "unknown field 'seqlen' in axes");

  m = error_of(lines({kHead1, kHead2, "tolerance: {ratio: 2}", "scenarios:", scen("a")}));
  EXPECT_HAS(m, "t.yaml:3:");
  EXPECT_HAS(m, "unknown key 'ratio' in tolerance");

  m = error_of(lines({kHead1, kHead2, "tolerance:", "  bf16: {o_tol: 1.0e-3}", "scenarios:", scen("a")}));
  EXPECT_HAS(m, "t.yaml:4:");
  EXPECT_HAS(m, "unknown key 'o_tol' in tolerance.bf16");

  m = error_of(lines({kHead1, kHead2, "tolerance: {fp32: {o_atol: 1}}", "scenarios:", scen("a")}));
  EXPECT_HAS(m, "unknown key 'fp32' in tolerance");
}

TEST(Errors, DuplicateKeys) {
  const std::string m = error_of(one_scenario(scen("a", {{"batch", "2, batch: 3"}})));
  EXPECT_HAS(m, "t.yaml:4:");
  EXPECT_HAS(m, "scenario 'a': duplicate key 'batch'");
  EXPECT_HAS(error_of(lines({kHead1, kHead1, kHead2, "scenarios:", scen("a")})), "t.yaml:2:1: duplicate key 'suite'");
}

TEST(Errors, MissingFields) {
  std::string m = error_of(one_scenario(scen("a", {{"dtype", ""}})));
  EXPECT_HAS(m, "t.yaml:4:5: scenario 'a': missing field dtype");
  m = error_of(one_scenario(scen("a", {{"dtype", ""}, {"tags", ""}})));
  EXPECT_HAS(m, "scenario 'a': missing fields dtype, tags");
  m = error_of(one_scenario("  - {batch: 1}"));
  EXPECT_HAS(m, "t.yaml:4:5: scenario has no id");

  m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{batch}\"",
                      "    base: {seqlen_q: 1, seqlen_k: 1, heads_kv: 1, head_dim: 64, causal: true, tags: []}",
                      "    axes: [{batch: [1]}]"}));
  EXPECT_HAS(m, "t.yaml:4:5: sweep 's_{batch}': fields heads_q, dtype given neither in base nor in axes");

  m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{batch}\"", kSweepBase}));
  EXPECT_HAS(m, "t.yaml:4:5: sweep 's_{batch}': sweep has no axes");
  m = error_of(lines({kHead1, kHead2, "sweeps:", "  - base: {batch: 1}", "    axes: [{batch: [1]}]"}));
  EXPECT_HAS(m, "t.yaml:4:5: sweep has no id pattern");

  EXPECT_HAS(error_of(lines({kHead2, "scenarios:", scen("a")})), "t.yaml:1:1: missing top-level key 'suite'");
  EXPECT_HAS(error_of(lines({kHead1, "scenarios:", scen("a")})), "t.yaml:1:1: missing top-level key 'description'");
}

TEST(Errors, WrongTypes) {
  struct Case {
    std::string field, value, phrase;
  };
  const std::vector<Case> cases = {
      {"batch", "abc", "batch must be an integer, got 'abc'"},
      {"batch", "1.5", "batch must be an integer, got '1.5'"},
      {"seqlen_q", "\"64\"", "seqlen_q must be an integer, got the quoted string '64'"},
      {"seqlen_k", "[64]", "seqlen_k must be an integer, got a sequence"},
      {"heads_q", "0x10", "heads_q must be an integer"},
      {"heads_kv", "010", "heads_kv must be an integer"},
      {"head_dim", "", "head_dim must be an integer, got an empty value"},
      {"causal", "[true]", "causal must be true or false, got a sequence"},
      {"causal", "yes", "causal must be true or false, got 'yes'"},
      {"causal", "1", "causal must be true or false, got '1'"},
      {"causal", "\"true\"", "causal must be true or false, got the quoted string 'true'"},
      {"dtype", "{a: 1}", "dtype must be a string, got a mapping"},
      {"tags", "mha", "tags must be a sequence of names (may be []), got 'mha'"},
      {"tags", "[[a]]", "a tag must be a string, got a sequence"},
      {"seqlen_k", "99999999999", "seqlen_k is out of range"},
  };
  for (const Case& c : cases) {
    // An empty value is written explicitly here; scen() would drop the field.
    const std::string value = c.value.empty() ? "~" : c.value;
    const std::string m = error_of(one_scenario(scen("a", {{c.field, value}})));
    EXPECT_HAS(m, "t.yaml:4:");
    EXPECT_HAS(m, "scenario 'a': ");
    EXPECT_HAS(m, c.phrase);
  }
  // A block scenario puts the wrong value on its own line.
  const std::string m = error_of(lines({kHead1, kHead2, "scenarios:", "  - id: blk", "    batch: 2",
                                        "    seqlen_q: abc"}));
  EXPECT_HAS(m, "t.yaml:6:15: scenario 'blk': seqlen_q must be an integer, got 'abc'");
  EXPECT_HAS(error_of(lines({kHead1, kHead2, "scenarios: {a: 1}"})), "t.yaml:3:12: scenarios must be a sequence");
  EXPECT_HAS(error_of(lines({kHead1, "description: [a]", "scenarios:", scen("a")})),
             "t.yaml:2:14: description must be a string, got a sequence");
  EXPECT_HAS(error_of(one_scenario("  - [a, b]")), "t.yaml:4:5: a scenario must be a mapping, got a sequence");
}

TEST(Errors, NonPositiveSizes) {
  EXPECT_HAS(error_of(one_scenario(scen("a", {{"batch", "0"}}))), "t.yaml:4:");
  EXPECT_HAS(error_of(one_scenario(scen("a", {{"batch", "0"}}))), "scenario 'a': batch must be positive, got 0");
  EXPECT_HAS(error_of(one_scenario(scen("a", {{"seqlen_q", "-3"}}))), "scenario 'a': seqlen_q must be positive, got -3");
  EXPECT_HAS(error_of(one_scenario(scen("a", {{"heads_kv", "0"}}))), "heads_kv must be positive, got 0");
  const std::string m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{batch}\"", kBatchSweepBase,
                                        "    axes:", "      - {batch: [1, 2, -4]}"}));
  EXPECT_HAS(m, "t.yaml:7:24: sweep 's_{batch}': batch must be positive, got -4");
}

TEST(Errors, HeadsAndHeadDimAndDtype) {
  std::string m = error_of(one_scenario(scen("a", {{"heads_q", "12"}, {"heads_kv", "5"}})));
  EXPECT_HAS(m, "t.yaml:4:");
  EXPECT_HAS(m, "scenario 'a': heads_q (12) is not a multiple of heads_kv (5)");
  EXPECT_HAS(error_of(one_scenario(scen("a", {{"heads_q", "4"}, {"heads_kv", "8"}}))),
             "heads_q (4) is not a multiple of heads_kv (8)");
  // In a sweep the error names the expanded scenario.
  m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"g_{heads_q}\"",
                      "    base: {batch: 1, seqlen_q: 1, seqlen_k: 1, head_dim: 64, causal: true, dtype: bf16, tags: []}",
                      "    axes:", "      - {heads_q: [8, 6]}", "      - {heads_kv: [4]}"}));
  EXPECT_HAS(m, "t.yaml:8:21: scenario 'g_6': heads_q (6) is not a multiple of heads_kv (4)");

  m = error_of(one_scenario(scen("a", {{"head_dim", "96"}})));
  EXPECT_HAS(m, "t.yaml:4:");
  EXPECT_HAS(m, "scenario 'a': unsupported head_dim 96 (supported: 64, 128, 256)");
  m = error_of(one_scenario(scen("a", {{"dtype", "fp32"}})));
  EXPECT_HAS(m, "t.yaml:4:");
  EXPECT_HAS(m, "scenario 'a': unsupported dtype 'fp32' (supported: bf16, fp16)");
}

TEST(Errors, BadIdCharacters) {
  std::string m = error_of(one_scenario(scen("mha-d64")));
  EXPECT_HAS(m, "t.yaml:4:");
  EXPECT_HAS(m, "id 'mha-d64' must match [A-Za-z0-9_]+");
  EXPECT_HAS(error_of(one_scenario(scen("\"\""))), "id '' must match");
  EXPECT_HAS(error_of(one_scenario(scen("a", {{"tags", "[long-ctx]"}}))), "tag 'long-ctx' must match [A-Za-z0-9_]+");
  EXPECT_HAS(error_of(one_scenario(scen("a", {{"tags", "[a, a]"}}))), "scenario 'a': duplicate tag 'a'");
  m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s-{batch}\"", kBatchSweepBase, "    axes: [{batch: [1]}]"}));
  EXPECT_HAS(m, "t.yaml:4:");
  EXPECT_HAS(m, "sweep 's-{batch}': id pattern has the character '-' outside [A-Za-z0-9_]");
}

TEST(Errors, DuplicateIdsWithinAFile) {
  std::string m = error_of(lines({kHead1, kHead2, "scenarios:", scen("a"), scen("b"), scen("a")}));
  EXPECT_HAS(m, "t.yaml:6:5: scenario 'a': duplicate id (first defined at t.yaml:4:5)");
  m = error_of(lines({kHead1, kHead2, "scenarios:", scen("s_2"), "sweeps:", "  - id: \"s_{batch}\"",
                      "    base: {seqlen_q: 8, seqlen_k: 8, heads_q: 1, heads_kv: 1, head_dim: 64, causal: false, dtype: bf16, tags: []}",
                      "    axes: [{batch: [1, 2]}]"}));
  EXPECT_HAS(m, "t.yaml:6:5: scenario 's_2': duplicate id (first defined at t.yaml:4:5)");
}

TEST(Errors, ZippedListsOfDifferentLengths) {
  const std::string m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"z_{head_dim}\"",
                                        "    base: {batch: 1, seqlen_q: 1, seqlen_k: 1, causal: true, dtype: bf16, tags: []}",
                                        "    axes:", "      - head_dim: [64, 128, 256]", "        heads_q: [4, 2]",
                                        "        heads_kv: [1, 1, 1]"}));
  EXPECT_HAS(m, "t.yaml:8:18: sweep 'z_{head_dim}': zipped lists differ in length: 'head_dim' has 3 values, 'heads_q' has 2");
}

TEST(Errors, IdPatterns) {
  auto sweep_with_id = [](const std::string& id) {
    return lines({kHead1, kHead2, "sweeps:", "  - id: \"" + id + "\"", kSweepBase, "    axes:",
                  "      - {seqlen_q: [64, 128]}", "      - {heads_q: [2, 4], head_dim: [64, 128]}",
                  "      - {causal: [false, true]}"});
  };
  EXPECT_EQ(load_suite_string(sweep_with_id("p_{seqlen_q}_{heads_q}_{causal}"), "t.yaml").scenarios.size(), 8u);

  std::string m = error_of(sweep_with_id("p_{seqlen}_{causal}"));
  EXPECT_HAS(m, "t.yaml:4:");
  EXPECT_HAS(m, "unknown placeholder {seqlen}");
  EXPECT_HAS(error_of(sweep_with_id("p_{tags}")), "unknown placeholder {tags}");
  EXPECT_HAS(error_of(sweep_with_id("p_{seqlen_q")), "unclosed '{'");
  EXPECT_HAS(error_of(sweep_with_id("p_seqlen_q}")), "'}' without '{'");

  m = error_of(sweep_with_id("p_{seqlen_q}_{heads_q}"));
  EXPECT_HAS(m, "t.yaml:4:5: sweep 'p_{seqlen_q}_{heads_q}': id pattern produces the duplicate id 'p_64_2'");
  EXPECT_HAS(m, "noncausal");
  EXPECT_HAS(m, " causal");
}

TEST(Errors, FieldGivenTwice) {
  std::string m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{batch}\"", kSweepBase,
                                  "    axes:", "      - {batch: [1, 2]}"}));
  EXPECT_HAS(m, "t.yaml:7:10: sweep 's_{batch}': field 'batch' is set in both base and axes");
  m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{seqlen_q}\"", kSweepBase, "    axes:",
                      "      - {seqlen_q: [1, 2], heads_q: [2, 2]}", "      - {head_dim: [64], seqlen_q: [3]}",
                      "      - {causal: [true]}"}));
  EXPECT_HAS(m, "t.yaml:8:26: sweep 's_{seqlen_q}': field 'seqlen_q' appears in two axes entries (first at t.yaml:7:10)");
  m = error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{batch}\"", "    base: {id: x}", "    axes: [{batch: [1]}]"}));
  EXPECT_HAS(m, "t.yaml:5:12: sweep 's_{batch}': base cannot set id");
}

TEST(Errors, EmptyAxes) {
  EXPECT_HAS(error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{batch}\"", kSweepBase, "    axes: []"})),
             "t.yaml:6:11: sweep 's_{batch}': axes must be a non-empty sequence");
  EXPECT_HAS(error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{batch}\"", kBatchSweepBase, "    axes: [{batch: []}]"})),
             "t.yaml:6:20: sweep 's_{batch}': axis 'batch' must be a non-empty list of values");
  EXPECT_HAS(error_of(lines({kHead1, kHead2, "sweeps:", "  - id: \"s_{batch}\"", kSweepBase, "    axes: [{}]"})),
             "an axes entry must name at least one field");
}

TEST(Errors, SuiteNameMustBeTheFileStem) {
  const std::string m = error_of(one_scenario(scen("a")), "dir/other.yaml");
  EXPECT_HAS(m, "dir/other.yaml:1:8: suite name 't' must equal the file stem 'other'");
}

TEST(Errors, EmptySuite) {
  EXPECT_HAS(error_of(lines({kHead1, kHead2})), "t.yaml:1:1: the suite defines no scenarios");
  EXPECT_HAS(error_of(lines({kHead1, kHead2, "scenarios: []", "sweeps: []"})), "the suite defines no scenarios");
}

TEST(Errors, Tolerances) {
  auto with_tolerance = [](const std::string& t) {
    return lines({kHead1, kHead2, "tolerance:", t, "scenarios:", scen("a")});
  };
  EXPECT_HAS(error_of(with_tolerance("  ratio_to_initial: 0")), "t.yaml:4:21: tolerance ratio_to_initial must be positive, got 0");
  EXPECT_HAS(error_of(with_tolerance("  bf16: {o_atol: -1.0e-3}")), "t.yaml:4:");
  EXPECT_HAS(error_of(with_tolerance("  bf16: {o_atol: -1.0e-3}")), "tolerance bf16.o_atol must be positive, got -1.0e-3");
  EXPECT_HAS(error_of(with_tolerance("  fp16: {initial_lse_max_abs: 0.0}")), "tolerance fp16.initial_lse_max_abs must be positive");
  EXPECT_HAS(error_of(with_tolerance("  fp16: {lse_atol: abc}")), "tolerance fp16.lse_atol must be a finite number, got 'abc'");
  EXPECT_HAS(error_of(with_tolerance("  fp16: {lse_atol: .inf}")), "must be a finite number");
  EXPECT_HAS(error_of(with_tolerance("  fp16: {lse_atol: \"1e-3\"}")), "must be a number, got the quoted string '1e-3'");
  EXPECT_HAS(error_of(with_tolerance("  bf16: 1.0e-3")), "tolerance.bf16 must be a mapping");
}

TEST(Errors, Settings) {
  EXPECT_HAS(error_of(lines({kHead1, kHead2, "settings: {geomean_target: [1]}", "scenarios:", scen("a")})),
             "t.yaml:3:28: setting 'geomean_target' must be a scalar, got a sequence");
  EXPECT_HAS(error_of(lines({kHead1, kHead2, "settings: {geomean_target: }", "scenarios:", scen("a")})),
             "setting 'geomean_target' must be a scalar, got an empty value");
  EXPECT_HAS(error_of(lines({kHead1, kHead2, "settings: [a]", "scenarios:", scen("a")})), "settings must be a mapping");
}

// ---------------------------------------------------------------------------------------------
// The shipped suites

class Shipped : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { suites_ = new std::vector<Suite>(load_suite_dir(ATTNGATE_SCENARIO_DIR)); }
  static void TearDownTestSuite() {
    delete suites_;
    suites_ = nullptr;
  }
  static const Suite& suite(const std::string& name) {
    for (const Suite& s : *suites_) {
      if (s.name == name) return s;
    }
    throw std::runtime_error("no shipped suite " + name);
  }
  static std::vector<Suite>* suites_;
};
std::vector<Suite>* Shipped::suites_ = nullptr;

TEST_F(Shipped, AllFourSuitesLoadWithUniqueIds) {
  std::vector<std::string> names;
  std::set<std::string> ids;
  std::size_t total = 0;
  for (const Suite& s : *suites_) {
    names.push_back(s.name);
    EXPECT_FALSE(s.description.empty()) << s.name;
    for (const Scenario& sc : s.scenarios) {
      ids.insert(sc.id);
      EXPECT_EQ(sc.id.rfind(s.name + "_", 0), 0u) << sc.id << " lacks the prefix " << s.name << "_";
      EXPECT_EQ(sc.suite, s.name);
      EXPECT_EQ(sc.heads_q % sc.heads_kv, 0) << sc.id;
      ++total;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"full", "gate", "prod", "smoke"}));
  EXPECT_EQ(ids.size(), total);
}

TEST_F(Shipped, Smoke) {
  const Suite s = suite("smoke");
  EXPECT_GE(s.scenarios.size(), 5u);
  bool masked_rows = false, fp16 = false, batch2 = false, seqlen1 = false;
  std::set<int> dims;
  for (const Scenario& sc : s.scenarios) {
    EXPECT_LT(sc.flops(), 1e8) << sc.id;
    masked_rows |= sc.causal && sc.seqlen_q > sc.seqlen_k;
    fp16 |= sc.dtype == DType::fp16;
    batch2 |= sc.batch >= 2;
    seqlen1 |= sc.seqlen_q == 1;
    dims.insert(sc.head_dim);
  }
  EXPECT_TRUE(masked_rows && fp16 && batch2 && seqlen1);
  EXPECT_EQ(dims, (std::set<int>{64, 128, 256}));
}

TEST_F(Shipped, Gate) {
  const Suite s = suite("gate");
  EXPECT_GE(s.scenarios.size(), 24u);
  EXPECT_LE(s.scenarios.size(), 28u);
  EXPECT_EQ(s.settings.at("geomean_target"), "1.0");
  EXPECT_EQ(s.settings.at("scenario_floor"), "0.9");
  EXPECT_EQ(s.settings.at("baseline_kernel"), "initial");
  EXPECT_EQ(s.settings.at("nondeterminism"), "fail");                   // the candidate's (the gate)
  EXPECT_EQ(s.settings.at("library_nondeterminism"), "report");          // a library control's (ci/verify.sh)
  int causal = 0, gqa = 0;
  for (const Scenario& sc : s.scenarios) {
    EXPECT_EQ(int64_t{sc.batch} * sc.seqlen_q, 16384) << sc.id;
    EXPECT_EQ(sc.seqlen_q, sc.seqlen_k) << sc.id;
    EXPECT_EQ(sc.dtype, DType::bf16) << sc.id;
    EXPECT_EQ(sc.has_tag("causal"), sc.causal) << sc.id;
    EXPECT_EQ(sc.has_tag("mha"), sc.heads_q == sc.heads_kv) << sc.id;
    EXPECT_NE(sc.has_tag("short"), sc.has_tag("long")) << sc.id;
    EXPECT_EQ(sc.has_tag("long"), sc.seqlen_q >= 4096) << sc.id;
    if (sc.heads_q == sc.heads_kv) {
      EXPECT_EQ(sc.heads_q * sc.head_dim, 2048) << sc.id;
    }
    causal += sc.causal;
    gqa += sc.heads_q != sc.heads_kv;
  }
  EXPECT_EQ(causal * 2, static_cast<int>(s.scenarios.size()) + 2);  // every MHA shape both ways, GQA causal only
  EXPECT_EQ(gqa, 2);
}

TEST_F(Shipped, Full) {
  const Suite s = suite("full");
  EXPECT_GE(s.scenarios.size(), 150u);
  EXPECT_LE(s.scenarios.size(), 220u);
  bool q_lt_k = false, q_gt_k_causal = false, one_head = false, mqa = false, decode = false, big_grid = false;
  bool huge_tensor = false, mqa_d256 = false;
  std::set<int> fp16_head_dims;
  std::set<int> odd_lengths;
  for (const Scenario& sc : s.scenarios) {
    EXPECT_LE(sc.flops(), 1e13) << sc.id;
    q_lt_k |= sc.seqlen_q < sc.seqlen_k;
    q_gt_k_causal |= sc.causal && sc.seqlen_q > sc.seqlen_k;
    one_head |= sc.heads_q == 1 && sc.batch == 1;
    mqa |= sc.heads_kv == 1 && sc.heads_q > 1;
    if (sc.seqlen_q % 64 != 0) odd_lengths.insert(sc.seqlen_q);
    // The shapes issue 13 asked for: decode, > 65535 (batch x heads) in one launch, 2^31 elements
    // per tensor, MQA at head dim 256, fp16 at every head dim.
    decode |= sc.seqlen_q == 1 && sc.seqlen_k == 8192;
    big_grid |= int64_t{sc.batch} * sc.heads_q > 65535;
    huge_tensor |= int64_t{sc.batch} * sc.seqlen_q * sc.heads_q * sc.head_dim >= (int64_t{1} << 31);
    mqa_d256 |= sc.heads_kv == 1 && sc.heads_q > 1 && sc.head_dim == 256;
    if (sc.dtype == DType::fp16) fp16_head_dims.insert(sc.head_dim);
  }
  EXPECT_TRUE(q_lt_k && q_gt_k_causal && one_head && mqa);
  EXPECT_TRUE(decode && big_grid && huge_tensor && mqa_d256);
  EXPECT_EQ(fp16_head_dims, (std::set<int>{64, 128, 256}));
  EXPECT_EQ(odd_lengths, (std::set<int>{1, 17, 1000, 4095, 4097}));
}

TEST_F(Shipped, Prod) {
  const Suite s = suite("prod");
  EXPECT_GE(s.scenarios.size(), 16u);
  for (const Scenario& sc : s.scenarios) {
    EXPECT_EQ(int64_t{sc.batch} * sc.seqlen_q, 32768) << sc.id;
    EXPECT_EQ(sc.dtype, DType::bf16) << sc.id;
    EXPECT_EQ(sc.head_dim, 128) << sc.id;
  }
}

}  // namespace
}  // namespace attngate
