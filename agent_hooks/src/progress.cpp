// `attngate gate --quiet`'s progress lines (progress.hpp).
#include "attngate/hooks/progress.hpp"

#include <fstream>

#include <fmt/format.h>

#include "attngate/gate/gate_report.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;

namespace {

bool fresh(const fs::path& f, fs::file_time_type since) {
  std::error_code ec;
  const auto t = fs::last_write_time(f, ec);
  return !ec && t >= since;
}

std::string seconds(double s) { return fmt::format("({:.0f} s)", s); }

}  // namespace

ProgressSnapshot read_progress(const GateProgressPaths& p, fs::file_time_type since) {
  ProgressSnapshot s;
  std::error_code ec;
  const std::string prefix = "verify." + p.kernel + ".";
  for (fs::directory_iterator it(p.results_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) == 0 && it->path().extension() == ".json" && fresh(it->path(), since)) ++s.verified;
  }
  if (fresh(p.timing_progress, since)) {
    try {
      std::ifstream f(p.timing_progress);
      s.timing = nlohmann::json::parse(f).get<bench::TimingProgress>();
    } catch (const std::exception&) {  // half-written or foreign: no line from it this time
    }
  }
  s.report = fresh(p.report, since);
  return s;
}

std::optional<std::string> progress_line(const ProgressSnapshot& last, const ProgressSnapshot& now,
                                         const GateProgressPaths& p, double elapsed_s, double since_line_s,
                                         double every_s) {
  const std::string at = " " + seconds(elapsed_s);
  if (now.report && !last.report) return "attngate: report" + at;
  if (now.timing) {
    const auto& t = *now.timing;
    const bool began = !last.timing, ended = t.done == t.total && (!last.timing || last.timing->done != t.done);
    if (began || ended || (t.done != last.timing->done && since_line_s >= every_s))
      return "attngate: timing " + std::to_string(t.done) + "/" + std::to_string(t.total) +
             (t.scenario.empty() ? "" : " " + t.scenario) + at;
    return std::nullopt;
  }
  if (now.verified == last.verified) return std::nullopt;
  const bool began = last.verified == 0, ended = now.verified >= p.verify_total;
  if (began || ended || since_line_s >= every_s)
    return "attngate: verification " + std::to_string(now.verified) + "/" + std::to_string(p.verify_total) + at;
  return std::nullopt;
}

GateProgressPaths gate_progress_paths(const fs::path& scenario_dir, const fs::path& build) {
  GateProgressPaths p;
  p.results_dir = build / "verify" / "results";
  p.timing_progress = build / "gate" / "performance.json.progress";
  p.report = build / "gate" / "report.json";
  const GateCheckPlan plan = gate_check_plan(scenario_dir);  // as the report judges it
  p.kernel = plan.kernel;
  p.verify_total = plan.scenarios;
  return p;
}

ProgressReporter::ProgressReporter(GateProgressPaths paths, fs::file_time_type since,
                                   std::chrono::steady_clock::time_point started, std::ostream& err)
    : paths_(std::move(paths)), since_(since), started_(started), err_(err), thread_([this] { loop(); }) {}

ProgressReporter::~ProgressReporter() {
  stop_ = true;
  thread_.join();
}

void ProgressReporter::loop() {
  using clock = std::chrono::steady_clock;
  ProgressSnapshot last;
  auto last_line = clock::now();
  auto step = [&](double every_s) {
    const ProgressSnapshot now = read_progress(paths_, since_);
    const double elapsed = std::chrono::duration<double>(clock::now() - started_).count();
    const double since_line = std::chrono::duration<double>(clock::now() - last_line).count();
    if (auto line = progress_line(last, now, paths_, elapsed, since_line, every_s)) {
      err_ << *line << std::endl;
      last_line = clock::now();
    }
    last = now;
  };
  for (auto next = clock::now() + std::chrono::seconds(1); !stop_;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (clock::now() < next) continue;
    step(5.0);
    next = clock::now() + std::chrono::seconds(1);
  }
  step(0.0);  // what the run ended with (a short run may have ended before the first poll)
}

}  // namespace attngate::hooks
