#pragma once
// Helpers shared by the agent_hooks tests: temporary folders, git repositories, synthetic reports
// and lineage records.
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/hooks/commands.hpp"
#include "attngate/hooks/lineage.hpp"
#include "attngate/gate/process.hpp"

namespace attngate::hooks::test {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  fs::path path_;
};

void write_file(const fs::path& file, const std::string& text);
std::string slurp(const fs::path& file);

// Runs git in dir with a fixed identity and no user configuration; fails the test on error.
RunResult git(const fs::path& dir, std::vector<std::string> args, bool must_succeed = true);

// A repository layout like attngate's: <root>/kernels/candidate/candidate.cu, optionally a git repo.
struct Sandbox {
  TempDir dir;
  std::ostringstream out, err;
  Context ctx;
  explicit Sandbox(bool with_git);
  fs::path candidate() const { return ctx.candidate; }
  void set_candidate(const std::string& source) const;
  void commit_all(const std::string& message) const;
  std::string head() const;
  void clear_streams();
};

struct ScenarioSpec {
  ScenarioSpec(std::string id_, bool correct_ = true, double speedup_ = 1.0,
               std::optional<double> percent_of_peak_ = {}, std::optional<double> tflops_ = {})
      : id(std::move(id_)), correct(correct_), speedup(speedup_), percent_of_peak(percent_of_peak_), tflops(tflops_) {}
  std::string id;
  bool correct;
  double speedup;
  std::optional<double> percent_of_peak;
  std::optional<double> tflops;
  std::optional<int> kernel_count;
  std::vector<std::string> flags;
};

// A stand-in for the GPU gate: a CMake project (in its own folder, outside the repository) configured
// into <sandbox>/build/gpu, whose `gate` tests write the start marker (as the real gate.setup does)
// and copy the prepared report into <build>/gate/report.json, failing unless it says pass (no
// prepared report: no report, as after a crash). Switches, each a file in the project folder:
// edit_candidate (copied over the candidate during ctest: an edit made while the gate runs), hold
// (the test touches `entered` and waits for `release`), fail_build (the build fails),
// edit_candidate_N (copied over the candidate during the Nth ctest run since next_report).
struct FakeGate {
  TempDir project;
  fs::path build;
  explicit FakeGate(const Sandbox& sb);
  // The report of every ctest run from now on; also restarts the count of ctest runs.
  void next_report(const nlohmann::json& report) const;
  // The report of the second ctest run since next_report (a gate's re-run), instead of next_report's.
  void then_report(const nlohmann::json& report) const;
  int ctest_runs() const;  // ctest runs of the gate since next_report
  void no_report() const;
  void set(const std::string& name, const std::string& text = "") const { write_file(project / name, text); }
  void unset(const std::string& name) const { fs::remove(project / name); }
  GateOptions options() const;  // --build-dir build --quiet
};

nlohmann::json report_json(const std::string& verdict, double geomean, double ci_low, double ci_high,
                           std::vector<ScenarioSpec> scenarios = {{"gate_a"}, {"gate_b"}},
                           std::vector<std::string> reason_codes = {});
fs::path write_report(const fs::path& file, const nlohmann::json& report);

// A scored evaluation record for synthetic lineages.
Record scored(int version, double geomean, long long minutes = 0, const std::string& sha = "");

}  // namespace attngate::hooks::test
