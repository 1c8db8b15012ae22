#include "command_support.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace cmd;

int cmd_report(const Context& ctx, ReportInputs in, const fs::path& build_dir, bool prepare) {
  in = resolve_inputs(std::move(in), build_dir.empty() ? ctx.repo / "build" / "gpu" : build_dir);
  in.repo = ctx.repo;
  in.candidate = ctx.candidate;
  if (in.scenarios_dir.empty()) in.scenarios_dir = ATTNGATE_HOOKS_SCENARIO_DIR;
  auto& out = *ctx.out;
  auto& err = *ctx.err;
  try {
    if (prepare) {
      prepare_gate(in);
      out << "attngate report --prepare: cleared the previous gate outcomes; marker " << in.started_after.string()
          << "\n";
      return kExitPass;
    }
    GateReportOutput r = build_gate_report(in);
    write_gate_report(r, in.out_dir);
    out << "attngate report: " << (r.pass ? "PASS" : "FAIL");
    const json g = r.report.value("geomean", json::object());
    const json speedup = g.value("speedup", json()), lo = g.value("ci_low", json()), hi = g.value("ci_high", json());
    if (speedup.is_number()) {
      out << ", geomean " << fmt::format("{:.4f}x", speedup.get<double>());
      if (lo.is_number() && hi.is_number())
        out << " CI [" << fmt::format("{:.4f}", lo.get<double>()) << ", " << fmt::format("{:.4f}", hi.get<double>()) << "]";
    }
    out << "; target " << fmt::format("{:.4f}x", r.report["target"]["geomean"].get<double>()) << " vs "
        << r.report["target"]["baseline"].get<std::string>() << "\n";
    for (const auto& reason : r.report["reasons"]) {
      out << "  reason " << reason["code"].get<std::string>();
      auto ids = reason["scenarios"].get<std::vector<std::string>>();
      if (ids.size() > 6) {  // all of them are in the report
        const std::size_t more = ids.size() - 5;
        ids.resize(5);
        ids.push_back("... " + std::to_string(more) + " more");
      }
      if (!ids.empty()) out << " [" << fmt::format("{}", fmt::join(ids, ", ")) << "]";
      out << ": " << reason["detail"].get<std::string>() << "\n";
    }
    out << "  report: " << (in.out_dir / "report.md").string() << "\n"
        << "  json: " << (in.out_dir / "report.json").string() << "\n";
    return r.pass ? kExitPass : kExitFail;
  } catch (const ReportConfigError& e) {
    err << "attngate report: " << e.what() << "\n";
    return kExitError;
  } catch (const std::exception& e) {
    err << "attngate report: " << e.what() << "\n";
    return kExitError;
  }
}

int cmd_plan(const Context& ctx, const fs::path& batches, const fs::path& out, const GateTools& tools) {
  try {
    const verify::GateBatches b = verify::read_gate_batches(batches.string());
    write_file_atomically(out, gate_ctest_script(b, tools));
    return kExitPass;
  } catch (const std::exception& e) {
    *ctx.err << "attngate plan: " << e.what() << "\n";
    return kExitError;
  }
}

}  // namespace attngate::hooks
