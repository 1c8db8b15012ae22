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
    const GateReport& rep = r.typed;
    out << "attngate report: " << (r.pass ? "PASS" : "FAIL");
    if (const Geomean& g = rep.geomean; g.speedup) {
      out << ", geomean " << fmt::format("{:.4f}x", *g.speedup);
      if (g.ci_low && g.ci_high) out << " CI [" << fmt::format("{:.4f}", *g.ci_low) << ", " << fmt::format("{:.4f}", *g.ci_high) << "]";
    }
    out << "; target " << fmt::format("{:.4f}x", rep.target.geomean.value_or(0)) << " vs " << rep.target.baseline << "\n";
    for (const Reason& reason : rep.reasons) {
      out << "  reason " << reason.code;
      auto ids = reason.scenarios;
      if (ids.size() > 6) {  // all of them are in the report
        const std::size_t more = ids.size() - 5;
        ids.resize(5);
        ids.push_back("... " + std::to_string(more) + " more");
      }
      if (!ids.empty()) out << " [" << fmt::format("{}", fmt::join(ids, ", ")) << "]";
      out << ": " << reason.detail << "\n";
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
