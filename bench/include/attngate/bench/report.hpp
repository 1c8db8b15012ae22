// Turns a Measurement into the named figures the benchmark JSON carries (Google Benchmark
// counters), and the list of those names, which the smoke test checks the JSON against.
// bench/README.md documents every field.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attngate/bench/harness.hpp"

namespace attngate::bench {

using Fields = std::vector<std::pair<std::string, double>>;

struct ReportContext {
  double flops = 0;       // Scenario::flops()
  double peak_tflops = 0;  // dense bf16 peak of the device, 0 when unknown
};

// Fields of one kernel's series. Every name of kernel_field_names() appears, in that order;
// figures that need traced calls are 0 when there were none.
Fields kernel_fields(const KernelSeries& k, const Measurement& m, const ReportContext& ctx);
const std::vector<std::string>& kernel_field_names();

// Extra fields of an interleaved comparison: the base kernel's main figures (prefixed "base_")
// and the speedup time_base / time_kernel with its bootstrap interval.
Fields comparison_fields(const KernelSeries& kernel, const KernelSeries& base, const ReportContext& ctx,
                         int resamples, uint64_t seed);
const std::vector<std::string>& comparison_field_names();

// Short names of the distinct kernels a series' traced calls launched, joined by ", ".
std::string kernel_label(const KernelSeries& k);

}  // namespace attngate::bench
