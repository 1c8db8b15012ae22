#include "attngate/bench/compare.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace attngate::bench {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// JSON has no NaN or infinity; a figure that cannot be computed is written as null.
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::string json_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out;
}

SuiteSpeedup suite_speedup(const ComparisonReport& r) {
  std::vector<PairedSamples> s;
  for (const auto& row : r.rows) s.push_back(row.samples);
  return bootstrap_speedup(s, r.resamples, r.seed);
}

std::string format_table(const ComparisonReport& r, const SuiteSpeedup& s) {
  std::ostringstream o;
  o << "\nInterleaved comparison: " << r.kernel << " against base " << r.base << " on suite " << r.suite << " ("
    << r.device << ")\nspeedup = median time of base / median time of kernel (> 1: " << r.kernel
    << " is faster); intervals: 95% bootstrap\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-40s %10s %10s %8s %8s %9s %19s %8s %8s %6s\n", "scenario", "kernel_ms",
                "base_ms", "k_TFLOPS", "b_TFLOPS", "speedup", "95% CI", "k_cv", "b_cv", "calls");
  o << line;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    const double km = median(row.samples.kernel), bm = median(row.samples.base);
    std::snprintf(line, sizeof line, "%-40s %10.4f %10.4f %8.1f %8.1f %9.4f   [%7.4f, %7.4f] %7.2f%% %7.2f%% %6zu\n",
                  row.scenario.c_str(), km, bm, tflops(row.flops, km * 1e-3), tflops(row.flops, bm * 1e-3),
                  s.scenarios[i].speedup, s.scenarios[i].ci95.lo, s.scenarios[i].ci95.hi,
                  100 * cv(row.samples.kernel), 100 * cv(row.samples.base), row.samples.kernel.size());
    o << line;
  }
  for (const auto& [id, err] : r.failed) o << id << ": FAILED: " << err << "\n";
  o << "geomean speedup over " << r.rows.size() << " scenarios: " << fmt("%.4f", s.geomean) << "  95% CI ["
    << fmt("%.4f", s.ci95.lo) << ", " << fmt("%.4f", s.ci95.hi) << "]  (" << s.resamples
    << " resamples, seed " << s.seed << ")\nwall time of the run: " << fmt("%.1f", r.wall_s) << " s\n";
  return o.str();
}

std::string to_json(const ComparisonReport& r, const SuiteSpeedup& s) {
  std::ostringstream o;
  o << "{\n  \"kernel\": \"" << json_escape(r.kernel) << "\",\n  \"base\": \"" << json_escape(r.base)
    << "\",\n  \"suite\": \"" << json_escape(r.suite) << "\",\n  \"device\": \"" << json_escape(r.device)
    << "\",\n  \"speedup_definition\": \"median untraced event time of base / of kernel; > 1 means kernel is faster\","
    << "\n  \"peak_tflops\": " << num(r.peak_tflops) << ",\n  \"noise_target\": " << num(r.noise_target)
    << ",\n  \"geomean_speedup\": " << num(s.geomean) << ",\n  \"geomean_ci95\": [" << num(s.ci95.lo) << ", "
    << num(s.ci95.hi) << "],\n  \"bootstrap_resamples\": " << s.resamples << ",\n  \"bootstrap_seed\": " << s.seed
    << ",\n  \"wall_s\": " << num(r.wall_s) << ",\n  \"scenarios\": [";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    const double km = median(row.samples.kernel), bm = median(row.samples.base);
    o << (i ? "," : "") << "\n    {\"id\": \"" << json_escape(row.scenario) << "\", \"shape\": \""
      << json_escape(row.summary) << "\", \"flops\": " << num(row.flops) << ", \"kernel_ms\": " << num(km)
      << ", \"base_ms\": " << num(bm) << ", \"kernel_min_ms\": " << num(min_of(row.samples.kernel))
      << ", \"base_min_ms\": " << num(min_of(row.samples.base))
      << ", \"kernel_tflops\": " << num(tflops(row.flops, km * 1e-3))
      << ", \"base_tflops\": " << num(tflops(row.flops, bm * 1e-3)) << ", \"speedup\": " << num(s.scenarios[i].speedup)
      << ", \"speedup_ci95\": [" << num(s.scenarios[i].ci95.lo) << ", " << num(s.scenarios[i].ci95.hi)
      << "], \"kernel_cv\": " << num(cv(row.samples.kernel)) << ", \"base_cv\": " << num(cv(row.samples.base))
      << ", \"kernel_rel_noise\": " << num(relative_noise(row.samples.kernel))
      << ", \"base_rel_noise\": " << num(relative_noise(row.samples.base))
      << ", \"calls\": " << row.samples.kernel.size() << ", \"stop\": \"" << json_escape(row.stop)
      << "\", \"loop_s\": " << num(row.loop_s) << ", \"tracing_overhead_us\": " << num(row.tracing_overhead_us)
      << ", \"cupti_minus_event_us\": " << num(row.cupti_minus_event_us) << "}";
  }
  o << "\n  ],\n  \"failed\": [";
  for (size_t i = 0; i < r.failed.size(); ++i)
    o << (i ? ", " : "") << "{\"id\": \"" << json_escape(r.failed[i].first) << "\", \"error\": \""
      << json_escape(r.failed[i].second) << "\"}";
  o << "]\n}\n";
  return o.str();
}

}  // namespace attngate::bench
