// The verify result document (attngate.verify_result/1): the structs round-trip, a written document
// satisfies verify/schema/verify_result.schema.json, and documents in the form written before the
// structs (and the hand-made ones of the gate report's tests) still parse.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>

#include "attngate/verify/result_document.hpp"
#include "attngate/verify/schema_check.hpp"
#include "attngate/verify/start_record.hpp"

namespace {

using nlohmann::json;
using namespace attngate::verify;

json load_schema() {
  std::ifstream f(ATTNGATE_VERIFY_RESULT_SCHEMA);
  EXPECT_TRUE(f.good()) << "cannot read " << ATTNGATE_VERIFY_RESULT_SCHEMA;
  return json::parse(f);
}

std::vector<std::string> schema_problems(const json& doc) { return attngate::verify::schema_problems(load_schema(), doc); }

ResultStats stats(double max_abs) { return {max_abs, max_abs * 0.5, 1e-3, 0, 0}; }

// The identifying fields of the candidate's document for `scenario` on the gate suite.
ResultDocument candidate_document(const std::string& scenario, const std::string& status) {
  ResultDocument d;
  d.test = "verify.candidate." + scenario;
  d.kernel = "candidate";
  d.scenario = scenario;
  d.suite = "gate";
  d.status = status;
  return d;
}

// A document as attngate_verify writes it for a candidate that failed its second distribution.
ResultDocument failed_candidate() {
  ResultDocument d = candidate_document("gate_a", "failed");
  d.ctest_gpu = "1";
  d.pci_bus_id = "00000000:19:00.0";
  d.ground_truth = "gpu_reference_fp32";
  d.base_seed = "18446744073709551615";  // a uint64 beyond double's exact integers: kept as text
  ResultRun ok;
  ok.distribution = "standard";
  ok.seed = "11";
  ok.o = stats(0.0039);
  ok.lse = stats(2e-6);
  ok.initial_o = stats(0.0041);
  ok.initial_lse = stats(3e-6);
  ok.o_worst_at = "b=0 s=17 h=3 d=5";
  ok.lse_worst_at = "b=0 h=3 s=17";
  ResultRun bad = ok;
  bad.distribution = "large_scores";
  bad.seed = "12";
  bad.pass = false;
  bad.reasons = {"not deterministic: 3 of 4096 O elements differ"};
  bad.o_guard_violations = 2;
  bad.input_mismatches = 7;
  d.runs = {ok, bad};
  return d;
}

TEST(ResultDocument, RoundTrips) {
  const ResultDocument d = failed_candidate();
  const json j = d;
  const ResultDocument back = parse_result_document(json::parse(j.dump(1)));
  EXPECT_EQ(json(back), j);
  EXPECT_EQ(back.base_seed, "18446744073709551615");
  ASSERT_EQ(back.runs.size(), 2u);
  EXPECT_FALSE(back.runs[1].pass);
  EXPECT_EQ(back.runs[1].reasons, d.runs[1].reasons);
  ASSERT_TRUE(back.runs[0].initial_o.has_value());
  EXPECT_DOUBLE_EQ(back.runs[0].initial_o->max_abs, 0.0041);
  EXPECT_EQ(back.runs[1].input_mismatches, 7u);
}

TEST(ResultDocument, WrittenDocumentsFollowTheSchema) {
  EXPECT_EQ(schema_problems(json(failed_candidate())), std::vector<std::string>{});
  // A skipped test: no case ran, so its seed, device and runs are null or empty.
  ResultDocument skipped = candidate_document("gate_b", "skipped");
  skipped.detail = "no CUDA device of the required architecture";
  skipped.skip_reason = "no_device";
  const json j = skipped;
  EXPECT_EQ(schema_problems(j), std::vector<std::string>{});
  ResultDocument odd = skipped;
  odd.skip_reason = "maybe";
  EXPECT_NE(schema_problems(json(odd)), std::vector<std::string>{});  // the reasons are enumerated
  EXPECT_TRUE(j["ctest_gpu"].is_null());
  EXPECT_TRUE(j["base_seed"].is_null());
  EXPECT_EQ(j["runs"], json::array());
}

// The schema requires exactly the keys the structs write, at the top level and in a run: the two
// definitions cannot drift apart without this failing.
TEST(ResultDocument, SchemaRequiresWhatTheStructsWrite) {
  const json schema = load_schema();
  auto keys = [](const json& obj) {
    std::set<std::string> k;
    for (const auto& [key, v] : obj.items()) k.insert(key);
    return k;
  };
  auto required = [](const json& s) { return s["required"].get<std::set<std::string>>(); };
  const json d = failed_candidate();
  EXPECT_EQ(required(schema), keys(d));
  EXPECT_EQ(keys(schema["properties"]), keys(d));
  EXPECT_EQ(required(schema["$defs"]["run"]), keys(d["runs"][0]));
  EXPECT_EQ(required(schema["$defs"]["stats"]), keys(d["runs"][0]["o"]));
  EXPECT_EQ(schema["properties"]["schema"]["const"], kVerifyResultSchema);
}

TEST(ResultDocument, SchemaCheckCatchesBadDocuments) {
  json j = failed_candidate();
  j.erase("status");
  j["runs"][0]["pass"] = "yes";
  j["runs"][1]["o"].erase("max_abs");
  j["base_seed"] = 12345;
  const auto p = schema_problems(j);
  EXPECT_EQ(p.size(), 4u) << json(p).dump(1);
}

// Documents as attngate_verify wrote them before the structs (no null keys: absent when unset) and
// the hand-made ones of the gate report's tests parse, absent fields taking their defaults.
TEST(ResultDocument, OlderAndPartialDocumentsParse) {
  const json older = json::parse(R"({"schema": "attngate.verify_result/1", "test": "verify.initial.s", "kernel": "initial",
    "scenario": "s", "suite": "smoke", "status": "passed", "detail": "", "ctest_gpu": null,
    "pci_bus_id": "00000000:19:00.0", "ground_truth": "gpu_reference_fp32", "base_seed": "7",
    "runs": [{"distribution": "standard", "seed": "8", "pass": true, "reasons": [],
              "o": {"max_abs": 0.001, "max_scaled": 0.001, "rel_l2": 0.0001, "nonfinite": 0, "masked_mismatch": 0},
              "lse": {"max_abs": 1e-6, "max_scaled": 1e-7, "rel_l2": 1e-8, "nonfinite": 0, "masked_mismatch": 0},
              "o_worst_at": "b=0 s=1 h=0 d=2", "lse_worst_at": "b=0 h=0 s=1", "o_guard_violations": 0,
              "lse_guard_violations": 0, "input_mismatches": 0}]})");
  const ResultDocument d = parse_result_document(older);
  EXPECT_FALSE(d.ctest_gpu.has_value());
  EXPECT_EQ(d.base_seed, "7");
  ASSERT_EQ(d.runs.size(), 1u);
  EXPECT_FALSE(d.runs[0].initial_o.has_value());
  EXPECT_DOUBLE_EQ(d.runs[0].o.max_abs, 0.001);
  // Written again, the older document changes only by the keys it lacked, now null.
  const json again = d;
  const json flat_older = older.flatten(), flat_again = again.flatten();
  EXPECT_EQ(flat_again.at("/runs/0/initial_o"), nullptr);
  for (const auto& [key, v] : flat_older.items()) EXPECT_EQ(flat_again.at(key), v) << key;
  EXPECT_EQ(schema_problems(again), std::vector<std::string>{});

  const json partial = {{"schema", kVerifyResultSchema}, {"status", "passed"}, {"base_seed", "7"},
                        {"runs", json::array({{{"distribution", "standard"}, {"pass", true}, {"o", {{"max_abs", 0.004}}}}})}};
  const ResultDocument p = parse_result_document(partial);
  EXPECT_EQ(p.status, "passed");
  EXPECT_TRUE(p.runs[0].pass);
  EXPECT_DOUBLE_EQ(p.runs[0].o.max_abs, 0.004);
  EXPECT_FALSE(p.pci_bus_id.has_value());
}

TEST(ResultDocument, RejectsOtherDocuments) {
  EXPECT_THROW(parse_result_document(json::object()), json::exception);
  EXPECT_THROW(parse_result_document(json::array()), json::exception);
  EXPECT_THROW(parse_result_document({{"schema", "attngate.verify_result/2"}}), json::exception);
  EXPECT_THROW(parse_result_document({{"schema", kVerifyResultSchema}, {"runs", "none"}}), json::exception);
  EXPECT_THROW(parse_result_document({{"schema", kVerifyResultSchema}, {"base_seed", 7}}), json::exception);
  EXPECT_EQ(result_file_name("candidate", "gate_a"), "verify.candidate.gate_a.json");
}

// The start record (attngate.start_record/1) a gate test writes when it starts: the recorder writes
// it with this process's pid and the time, again with the reason when the test skips, and nothing
// without a file; another document is refused.
TEST(StartRecord, WrittenAtStartAndAgainOnASkip) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("attngate_start_" + std::to_string(::getpid()));
  const std::filesystem::path file = start_record_file(dir, "verify.batch.gate.1of2");
  const int64_t before = unix_ms_now();
  StartRecorder recorder(file, {"verify.candidate.gate_a.json"});
  std::ifstream in(file);
  ASSERT_TRUE(in) << file;
  StartRecord r = parse_start_record(json::parse(in));
  EXPECT_EQ(r.test, "verify.batch.gate.1of2");
  EXPECT_EQ(r.pid, int64_t(::getpid()));
  EXPECT_GE(r.started_unix_ms, before);
  EXPECT_LE(r.started_unix_ms, unix_ms_now());
  EXPECT_EQ(r.writes, std::vector<std::string>{"verify.candidate.gate_a.json"});
  EXPECT_FALSE(r.skipped.has_value());
  recorder.skipped("needs a CUDA GPU");
  in = std::ifstream(file);
  const StartRecord again = parse_start_record(json::parse(in));
  EXPECT_EQ(again.skipped, std::optional<std::string>("needs a CUDA GPU"));
  EXPECT_EQ(again.started_unix_ms, r.started_unix_ms);
  EXPECT_EQ(json(again), json(parse_start_record(json(again))));
  std::filesystem::remove_all(dir);
  StartRecorder none("", {});  // outside the gate: nothing written
  none.skipped("no GPU");
  EXPECT_FALSE(std::filesystem::exists(dir));
  json other = json(r);
  other["schema"] = "attngate.verify_result/1";
  EXPECT_THROW(parse_start_record(other), json::exception);
  other = json(r);
  other["pid"] = "1";
  EXPECT_THROW(parse_start_record(other), json::exception);
}

}  // namespace
