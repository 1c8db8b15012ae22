#include "attngate/bench/report.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace attngate::bench {

namespace {

double median_or_zero(const std::vector<double>& v) { return v.empty() ? 0.0 : median(v); }
double min_or_zero(const std::vector<double>& v) { return v.empty() ? 0.0 : min_of(v); }

template <typename F>
std::vector<double> per_call(const std::vector<CallTrace>& traces, F f) {
  std::vector<double> out;
  out.reserve(traces.size());
  for (const auto& t : traces) out.push_back(double(f(t)));
  return out;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// Median over traced calls of (traced value - median of the kernel's untraced calls in the block
// just before that call). Pairing each traced call with its neighbours cancels drift: under the
// H200's power cap the SM clock wanders by several percent within one benchmark, which would
// swamp a few-µs overhead if the medians of the whole series were subtracted.
double local_difference(const std::vector<double>& traced, const std::vector<size_t>& after,
                        const std::vector<double>& untraced, int window) {
  if (traced.empty() || untraced.empty()) return 0.0;
  if (after.size() != traced.size()) return median(traced) - median(untraced);
  const size_t w = size_t(window > 0 ? window : 10);
  std::vector<double> d;
  for (size_t i = 0; i < traced.size(); ++i) {
    const size_t end = std::min(after[i], untraced.size());
    if (end == 0) continue;
    const size_t begin = end > w ? end - w : 0;
    d.push_back(traced[i] - median(std::vector<double>(untraced.begin() + long(begin), untraced.begin() + long(end))));
  }
  return d.empty() ? 0.0 : median(d);
}

}  // namespace

Fields kernel_fields(const KernelSeries& k, const Measurement& m, const ReportContext& ctx) {
  if (k.event_ms.empty()) throw std::invalid_argument("kernel_fields: series of " + k.kernel + " has no samples");
  const double event = median(k.event_ms);
  const double wall = median(k.wall_ms);
  const double traced_event = median_or_zero(k.traced_event_ms);
  const double traced_wall = median_or_zero(k.traced_wall_ms);
  const std::vector<double> kernel_ms = per_call(k.traces, [](const CallTrace& t) { return t.kernel_sum_ns * 1e-6; });
  const double kernel = median_or_zero(kernel_ms);
  const double span = median_or_zero(per_call(k.traces, [](const CallTrace& t) { return t.span_ns * 1e-6; }));
  const double kernels = median_or_zero(per_call(k.traces, [](const CallTrace& t) { return t.kernels; }));

  int count_changes = 0, foreign = 0;
  double memcpys = 0, memsets = 0;
  std::set<std::string> names;
  std::set<uint32_t> streams;
  for (const auto& t : k.traces) {
    count_changes += t.kernels != k.traces.front().kernels;
    foreign += t.foreign_stream_kernels;
    memcpys += t.memcpys;
    memsets += t.memsets;
    names.insert(t.kernel_names.begin(), t.kernel_names.end());
    streams.insert(t.streams.begin(), t.streams.end());
  }
  const double n_traced = double(k.traces.size());
  // CUPTI's kernel time against the event time of the very same traced call.
  std::vector<double> cupti_vs_own_event;
  for (size_t i = 0; i < k.traces.size() && i < k.traced_event_ms.size(); ++i)
    cupti_vs_own_event.push_back(kernel_ms[i] - k.traced_event_ms[i]);

  const ClockSummary& c = m.clock;
  const double hz = c.median_mhz * 1e6;
  const double tf = tflops(ctx.flops, event * 1e-3);

  Fields f = {
      {"event_ms", event},
      // The judge's clock (bench/README.md): its events around a worker's call, the round trip
      // subtracted and its spread per call, the worker's own events beside it, the judge's work
      // before its clock starts, and the longest the judge's hold kernel was kept off the GPU.
      {"judge_ms", median_or_zero(k.judge_ms)},
      {"worker_event_ms", median_or_zero(k.worker_event_ms)},
      {"pre_ms", median_or_zero(k.pre_ms)},
      {"hold_gap_max_us", k.hold_gap_max_us},
      {"handoff_us", 1e3 * m.handoff_ms},
      {"reference_handoff_us", 1e3 * m.reference_handoff_ms},
      {"solo_handoff_us", 1e3 * m.solo_handoff_ms},
      {"lowest_handoff_us", 1e3 * m.lowest_handoff_ms},
      {"round_trip_correction_us", 1e3 * k.round_trip_correction_ms},
      {"judge_resolution_us", 1e3 * m.judge_resolution_ms},
      {"judge_resolution_pct", event > 0 ? 100.0 * m.judge_resolution_ms / event : 0.0},
      {"min_ms", min_of(k.event_ms)},
      {"cv", bench::cv(k.event_ms)},
      {"rel_noise", relative_noise(k.event_ms)},
      {"samples", double(k.event_ms.size())},
      {"wall_ms", wall},
      {"wall_over_event", ratio(wall, event)},
      {"kernel_ms", kernel},
      {"span_ms", span},
      {"kernels_per_call", kernels},
      {"kernel_names", double(names.size())},
      {"streams", double(streams.size())},
      {"event_over_kernel", ratio(event, kernel)},
      {"wall_over_kernel", ratio(wall, kernel)},
      {"foreign_stream_kernels", double(foreign)},
      {"kernel_count_changes", double(count_changes)},
      {"memcpy_per_call", n_traced > 0 ? memcpys / n_traced : 0.0},
      {"memset_per_call", n_traced > 0 ? memsets / n_traced : 0.0},
      {"traced_samples", n_traced},
      {"traced_event_ms", traced_event},
      {"traced_wall_ms", traced_wall},
      {"tracing_overhead_us", 1e3 * local_difference(k.traced_event_ms, k.traced_after, k.event_ms, m.untraced_block)},
      {"host_tracing_overhead_us", 1e3 * local_difference(k.traced_wall_ms, k.traced_after, k.wall_ms, m.untraced_block)},
      {"cupti_minus_event_us", 1e3 * local_difference(kernel_ms, k.traced_after, k.event_ms, m.untraced_block)},
      {"cupti_minus_traced_event_us", 1e3 * median_or_zero(cupti_vs_own_event)},
      {"tflops", tf},
      {"pct_peak", ctx.peak_tflops > 0 ? 100.0 * tf / ctx.peak_tflops : 0.0},
      {"cycles", event * 1e-3 * hz},
      {"kernel_cycles", kernel * 1e-3 * hz},
      {"sm_clock_mhz", c.median_mhz},
      {"sm_clock_before_mhz", c.before_mhz},
      {"sm_clock_after_mhz", c.after_mhz},
      {"sm_clock_min_mhz", c.min_mhz},
      {"sm_clock_max_mhz", c.device_max_mhz},
      {"clock_dropped", c.available && c.before_mhz > 0 && c.after_mhz / c.before_mhz < 0.97 ? 1.0 : 0.0},
      {"clock_below_max", c.available && c.min_mhz < c.device_max_mhz ? 1.0 : 0.0},
      {"clock_event_reasons", double(c.event_reasons)},
      {"nvml", c.available ? 1.0 : 0.0},
      {"held_timeouts", double(k.held_timeouts)},
      {"unattributed_records", double(m.attribution.unattributed)},
      {"marker_attributed_records", double(m.attribution.by_marker)},
      {"dropped_records", double(m.dropped_records)},
      {"input_sets", double(m.input_sets)},
      {"stop_reason", double(int(m.stop))},
      {"noise_target_met", m.stop == StopReason::noise_target ? 1.0 : 0.0},
      {"loop_s", m.loop_s},
      {"setup_s", m.setup_s},
      // Isolation (kernels/worker): the kernel ran in its own process; the judge's checks of timed calls.
      {"isolated", k.isolated ? 1.0 : 0.0},
      {"fresh_calls", double(k.fresh_event_ms.size())},
      // The fastest of the few fresh-input calls: a kernel that works more on new contents is slow
      // on every one of them, while one host hiccup (seen on the H200: +2.5 ms on one of two wall
      // times of an honest kernel) would move a median of two.
      {"fresh_event_ms", min_or_zero(k.fresh_event_ms)},
      {"fresh_wall_ms", min_or_zero(k.fresh_wall_ms)},
      {"checked_calls", double(k.checked_calls)},
      {"inventory_kernels", double(k.inventory.size())},
      {"foreign_kernels", double(k.foreign_kernels.size())},
  };
  return f;
}

const std::vector<std::string>& kernel_field_names() {
  static const std::vector<std::string> names = [] {
    KernelSeries k;
    k.event_ms = {1.0};
    k.wall_ms = {1.0};
    std::vector<std::string> out;
    for (const auto& [name, value] : kernel_fields(k, Measurement{}, ReportContext{})) out.push_back(name);
    return out;
  }();
  return names;
}

Fields comparison_fields(const KernelSeries& kernel, const KernelSeries& base, const ReportContext& ctx,
                         int resamples, uint64_t seed) {
  const double base_event = median(base.event_ms);
  const SuiteSpeedup s = bootstrap_speedup({{kernel.event_ms, base.event_ms}}, resamples, seed);
  return {
      {"base_event_ms", base_event},
      {"base_min_ms", min_of(base.event_ms)},
      {"base_cv", cv(base.event_ms)},
      {"base_rel_noise", relative_noise(base.event_ms)},
      {"base_tflops", tflops(ctx.flops, base_event * 1e-3)},
      {"base_held_timeouts", double(base.held_timeouts)},
      {"speedup", s.scenarios[0].speedup},
      {"speedup_lo", s.scenarios[0].ci95.lo},
      {"speedup_hi", s.scenarios[0].ci95.hi},
  };
}

const std::vector<std::string>& comparison_field_names() {
  static const std::vector<std::string> names = [] {
    KernelSeries k;
    k.event_ms = {1.0};
    std::vector<std::string> out;
    for (const auto& [name, value] : comparison_fields(k, k, ReportContext{}, 1, 0)) out.push_back(name);
    return out;
  }();
  return names;
}

std::string kernel_label(const KernelSeries& k) {
  std::set<std::string> names;
  for (const auto& t : k.traces)
    for (const auto& n : t.kernel_names) names.insert(short_kernel_name(n));
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace attngate::bench
