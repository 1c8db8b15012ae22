#include "test_util.hpp"

#include <stdlib.h>

#include <cstdio>
#include <ctime>
#include <fstream>

#include <gtest/gtest.h>

#include "attngate/gate/report.hpp"

namespace attngate::hooks::test {

namespace {

// Receipt keys go to a folder of this test process, never to the user's ~/.local/state.
const TempDir kStateHome;

// git must behave the same on every machine: a fixed identity, no user or system configuration.
const bool kGitEnvironment = [] {
  ::setenv("ATTNGATE_STATE_HOME", kStateHome.path().c_str(), 1);
  ::setenv("GIT_AUTHOR_NAME", "attngate test", 1);
  ::setenv("GIT_AUTHOR_EMAIL", "test@attngate.invalid", 1);
  ::setenv("GIT_COMMITTER_NAME", "attngate test", 1);
  ::setenv("GIT_COMMITTER_EMAIL", "test@attngate.invalid", 1);
  ::setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
  ::setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
  return true;
}();

}  // namespace

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "attngate_hooks_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void write_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunResult git(const fs::path& dir, std::vector<std::string> args, bool must_succeed) {
  (void)kGitEnvironment;
  args.insert(args.begin(), {"git", "-C", dir.string()});
  auto r = run_process(args);
  if (must_succeed) {
    EXPECT_EQ(r.exit_code, 0) << args[3] << ": " << r.err;
  }
  return r;
}

Sandbox::Sandbox(bool with_git) {
  ctx.repo = dir.path();
  ctx.lineage = dir.path() / ".attngate" / "lineage.jsonl";
  ctx.candidate = dir.path() / "kernels" / "candidate" / "candidate.cu";
  ctx.hooks_dir = ATTNGATE_HOOKS_DIR_FOR_TESTS;
  ctx.out = &out;
  ctx.err = &err;
  set_candidate("// candidate v0\n__global__ void k() {}\n");
  if (with_git) {
    git(dir.path(), {"init", "-q"});
    write_file(dir / ".gitignore", "/.attngate/\n/build/\n");
    commit_all("initial");
  }
}

void Sandbox::set_candidate(const std::string& source) const { write_file(ctx.candidate, source); }

void Sandbox::commit_all(const std::string& message) const {
  git(dir.path(), {"add", "-A"});
  git(dir.path(), {"commit", "-q", "-m", message});
}

std::string Sandbox::head() const {
  auto r = git(dir.path(), {"rev-parse", "HEAD"});
  return r.out.substr(0, r.out.find('\n'));
}

void Sandbox::clear_streams() {
  out.str("");
  err.str("");
}

FakeGate::FakeGate(const Sandbox& sb) : build(sb.dir / "build" / "gpu") {
  const std::string p = project.path().string();
  write_file(project / "CMakeLists.txt",
             "cmake_minimum_required(VERSION 3.20)\n"
             "project(fake_gate NONE)\n"
             "enable_testing()\n"
             "add_custom_target(fake_build ALL COMMAND ${CMAKE_COMMAND} -DFAKE=" + p + " -P " + p + "/build.cmake)\n"
             "add_test(NAME gate.setup COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/gate/started)\n"
             "add_test(NAME gate.fake COMMAND ${CMAKE_COMMAND} -DOUT=${CMAKE_BINARY_DIR}/gate/report.json\n"
             "         -DFAKE=" + p + " -DCANDIDATE=" + sb.candidate().string() + " -P " + p + "/gate.cmake)\n"
             "set_tests_properties(gate.setup PROPERTIES LABELS gate)\n"
             "set_tests_properties(gate.fake PROPERTIES LABELS gate DEPENDS gate.setup)\n");
  write_file(project / "build.cmake",
             "if(EXISTS ${FAKE}/fail_build)\n  message(FATAL_ERROR \"build failed\")\nendif()\n");
  // The test passes iff the prepared report says pass, as the real gate does.
  // Each ctest run counts itself in `runs`; run N takes report_N.json and edit_candidate_N when present.
  write_file(project / "gate.cmake",
             "set(run 0)\n"
             "if(EXISTS ${FAKE}/runs)\n"
             "  file(READ ${FAKE}/runs run)\n"
             "endif()\n"
             "math(EXPR run \"${run} + 1\")\n"
             "file(WRITE ${FAKE}/runs \"${run}\")\n"
             "if(EXISTS ${FAKE}/edit_candidate_${run})\n"
             "  file(READ ${FAKE}/edit_candidate_${run} e)\n"
             "  file(WRITE ${CANDIDATE} \"${e}\")\n"
             "endif()\n"
             "set(report ${FAKE}/next_report.json)\n"
             "if(EXISTS ${FAKE}/report_${run}.json)\n"
             "  set(report ${FAKE}/report_${run}.json)\n"
             "endif()\n"
             "if(EXISTS ${FAKE}/edit_candidate)\n"
             "  file(READ ${FAKE}/edit_candidate e)\n"
             "  file(WRITE ${CANDIDATE} \"${e}\")\n"
             "endif()\n"
             "if(EXISTS ${FAKE}/hold)\n"
             "  file(TOUCH ${FAKE}/entered)\n"
             "  foreach(i RANGE 1200)\n"
             "    if(EXISTS ${FAKE}/release)\n"
             "      break()\n"
             "    endif()\n"
             "    execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 0.05)\n"
             "  endforeach()\n"
             "endif()\n"
             "if(EXISTS ${report})\n"
             "  file(READ ${report} r)\n"
             "  file(WRITE ${OUT} \"${r}\")\n"
             "  if(NOT r MATCHES \"\\\"verdict\\\": \\\"pass\\\"\")\n"
             "    message(FATAL_ERROR \"gate failed\")\n"
             "  endif()\n"
             "else()\n"
             "  message(FATAL_ERROR \"no device\")\n"
             "endif()\n");
  // attngate gate runs only a build of the repository it judges (CMAKE_HOME_DIRECTORY): the sandbox's
  // root includes the fake project, and git ignores that file.
  write_file(sb.dir / "CMakeLists.txt", "cmake_minimum_required(VERSION 3.20)\nproject(fake_root NONE)\n"
                                        "enable_testing()\nadd_subdirectory(" + p + " fake)\n");
  {
    std::ofstream exclude(sb.dir / ".git" / "info" / "exclude", std::ios::app);
    exclude << "/CMakeLists.txt\n";
  }
  auto r = run_process({"cmake", "-S", sb.dir.path().string(), "-B", build.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

void FakeGate::next_report(const nlohmann::json& report) const {
  write_report(project / "next_report.json", report);
  fs::remove(project / "runs");
  fs::remove(project / "report_2.json");
}

void FakeGate::then_report(const nlohmann::json& report) const { write_report(project / "report_2.json", report); }

int FakeGate::ctest_runs() const {
  auto text = slurp(project / "runs");
  return text.empty() ? 0 : std::stoi(text);
}

void FakeGate::no_report() const { fs::remove(project / "next_report.json"); }

GateOptions FakeGate::options() const {
  GateOptions o;
  o.build_dir = build;
  o.quiet = true;
  return o;
}

nlohmann::json report_json(const std::string& verdict, double geomean, double ci_low, double ci_high,
                           std::vector<ScenarioSpec> scenarios, std::vector<std::string> reason_codes) {
  using nlohmann::json;
  json j = {{"schema", kReportSchema},
            {"verdict", verdict},
            {"reasons", json::array()},
            {"target", {{"geomean", 1.0}, {"scenario_floor", 0.9}, {"baseline", "initial"}}},
            {"geomean",
             {{"speedup", geomean}, {"ci_low", ci_low}, {"ci_high", ci_high}, {"kernel_speedup", geomean},
              {"wall_speedup", geomean}}},
            {"scenarios", json::array()},
            {"provenance", {{"gpu", "NVIDIA H200"}}},
            {"wall_s", 48.2}};
  for (const auto& code : reason_codes) j["reasons"].push_back({{"code", code}, {"scenarios", {"gate_a"}}, {"detail", "synthetic"}});
  for (const auto& s : scenarios) {
    json sj = {{"id", s.id},        {"correct", s.correct}, {"o_max_abs", 0.0039}, {"lse_max_abs", 1e-6},
               {"speedup", s.speedup}, {"ci_low", s.speedup * 0.99}, {"ci_high", s.speedup * 1.01},
               {"candidate", {{"event_ms", 1.1}, {"kernel_ms", 1.09}, {"wall_ms", 1.2}, {"kernel_count", s.kernel_count.value_or(1)}, {"streams", 1}}},
               {"baseline", {{"event_ms", 1.12}, {"kernel_ms", 1.11}, {"wall_ms", 1.22}, {"kernel_count", 1}, {"streams", 1}}},
               {"flags", s.flags}};
    if (s.percent_of_peak) sj["percent_of_peak"] = *s.percent_of_peak;
    if (s.tflops) sj["tflops"] = *s.tflops;
    j["scenarios"].push_back(sj);
  }
  return j;
}

fs::path write_report(const fs::path& file, const nlohmann::json& report) {
  write_file(file, report.dump(1));
  return file;
}

Record scored(int version, double geomean, long long minutes, const std::string& sha) {
  Record r;
  r.version = version;
  std::time_t t = 1'700'000'000 + minutes * 60;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  r.time = buf;
  r.candidate_sha256 = sha.empty() ? "sha" + std::to_string(version) : sha;
  r.verdict = geomean >= 1.0 ? "pass" : "fail";
  if (geomean < 1.0) r.reasons.push_back({"GEOMEAN_BELOW_TARGET", {}, ""});
  r.geomean.speedup = geomean;
  r.geomean.ci_low = geomean * 0.99;
  r.geomean.ci_high = geomean * 1.01;
  r.geomean.kernel_speedup = geomean;
  r.geomean.wall_speedup = geomean;
  ScenarioResult s;
  s.id = "gate_a";
  s.correct = true;
  s.speedup = geomean;
  s.candidate.kernel_count = 1;
  r.scenarios.push_back(s);
  return r;
}

}  // namespace attngate::hooks::test
