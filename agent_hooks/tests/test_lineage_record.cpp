// The lineage line as a typed document (lineage_record.hpp): every field written and read back,
// what a line leaves out, the schema's keys against the struct's, and lines written by the untyped
// code that came before it, which must read back the same and be written again byte for byte.
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "attngate/hooks/lineage.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

using nlohmann::json;
using test::TempDir;

// Every field set, none to its default.
Record full_evaluation(int version) {
  Record r;
  r.version = version;
  r.time = "2024-05-01T12:34:56Z";
  r.source = "gate";
  r.session = "sess-1";
  r.candidate_sha256 = "c0ffee";
  r.candidate_tree_sha256 = "7ree";
  r.git = {"deadbeef", true, false};
  r.verdict = "fail";
  r.reasons.push_back({"GEOMEAN_BELOW_TARGET", {"gate_a", "gate_b"}, "1.10 < 1.20"});
  r.target = {"candidate", "cudnn", 1.2, 0.9, "settings", "default", "geomean"};
  r.geomean = {1.1, 1.05, 1.15, 1.12, 1.08, 2, 1000};
  ScenarioResult s;
  s.id = "gate_a";
  s.shape = "b=4 sq=4096";
  s.status = "passed";
  s.correct = true;
  s.speedup = 1.25;
  s.ci_low = 1.2;
  s.ci_high = 1.3;
  s.tflops = 500.5;
  s.percent_of_peak = 40.5;
  s.flags = {"SIDE_STREAM_WORK"};
  s.candidate.kernel_count = 2;
  s.candidate.streams = 1;
  s.candidate.event_ms = 3.5;  // not kept by the lineage
  s.baseline.kernel_count = 1;
  s.best_baseline = BestBaselineRef{"cudnn", 510.0, "2024-04-01"};
  s.fraction_of_best = 0.98;
  r.scenarios.push_back(s);
  ScenarioResult s2;
  s2.id = "gate_b";
  s2.status = "missing";
  r.scenarios.push_back(s2);
  r.baselines["cudnn"]["gate_a"] = 500.0;
  r.churn = ChurnFigure{10, 4};
  r.signals.push_back({"stall", "no_new_best", "3 versions"});
  r.signals.push_back({"cycle", "churn", ""});
  r.triggers = {"stall", "cycle"};
  r.questions.push_back({"stall", "stall.memory"});
  r.report = "build/gpu/gate/report.json";
  r.build_exit = 0;
  r.ctest_exit = 8;
  r.suspicious_confirmed = true;
  r.receipt = Receipt{"machine", "abc123", "hmac456"};
  r.note = "wider tiles";
  r.dry_run = true;
  return r;
}

Record full_commit(int version) {
  Record c;
  c.type = "commit";
  c.version = version;
  c.time = "2024-05-01T02:00:00Z";
  c.source = "commit";
  c.note = "committed";
  c.questions_before = {{"stall", "stall.memory"}, {"cycle", "cycle.revert"}};
  return c;
}

// What a lineage line keeps of a scenario: of its two timings, the launch shape.
ScenarioResult as_kept(ScenarioResult s) {
  for (Timing* t : {&s.candidate, &s.baseline}) {
    Timing shape;
    shape.kernel_count = t->kernel_count;
    shape.streams = t->streams;
    *t = shape;
  }
  return s;
}

void expect_same_questions(const std::vector<QuestionRef>& want, const std::vector<QuestionRef>& got) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].trigger, want[i].trigger);
    EXPECT_EQ(got[i].id, want[i].id);
  }
}

// Field by field; the report's scenarios by their own (macro-made) documents.
void expect_same(const Record& want, const Record& got) {
  EXPECT_EQ(got.type, want.type);
  EXPECT_EQ(got.version, want.version);
  EXPECT_EQ(got.time, want.time);
  EXPECT_EQ(got.source, want.source);
  EXPECT_EQ(got.session, want.session);
  EXPECT_EQ(got.candidate_sha256, want.candidate_sha256);
  EXPECT_EQ(got.candidate_tree_sha256, want.candidate_tree_sha256);
  EXPECT_EQ(got.git.commit, want.git.commit);
  EXPECT_EQ(got.git.dirty, want.git.dirty);
  EXPECT_EQ(got.git.candidate_dirty, want.git.candidate_dirty);
  EXPECT_EQ(got.verdict, want.verdict);
  ASSERT_EQ(got.reasons.size(), want.reasons.size());
  for (std::size_t i = 0; i < want.reasons.size(); ++i) {
    EXPECT_EQ(got.reasons[i].code, want.reasons[i].code);
    EXPECT_EQ(got.reasons[i].scenarios, want.reasons[i].scenarios);
    EXPECT_EQ(got.reasons[i].detail, want.reasons[i].detail);
  }
  EXPECT_EQ(got.target.kernel, want.target.kernel);
  EXPECT_EQ(got.target.baseline, want.target.baseline);
  EXPECT_EQ(got.target.geomean, want.target.geomean);
  EXPECT_EQ(got.target.scenario_floor, want.target.scenario_floor);
  EXPECT_EQ(got.target.geomean_source, want.target.geomean_source);
  EXPECT_EQ(got.target.scenario_floor_source, want.target.scenario_floor_source);
  EXPECT_EQ(got.target.rule, want.target.rule);
  EXPECT_EQ(got.geomean.speedup, want.geomean.speedup);
  EXPECT_EQ(got.geomean.ci_low, want.geomean.ci_low);
  EXPECT_EQ(got.geomean.ci_high, want.geomean.ci_high);
  EXPECT_EQ(got.geomean.kernel_speedup, want.geomean.kernel_speedup);
  EXPECT_EQ(got.geomean.wall_speedup, want.geomean.wall_speedup);
  EXPECT_EQ(got.geomean.scenarios, want.geomean.scenarios);
  EXPECT_EQ(got.geomean.bootstrap_resamples, want.geomean.bootstrap_resamples);
  ASSERT_EQ(got.scenarios.size(), want.scenarios.size());
  for (std::size_t i = 0; i < want.scenarios.size(); ++i)
    EXPECT_EQ(json(got.scenarios[i]), json(as_kept(want.scenarios[i]))) << want.scenarios[i].id;
  EXPECT_EQ(got.baselines, want.baselines);
  ASSERT_EQ(got.churn.has_value(), want.churn.has_value());
  if (want.churn) {
    EXPECT_EQ(got.churn->added, want.churn->added);
    EXPECT_EQ(got.churn->readded, want.churn->readded);
  }
  ASSERT_EQ(got.signals.size(), want.signals.size());
  for (std::size_t i = 0; i < want.signals.size(); ++i) {
    EXPECT_EQ(got.signals[i].trigger, want.signals[i].trigger);
    EXPECT_EQ(got.signals[i].kind, want.signals[i].kind);
    EXPECT_EQ(got.signals[i].detail, want.signals[i].detail);
  }
  EXPECT_EQ(got.triggers, want.triggers);
  expect_same_questions(want.questions, got.questions);
  expect_same_questions(want.questions_before, got.questions_before);
  EXPECT_EQ(got.report, want.report);
  EXPECT_EQ(got.build_exit, want.build_exit);
  EXPECT_EQ(got.ctest_exit, want.ctest_exit);
  EXPECT_EQ(got.suspicious_confirmed, want.suspicious_confirmed);
  ASSERT_EQ(got.receipt.has_value(), want.receipt.has_value());
  if (want.receipt) {
    EXPECT_EQ(got.receipt->machine_id, want.receipt->machine_id);
    EXPECT_EQ(got.receipt->report_sha256, want.receipt->report_sha256);
    EXPECT_EQ(got.receipt->hmac_sha256, want.receipt->hmac_sha256);
  }
  EXPECT_EQ(got.note, want.note);
  EXPECT_EQ(got.dry_run, want.dry_run);
}

std::vector<std::string> raw_lines(const std::filesystem::path& f) {
  std::vector<std::string> lines;
  std::ifstream in(f);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::set<std::string> keys_of(const json& j) {
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  return keys;
}

Record append_as_is(Lineage& l, const Record& r, bool evaluation) {
  return l.append([&](const LineageContents&, int) { return r; }, evaluation);
}

TEST(LineageRecord, FullyPopulatedRecordsRoundTrip) {
  TempDir d;
  Lineage l(d / "l.jsonl");
  const Record evaluation = full_evaluation(1), commit = full_commit(1);
  append_as_is(l, evaluation, true);
  append_as_is(l, commit, false);
  const auto c = l.read();
  EXPECT_TRUE(c.issues.empty()) << c.issues.front().str();
  ASSERT_EQ(c.records.size(), 2u);
  expect_same(evaluation, c.records[0]);
  expect_same(commit, c.records[1]);
  EXPECT_DOUBLE_EQ(json::parse(raw_lines(l.file())[0])["churn"]["share"].get<double>(), 0.4);
}

// The defaults are what a line leaves out: source, session, note, report, the tree hash, baselines,
// churn, the exit codes, suspicious_confirmed, dry_run and the receipt when unset; an ask or a
// commit carries none of the evaluation's fields, only a commit its questions_before.
TEST(LineageRecord, MinimalRecordsRoundTripAndLeaveTheDefaultsOut) {
  TempDir d;
  Lineage l(d / "l.jsonl");
  Record evaluation;
  evaluation.version = 1;
  evaluation.time = "2024-05-01T00:00:00Z";
  Record ask = evaluation;
  ask.type = "ask";
  Record commit = evaluation;
  commit.type = "commit";
  for (const Record* r : {&evaluation, &ask, &commit}) append_as_is(l, *r, r->is_evaluation());
  const auto c = l.read();
  EXPECT_TRUE(c.issues.empty()) << c.issues.front().str();
  ASSERT_EQ(c.records.size(), 3u);
  expect_same(evaluation, c.records[0]);
  expect_same(ask, c.records[1]);
  expect_same(commit, c.records[2]);

  const auto lines = raw_lines(l.file());
  ASSERT_EQ(lines.size(), 3u);
  const std::set<std::string> common = {"schema", "type", "version", "time", "questions"};
  std::set<std::string> evaluation_keys = common;
  evaluation_keys.insert({"candidate_sha256", "git", "verdict", "reasons", "target", "geomean", "scenarios", "signals",
                          "triggers"});
  std::set<std::string> commit_keys = common;
  commit_keys.insert("questions_before");
  EXPECT_EQ(keys_of(json::parse(lines[0])), evaluation_keys) << lines[0];
  EXPECT_EQ(keys_of(json::parse(lines[1])), common) << lines[1];
  EXPECT_EQ(keys_of(json::parse(lines[2])), commit_keys) << lines[2];
}

// The schema is the contract: a fully populated evaluation and commit write every key it names,
// and it names every key they write (it is closed: additionalProperties false).
TEST(LineageRecord, TheSchemaNamesEveryKeyTheRecordWrites) {
  std::ifstream f(std::filesystem::path(ATTNGATE_HOOKS_DIR_FOR_TESTS) / "schema" / "lineage_record.schema.json");
  const json schema = json::parse(f);
  EXPECT_EQ(schema["additionalProperties"], false);
  std::set<std::string> written = keys_of(json(full_evaluation(1)));
  written.merge(keys_of(json(full_commit(1))));
  EXPECT_EQ(written, keys_of(schema["properties"]));
}

// Lines the untyped to_json (before lineage_record.hpp) wrote for full_evaluation(7), a minimal
// evaluation, an ask carrying evaluation fields it leaves out, and full_commit(2).
const char* const kOldFullEvaluation =
    R"({"baselines":{"cudnn":{"gate_a":500.0}},"build_exit":0,"candidate_sha256":"c0ffee","candidate_tree_sha256":"7ree","churn":{"added":10,"readded":4,"share":0.4},"ctest_exit":8,"dry_run":true,"geomean":{"bootstrap_resamples":1000,"ci_high":1.15,"ci_low":1.05,"kernel_speedup":1.12,"scenarios":2,"speedup":1.1,"wall_speedup":1.08},"git":{"candidate_dirty":false,"commit":"deadbeef","dirty":true},"note":"wider tiles","questions":[{"id":"stall.memory","trigger":"stall"}],"reasons":[{"code":"GEOMEAN_BELOW_TARGET","detail":"1.10 < 1.20","scenarios":["gate_a","gate_b"]}],"receipt":{"hmac_sha256":"hmac456","machine_id":"machine","report_sha256":"abc123"},"report":"build/gpu/gate/report.json","scenarios":[{"base_seed":"","baseline":{"kernel_count":1,"streams":null},"best_baseline":{"date":"2024-04-01","library":"cudnn","tflops":510.0},"calls":null,"candidate":{"kernel_count":2,"streams":1},"ci_high":1.3,"ci_low":1.2,"correct":true,"flags":["SIDE_STREAM_WORK"],"floor_ms":null,"fraction_of_best":0.98,"id":"gate_a","kernel_speedup":null,"lse_max_abs":null,"nondeterministic":false,"o_max_abs":null,"percent_of_peak":40.5,"shape":"b=4 sq=4096","speedup":1.25,"status":"passed","tflops":500.5,"wall_speedup":null},{"base_seed":"","baseline":{"kernel_count":null,"streams":null},"best_baseline":null,"calls":null,"candidate":{"kernel_count":null,"streams":null},"ci_high":null,"ci_low":null,"correct":null,"flags":[],"floor_ms":null,"fraction_of_best":null,"id":"gate_b","kernel_speedup":null,"lse_max_abs":null,"nondeterministic":false,"o_max_abs":null,"percent_of_peak":null,"shape":"","speedup":null,"status":"missing","tflops":null,"wall_speedup":null}],"schema":"attngate.lineage/1","session":"sess-1","signals":[{"detail":"3 versions","kind":"no_new_best","trigger":"stall"},{"detail":"","kind":"churn","trigger":"cycle"}],"source":"gate","suspicious_confirmed":true,"target":{"baseline":"cudnn","geomean":1.2,"geomean_source":"settings","kernel":"candidate","rule":"geomean","scenario_floor":0.9,"scenario_floor_source":"default"},"time":"2024-05-01T12:34:56Z","triggers":["stall","cycle"],"type":"evaluation","verdict":"fail","version":7})";
const char* const kOldMinimalEvaluation =
    R"({"candidate_sha256":"","geomean":{"bootstrap_resamples":0,"ci_high":null,"ci_low":null,"kernel_speedup":null,"scenarios":0,"speedup":null,"wall_speedup":null},"git":{"candidate_dirty":false,"commit":"","dirty":false},"questions":[],"reasons":[],"scenarios":[],"schema":"attngate.lineage/1","signals":[],"target":{"baseline":"","geomean":null,"geomean_source":"","kernel":"","rule":"","scenario_floor":null,"scenario_floor_source":""},"time":"2024-05-01T00:00:00Z","triggers":[],"type":"evaluation","verdict":"","version":1})";
const char* const kOldAsk =
    R"({"questions":[{"id":"human.why","trigger":"human"}],"schema":"attngate.lineage/1","source":"ask","time":"2024-05-01T01:00:00Z","type":"ask","version":3})";
const char* const kOldCommit =
    R"({"note":"committed","questions":[],"questions_before":[{"id":"stall.memory","trigger":"stall"},{"id":"cycle.revert","trigger":"cycle"}],"schema":"attngate.lineage/1","source":"commit","time":"2024-05-01T02:00:00Z","type":"commit","version":2})";

TEST(LineageRecord, LinesTheUntypedCodeWroteReadBackAndAreWrittenAgainAsTheyWere) {
  TempDir d;
  const std::vector<std::string> old = {kOldFullEvaluation, kOldMinimalEvaluation, kOldAsk, kOldCommit};
  std::string text;
  for (const auto& line : old) text += line + "\n";
  test::write_file(d / "l.jsonl", text);
  const auto c = Lineage(d / "l.jsonl").read();
  EXPECT_TRUE(c.issues.empty()) << c.issues.front().str();
  ASSERT_EQ(c.records.size(), 4u);

  Record minimal;
  minimal.version = 1;
  minimal.time = "2024-05-01T00:00:00Z";
  Record ask;
  ask.type = "ask";
  ask.version = 3;
  ask.time = "2024-05-01T01:00:00Z";
  ask.source = "ask";
  ask.questions = {{"human", "human.why"}};
  expect_same(full_evaluation(7), c.records[0]);
  expect_same(minimal, c.records[1]);
  expect_same(ask, c.records[2]);
  expect_same(full_commit(2), c.records[3]);
  for (std::size_t i = 0; i < old.size(); ++i) EXPECT_EQ(json(c.records[i]).dump(), old[i]);
}

// A line written before `git` had `candidate_dirty`: the candidate is not known to match HEAD.
TEST(LineageRecord, AGitWithoutCandidateDirtyReadsAsDirty) {
  Record r = json::parse(R"({"schema":"attngate.lineage/1","type":"evaluation","version":1,"time":"2024-05-01T00:00:00Z",)"
                         R"("questions":[],"git":{"commit":"abc","dirty":false}})")
                 .get<Record>();
  EXPECT_EQ(r.git.commit, "abc");
  EXPECT_TRUE(r.git.candidate_dirty);
  r = json::parse(R"({"version":1,"questions":[]})").get<Record>();  // no git at all: nothing to distrust
  EXPECT_FALSE(r.git.candidate_dirty);
  EXPECT_TRUE(r.is_evaluation());
}

// A line is unparseable (skipped, not counted) when it is not an object, has no version, or has
// a question without its trigger or id or a churn without its counts, as before the typed record;
// and when a field it has is of the wrong type.
TEST(LineageRecord, WhatALineCannotDoWithout) {
  EXPECT_THROW(json::parse(R"([1])").get<Record>(), std::exception);
  EXPECT_THROW(json::parse(R"({"type":"ask","questions":[]})").get<Record>(), std::exception);  // no version
  EXPECT_THROW(json::parse(R"({"version":1,"questions":[{"trigger":"stall"}]})").get<Record>(), std::exception);
  EXPECT_THROW(json::parse(R"({"version":1,"churn":{"added":3}})").get<Record>(), std::exception);
  EXPECT_THROW(json::parse(R"({"version":1,"note":7})").get<Record>(), std::exception);
  // Where the untyped reader ignored a field of the wrong type, the line is now unparseable.
  EXPECT_THROW(json::parse(R"({"version":1,"git":"abc"})").get<Record>(), std::exception);
  EXPECT_THROW(json::parse(R"({"version":1,"build_exit":"0"})").get<Record>(), std::exception);
  EXPECT_THROW(json::parse(R"({"version":1,"signals":null})").get<Record>(), std::exception);
}

// A signal without its kind (the untyped reader skipped such a line) is read with an empty kind,
// so the line still counts, and the schema names it.
TEST(LineageRecord, ASignalWithoutItsKindIsKeptAndNamed) {
  TempDir d;
  Lineage l(d / "l.jsonl");
  append_as_is(l, full_evaluation(1), true);
  json bad = json::parse(raw_lines(l.file())[0]);
  ASSERT_FALSE(bad["signals"].empty());
  bad["version"] = 2;
  bad["signals"][0].erase("kind");
  std::ofstream(l.file(), std::ios::app) << bad.dump() << "\n";
  const auto c = l.read();
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[1].signals[0].kind, "");
  ASSERT_EQ(c.issues.size(), 1u);
  EXPECT_NE(c.issues[0].message.find("$.signals[0]"), std::string::npos) << c.issues[0].str();
}

// The report's parts of a line are held to the schema too (a reason to its three keys, the geomean's
// counts to integers), where the typed reader alone would let them by: a line another writer
// changed there is kept (versions count it) and named.
TEST(LineageRecord, TheReportsPartsAreHeldToTheirTypes) {
  TempDir d;
  Lineage l(d / "l.jsonl");
  append_as_is(l, full_evaluation(1), true);
  json bad = json::parse(raw_lines(l.file())[0]);
  bad["version"] = 2;
  bad["reasons"][0]["why"] = "another writer's";
  bad["geomean"]["scenarios"] = 2.5;
  std::ofstream(l.file(), std::ios::app) << bad.dump() << "\n";
  const auto c = l.read();
  ASSERT_EQ(c.records.size(), 2u);
  ASSERT_EQ(c.issues.size(), 1u);
  for (const char* where : {"$.reasons[0]", "$.geomean.scenarios"})
    EXPECT_NE(c.issues[0].message.find(where), std::string::npos) << where << " in " << c.issues[0].str();
}

}  // namespace
}  // namespace attngate::hooks
