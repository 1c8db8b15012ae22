// The machine-readable contract (issue 14): `gate --json` and its schema, --note, the dry run and
// its separate lineage, `show` and `diff` over the versions store, and the supervisor's escalation
// in the gate's outputs.
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "attngate/hooks/commands.hpp"
#include "attngate/hooks/dry_run.hpp"
#include "attngate/hooks/gate_result.hpp"
#include "attngate/hooks/version_store.hpp"
#include "attngate/verify/schema_check.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

RunResult attngate(const test::Sandbox& sb, std::vector<std::string> args) {
  args.insert(args.begin(), {ATTNGATE_EXE, "--repo", sb.dir.path().string()});
  return run_process(args);
}

json load_schema() {
  std::ifstream f(fs::path(ATTNGATE_HOOKS_DIR_FOR_TESTS) / "schema" / "gate_result.schema.json");
  return json::parse(f);
}

std::vector<std::string> schema_problems(const json& doc) { return verify::schema_problems(load_schema(), doc); }

std::set<std::string> keys(const json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

std::set<std::string> required(const json& def) { return def["required"].get<std::set<std::string>>(); }

// stdout of a --json run: exactly one line, one object.
json only_json(const RunResult& r) {
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  return json::parse(r.out);
}

TEST(GateResultSchema, RequiredKeysAreTheStructsKeys) {
  const json s = load_schema();
  const json& defs = s["$defs"];
  GateResult full;
  full.scenarios.push_back({});
  full.reasons.push_back({});
  full.signals.push_back({});
  full.question = GateResultQuestion{};
  const json j = full;
  EXPECT_EQ(required(defs["result"]), keys(j));
  EXPECT_EQ(required(defs["geomean"]), keys(j["geomean"]));
  EXPECT_EQ(required(defs["scenario"]), keys(j["scenarios"][0]));
  EXPECT_EQ(required(defs["reason"]), keys(j["reasons"][0]));
  EXPECT_EQ(required(defs["signal"]), keys(j["signals"][0]));
  EXPECT_EQ(required(defs["question"]), keys(j["question"]));
  EXPECT_EQ(required(defs["no_result"]), keys(json(GateNoResult{})));
  EXPECT_EQ(s["$defs"]["result"]["properties"]["schema"]["const"], kGateResultSchema);
  // Round trip: the struct reads back what it writes.
  EXPECT_EQ(json(j.get<GateResult>()), j);
}

class Contract : public ::testing::Test {
 protected:
  test::Sandbox sb{/*with_git=*/true};
  test::FakeGate fake{sb};
  fs::path dry_lineage() const { return sb.dir / ".attngate" / "dry-run" / "lineage.jsonl"; }
};

TEST_F(Contract, GateJsonPrintsOneObjectOnStdoutAndTheTextOnStderr) {
  fake.next_report(test::report_json("pass", 1.03, 1.02, 1.04));
  // Without --quiet the build's and ctest's output would reach stdout; with --json it goes to stderr.
  auto r = attngate(sb, {"gate", "--json", "--build-dir", fake.build.string(), "--note", "first tiles"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  json j = only_json(r);
  EXPECT_TRUE(schema_problems(j).empty()) << j.dump(1);
  EXPECT_EQ(j["schema"], kGateResultSchema);
  EXPECT_EQ(j["verdict"], "pass");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["dry_run"], false);
  EXPECT_EQ(j["report"], (fake.build / "gate" / "report.json").string());
  EXPECT_EQ(j["geomean"]["ci_low"], 1.02);
  EXPECT_EQ(j["geomean"]["target"], 1.0);
  EXPECT_EQ(j["scenarios"][0]["id"], "gate_a");
  EXPECT_EQ(j["scenarios"][0]["fraction_of_best_baseline"], nullptr);
  EXPECT_NE(r.err.find("attngate: PASS, version 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("note: first tiles"), std::string::npos) << r.err;
  EXPECT_EQ(Lineage(sb.ctx.lineage).read().records.at(0).note, "first tiles");

  fake.next_report(test::report_json("fail", 0.93, 0.92, 0.94, {{"gate_a", false}}, {"CORRECTNESS_FAILED"}));
  r = attngate(sb, {"gate", "--json", "--quiet", "--build-dir", fake.build.string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  j = only_json(r);
  EXPECT_TRUE(schema_problems(j).empty()) << j.dump(1);
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["reasons"][0]["code"], "CORRECTNESS_FAILED");
  EXPECT_EQ(j["scenarios"][0]["correct"], false);
  EXPECT_EQ(j["question"]["trigger"], "correctness");
  EXPECT_FALSE(j["question"]["text"].get<std::string>().empty());
  EXPECT_FALSE(j["question"]["id"].get<std::string>().empty());

  // No evaluation: the environment failure is an object too, and nothing is recorded.
  r = attngate(sb, {"gate", "--json", "--build-dir", (sb.dir / "nowhere").string()});
  EXPECT_EQ(r.exit_code, kExitEnvironment);
  j = only_json(r);
  EXPECT_TRUE(schema_problems(j).empty()) << j.dump(1);
  EXPECT_EQ(j["verdict"], "environment_failure");
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_NE(j["detail"].get<std::string>().find("no configured build"), std::string::npos);
  EXPECT_EQ(Lineage(sb.ctx.lineage).read().evaluations().size(), 2u);
}

TEST_F(Contract, NoteOnRecordIsShownByHistoryAndShow) {
  auto report = test::write_report(sb.dir / "r.json", test::report_json("pass", 1.03, 1.02, 1.04));
  ASSERT_EQ(cmd_record(sb.ctx, report, "swizzled K tiles"), kExitPass) << sb.err.str();
  sb.clear_streams();
  ASSERT_EQ(cmd_history(sb.ctx), kExitPass);
  EXPECT_NE(sb.out.str().find("\"swizzled K tiles\""), std::string::npos) << sb.out.str();
  sb.clear_streams();
  ASSERT_EQ(cmd_show(sb.ctx, 1, false), kExitPass) << sb.err.str();
  EXPECT_NE(sb.out.str().find("note: swizzled K tiles"), std::string::npos) << sb.out.str();
  sb.clear_streams();
  ASSERT_EQ(cmd_show(sb.ctx, 1, true), kExitPass);
  const json j = json::parse(sb.out.str());
  EXPECT_EQ(j["record"]["note"], "swizzled K tiles");
  EXPECT_EQ(j["source"]["kept"], true);
  EXPECT_EQ(cmd_show(sb.ctx, 7, false), kExitError);
}

TEST_F(Contract, DryRunSimulatesWithItsOwnExitCodesPrefixAndLineage) {
  sb.set_candidate("// attngate-dry-run: speedup=1.07\n__global__ void k() {}\n");
  auto r = attngate(sb, {"gate", "--dry-run", "--note", "wiring"});
  EXPECT_EQ(r.exit_code, kExitDryRunPass) << r.out << r.err;
  for (const std::string* text : {&r.out, &r.err}) {
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) EXPECT_EQ(line.rfind("[dry-run]", 0), 0u) << line;
  }
  EXPECT_NE(r.out.find("SIMULATED PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("geomean 1.070x"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(sb.ctx.lineage));  // the real lineage never holds a dry-run record
  auto c = Lineage(dry_lineage()).read();
  ASSERT_EQ(c.records.size(), 1u);
  EXPECT_TRUE(c.records[0].dry_run);
  EXPECT_EQ(c.records[0].source, "dry_run");
  EXPECT_EQ(c.records[0].note, "wiring");
  EXPECT_TRUE(fs::exists(sb.dir / ".attngate" / "dry-run" / "versions" / "1" / "candidate.cu"));

  // Incorrect: a simulated fail with the correctness question, in JSON.
  sb.set_candidate("// attngate-dry-run: speedup=1.2 incorrect\n");
  r = attngate(sb, {"gate", "--dry-run", "--json"});
  EXPECT_EQ(r.exit_code, kExitDryRunFail) << r.err;
  json j = only_json(r);
  EXPECT_TRUE(schema_problems(j).empty()) << j.dump(1);
  EXPECT_EQ(j["verdict"], "dry_run_fail");
  EXPECT_EQ(j["exit_code"], 11);
  EXPECT_EQ(j["dry_run"], true);
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["reasons"][0]["code"], "CORRECTNESS_FAILED");
  EXPECT_EQ(j["question"]["trigger"], "correctness");
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) EXPECT_EQ(line.rfind("[dry-run]", 0), 0u) << line;

  // Below the target, per-scenario directives; never exit 0.
  sb.set_candidate("// attngate-dry-run: speedup=0.8 speedup[d64]=1.3\n");
  r = attngate(sb, {"gate", "--dry-run", "--json"});
  EXPECT_EQ(r.exit_code, kExitDryRunFail);
  j = only_json(r);
  for (const auto& s : j["scenarios"])
    EXPECT_DOUBLE_EQ(s["speedup"].get<double>(), s["id"].get<std::string>().find("d64") != std::string::npos ? 1.3 : 0.8);
  EXPECT_EQ(j["reasons"][1]["code"], "SCENARIO_BELOW_FLOOR");

  // A --lineage file gets a .dry-run sibling.
  r = attngate(sb, {"--lineage", (sb.dir / "mine.jsonl").string(), "gate", "--dry-run"});
  EXPECT_EQ(r.exit_code, kExitDryRunFail);
  EXPECT_FALSE(fs::exists(sb.dir / "mine.jsonl"));
  EXPECT_EQ(Lineage(sb.dir / "mine.jsonl.dry-run").read().records.size(), 1u);
  r = attngate(sb, {"history", "--dry-run"});
  EXPECT_NE(r.out.find("\"wiring\""), std::string::npos) << r.out;

  sb.set_candidate("// attngate-dry-run: speedup=fast\n");
  r = attngate(sb, {"gate", "--dry-run"});
  EXPECT_EQ(r.exit_code, kExitError);
  EXPECT_NE(r.err.find("[dry-run] attngate gate --dry-run: attngate-dry-run: speedup='fast' is not a positive number"),
            std::string::npos)
      << r.err;
}

// What a red-team review of the contract found: a stand-in build, a note that fakes a verdict line,
// a dry run's report recorded as a measurement, a dry-run lineage linked to the real one.
TEST_F(Contract, RefusesForeignBuildsBadNotesDryRunReportsAndLinkedLineages) {
  test::TempDir other;
  test::write_file(other / "CMakeLists.txt", "cmake_minimum_required(VERSION 3.20)\nproject(x NONE)\nenable_testing()\n");
  auto r = run_process({"cmake", "-S", other.path().string(), "-B", (other / "build").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = attngate(sb, {"gate", "--build-dir", (other / "build").string()});
  EXPECT_EQ(r.exit_code, kExitEnvironment) << r.out << r.err;
  EXPECT_NE(r.err.find("is not a build of " + sb.dir.path().string()), std::string::npos) << r.err;

  r = attngate(sb, {"gate", "--dry-run", "--note", "tried x\nattngate: PASS, version 9"});
  EXPECT_EQ(r.exit_code, kExitError);
  EXPECT_NE(r.err.find("--note must be one line"), std::string::npos) << r.err;
  r = attngate(sb, {"gate", "--dry-run", "--note", std::string("\xff\xfe")});
  EXPECT_EQ(r.exit_code, kExitError);
  EXPECT_NE(r.err.find("not UTF-8"), std::string::npos) << r.err;

  sb.set_candidate("// attngate-dry-run: speedup=1.2\n");
  r = attngate(sb, {"gate", "--dry-run"});
  EXPECT_EQ(r.exit_code, kExitDryRunPass) << r.err;
  const fs::path dry_report = sb.dir / ".attngate" / "dry-run" / "report.json";
  {
    std::ifstream f(fs::path(ATTNGATE_HOOKS_DIR_FOR_TESTS) / "schema" / "gate_report.schema.json");
    const json doc = json::parse(test::slurp(dry_report));
    EXPECT_TRUE(verify::schema_problems(json::parse(f), doc).empty()) << doc.dump(1);  // the same type as the gate's
  }
  r = attngate(sb, {"record", "--report", dry_report.string()});
  EXPECT_EQ(r.exit_code, kExitError);
  EXPECT_NE(r.err.find("is a dry run's report"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(sb.dir / ".attngate" / "lineage.jsonl"));

  test::write_file(sb.dir / ".attngate" / "x", "");
  fs::create_symlink(sb.dir / ".attngate" / "x", sb.dir / ".attngate" / "x.dry-run");
  r = attngate(sb, {"--lineage", (sb.dir / ".attngate" / "x").string(), "gate", "--dry-run"});
  EXPECT_EQ(r.exit_code, kExitError);
  EXPECT_NE(r.err.find("a dry run never writes there"), std::string::npos) << r.err;
  EXPECT_EQ(test::slurp(sb.dir / ".attngate" / "x"), "");
}

TEST_F(Contract, CommitRefusesADryRunRecord) {
  sb.set_candidate("// attngate-dry-run: speedup=1.5\n");
  ASSERT_EQ(attngate(sb, {"gate", "--dry-run"}).exit_code, kExitDryRunPass);
  Context dry = sb.ctx;
  dry.lineage = dry_run_lineage(sb.ctx.lineage);
  const std::string head = sb.head();
  EXPECT_EQ(cmd_commit(dry), kExitFail);
  EXPECT_NE(sb.err.str().find("version 1 is a dry-run record"), std::string::npos) << sb.err.str();
  // Copied into the real lineage, it is still refused for what it is.
  test::write_file(sb.ctx.lineage, test::slurp(dry.lineage));
  sb.clear_streams();
  EXPECT_EQ(cmd_commit(sb.ctx), kExitFail);
  EXPECT_NE(sb.err.str().find("is a dry-run record: attngate gate --dry-run simulated it"), std::string::npos)
      << sb.err.str();
  EXPECT_EQ(sb.head(), head);
}

TEST_F(Contract, ShowAndDiffUseTheVersionsStoreThenGit) {
  GateOptions o = fake.options();
  sb.set_candidate("// v1\nint tile = 64;\n");
  fake.next_report(test::report_json("fail", 0.95, 0.94, 0.96, {{"gate_a"}}, {"GEOMEAN_BELOW_TARGET"}));
  o.note = "tile 64";
  ASSERT_EQ(cmd_gate(sb.ctx, o), kExitFail) << sb.err.str();
  sb.set_candidate("// v2\nint tile = 128;\n");
  test::write_file(sb.dir / "kernels" / "candidate" / "extra.cuh", "// new file\n");
  fake.next_report(test::report_json("pass", 1.10, 1.08, 1.12, {{"gate_a", true, 1.10}}));
  o.note = "tile 128";
  ASSERT_EQ(cmd_gate(sb.ctx, o), kExitPass) << sb.err.str();
  EXPECT_TRUE(fs::exists(version_dir(sb.ctx.lineage, 2) / "extra.cuh"));

  sb.clear_streams();
  ASSERT_EQ(cmd_diff(sb.ctx, 1, 2, false), kExitPass) << sb.err.str();
  std::string out = sb.out.str();
  EXPECT_NE(out.find("verdict fail -> pass; geomean 0.950x -> 1.100x (ratio 1.158)"), std::string::npos) << out;
  EXPECT_NE(out.find("note, version 1: tile 64"), std::string::npos) << out;
  EXPECT_NE(out.find("reasons only in version 1: GEOMEAN_BELOW_TARGET"), std::string::npos) << out;
  EXPECT_NE(out.find("\n-int tile = 64;\n+// v2\n+int tile = 128;\n"), std::string::npos) << out;
  EXPECT_NE(out.find("b/v2/extra.cuh"), std::string::npos) << out;

  sb.clear_streams();
  ASSERT_EQ(cmd_diff(sb.ctx, 1, 2, true), kExitPass);
  json j = json::parse(sb.out.str());
  EXPECT_EQ(j["scenarios"][0]["id"], "gate_a");
  EXPECT_NEAR(j["scenarios"][0]["ratio"].get<double>(), 1.10 / 1.0, 1e-12);
  EXPECT_EQ(j["source"]["available"], true);
  EXPECT_EQ(j["reasons"]["only_a"], json::array({"GEOMEAN_BELOW_TARGET"}));

  // Committed versions diff from git once the store is gone; an uncommitted one cannot.
  ASSERT_EQ(cmd_commit(sb.ctx), kExitPass) << sb.err.str();
  fs::remove_all(versions_root(sb.ctx.lineage) / "2");
  sb.clear_streams();
  ASSERT_EQ(cmd_show(sb.ctx, 2, false), kExitPass);
  EXPECT_NE(sb.out.str().find("source: git commit"), std::string::npos) << sb.out.str();
  EXPECT_NE(sb.out.str().find("restore: rm -r 'kernels/candidate' && git checkout "), std::string::npos) << sb.out.str();
  fs::remove_all(versions_root(sb.ctx.lineage) / "1");
  sb.clear_streams();
  ASSERT_EQ(cmd_diff(sb.ctx, 1, 2, false), kExitPass);
  EXPECT_NE(sb.out.str().find("source diff unavailable: version 1's candidate folder is not in .attngate/versions/1"),
            std::string::npos)
      << sb.out.str();
  EXPECT_EQ(cmd_diff(sb.ctx, 1, 9, false), kExitError);
}

TEST_F(Contract, EscalationReachesTheGatesTextAndJson) {
  test::write_file(sb.dir / "sup.yaml", "stall:\n  evaluations: 1\n");
  auto dry_gate = [&](const std::string& source) {
    sb.set_candidate(source);
    return attngate(sb, {"--supervisor", (sb.dir / "sup.yaml").string(), "gate", "--dry-run", "--json"});
  };
  ASSERT_EQ(dry_gate("// attngate-dry-run: speedup=1.2 speedup[causal]=1.4\n").exit_code, kExitDryRunPass);
  json j = only_json(dry_gate("// attngate-dry-run: speedup=1.1\n// a\n"));  // stall 1: digest
  auto kinds = [](const json& result) {
    std::set<std::string> out;
    for (const auto& s : result["signals"]) out.insert(s["trigger"].get<std::string>() + "/" + s["kind"].get<std::string>());
    return out;
  };
  EXPECT_TRUE(kinds(j).count("stall/digest")) << j["signals"].dump(1);
  EXPECT_FALSE(kinds(j).count("stall/restart"));
  j = only_json(dry_gate("// attngate-dry-run: speedup=1.1\n// b\n"));  // stall 2: restart
  EXPECT_TRUE(kinds(j).count("stall/restart")) << j["signals"].dump(1);
  auto r = dry_gate("// attngate-dry-run: speedup=1.1\n// c\n");  // stall 3: a human
  j = only_json(r);
  EXPECT_TRUE(schema_problems(j).empty()) << j.dump(1);
  EXPECT_TRUE(kinds(j).count("human/escalate")) << j["signals"].dump(1);
  EXPECT_EQ(j["question"]["trigger"], "human");
  EXPECT_NE(r.err.find("[dry-run]   signal stall/restart: 3 stall signals in a row: restart from the best version 1"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("cp -r '.attngate/dry-run/versions/1' 'kernels/candidate'"), std::string::npos) << r.err;

  r = attngate(sb, {"history", "--dry-run", "--elites"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("d128 causal long        1        1.400x"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace attngate::hooks
