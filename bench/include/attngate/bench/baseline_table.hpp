// The candidate kernel against every baseline, per scenario and as a geometric mean: the join of
// attngate_bench's Google Benchmark JSON (--benchmark_out) with attngate_baselines.py's
// attngate.baseline_results/1. `attngate_stats table` prints it; bench/python/attngate_compare.py
// renders it (terminal table, markdown, PNG). Its shape: bench/schema/baseline_join.schema.json.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attngate::bench {

// A result file and what it holds. Ordered JSON: an entry copies fields of its file (a baseline's
// `check`) and the table keeps the key order the Python report always wrote, so its JSON output
// reads the same as before the join moved here.
struct NamedDocument {
  std::string path;  // as given: becomes each entry's `source`
  nlohmann::ordered_json doc;
};

// {"candidate", "metric", "baselines": [names in display order], "rows": [{"scenario",
// "candidate": entry|null, "cells": {name: {"entry", "speedup", "ci", "interleaved"}}}],
// "geomean": {name: {"geomean", "n", "n_shown"}}, "agreement": [{"scenario", "ratio", "within"}]}.
// Speedup = baseline time / candidate time on `metric` (event_ms or kernel_ms), or the interleaved
// one where attngate_bench ran --compare=candidate,X. The geomean counts only trustworthy cells
// (interleaved, or a baseline whose status is ok); n_shown counts every cell with a speedup. With
// bench documents, only the scenarios they timed get rows.
// Throws std::runtime_error naming the file for a document it cannot read (a baselines file whose
// schema is not attngate.baseline_results/1), when there is nothing to compare, and when the
// candidate has no result.
nlohmann::ordered_json make_baseline_table(const std::vector<NamedDocument>& bench_docs,
                                           const std::vector<NamedDocument>& baseline_docs,
                                           const std::string& candidate, const std::string& metric);

}  // namespace attngate::bench
