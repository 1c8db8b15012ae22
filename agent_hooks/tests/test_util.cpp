#include "test_util.hpp"

#include <stdlib.h>

#include <cstdio>
#include <ctime>
#include <fstream>

#include <gtest/gtest.h>

#include "attngate/hooks/report.hpp"

namespace attngate::hooks::test {

namespace {

// git must behave the same on every machine: a fixed identity, no user or system configuration.
const bool kGitEnvironment = [] {
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
            {"provenance", {{"gpu", "NVIDIA H200"}, {"attngate_commit", "abc123"}}},
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
