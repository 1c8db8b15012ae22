// The candidate against every baseline (baseline_table.hpp): reads attngate_bench's Google
// Benchmark JSON and attngate_baselines.py's results, joins them per scenario, and takes the
// geometric means. Entries keep the fields and key order bench/python/attngate_compare.py has
// always shown and written; that script now only renders this table.
#include "attngate/bench/baseline_table.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "attngate/bench/stats.hpp"

namespace attngate::bench {
namespace {

using Json = nlohmann::ordered_json;
using Key = std::pair<std::string, std::string>;  // (kernel, scenario)

constexpr const char* kBaselineResults = "attngate.baseline_results/1";
// The order baselines are shown in; anything else follows alphabetically.
const std::vector<std::string> kPreferred = {"initial", "cudnn", "torch_cudnn", "torch_flash", "fa3", "fa4"};
// The in-process cuDNN kernel and PyTorch's cuDNN backend agree when within 3% of each other.
constexpr double kAgreementLimit = 0.03;

// A map iterated in first-insertion order; replacing a value keeps its place. Rows and the
// agreement list follow the order results appear in their files.
template <class K, class V>
class InsertionOrdered {
 public:
  V& operator[](const K& key) {
    const auto [it, fresh] = index_.try_emplace(key, items_.size());
    if (fresh) items_.emplace_back(key, V{});
    return items_[it->second].second;
  }
  const V* find(const K& key) const {
    const auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  bool contains(const K& key) const { return index_.count(key) != 0; }
  bool empty() const { return items_.empty(); }
  const std::vector<std::pair<K, V>>& items() const { return items_; }

 private:
  std::map<K, size_t> index_;
  std::vector<std::pair<K, V>> items_;
};

using Entries = InsertionOrdered<Key, Json>;
using Runs = InsertionOrdered<Key, std::vector<Json>>;  // every repetition of a kernel on a scenario

// An interleaved comparison's speedup and 95% interval, as attngate_bench wrote them.
struct Interleaved {
  Json speedup, lo, hi;
};
using PairKey = std::tuple<std::string, std::string, std::string>;  // (kernel, base, scenario)
using Pairs = std::map<PairKey, Interleaved>;

struct BenchFile {
  Entries entries;
  Pairs pairs;
};

// Everything the table is made of: entries, interleaved speedups, scenarios in file order.
struct Collected {
  Entries entries;
  Pairs pairs;
  std::vector<std::string> scenarios;
};

// The value as written (any type), or `fallback` when the key is absent.
Json get_or(const Json& object, const char* key, Json fallback) {
  const auto it = object.find(key);
  return it == object.end() ? fallback : *it;
}

double as_number(const Json& v) { return v.get<double>(); }

// Whether a value counts as present: documents written by Python tools treat 0, "" and null alike.
bool truthy(const Json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();
  return !v.empty();
}

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = s.find(sep, start)) != std::string::npos; start = at + sep.size())
    parts.push_back(s.substr(start, at - start));
  parts.push_back(s.substr(start));
  return parts;
}

void append_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

Json make_entry(const std::string& kernel, const std::string& scenario, const std::string& source,
                const Json& status = "ok", const Json& reason = "", double event_ms = 0, double kernel_ms = 0,
                double tflops = 0) {
  return Json{{"kernel", kernel},   {"scenario", scenario},   {"source", source}, {"status", status},
              {"reason", reason},   {"event_ms", event_ms},   {"kernel_ms", kernel_ms}, {"tflops", tflops}};
}

// ------------------------------------------------------------------------------------------------
// attngate_bench's Google Benchmark JSON
// ------------------------------------------------------------------------------------------------

// A kernel that declines the scenario ("unsupported: ...") is a skip; anything else an error.
std::string error_status(const std::string& message) {
  std::string lower = message;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  const bool declined = lower.rfind("unsupported", 0) == 0 || message.find("cudaErrorNotSupported") != std::string::npos;
  return declined ? "unsupported" : "error";
}

// A failed benchmark: every kernel it names (both of K_vs_B) gets the failure.
void add_failed(const Json& b, const std::string& name, const std::string& scenario, const std::string& path,
                Runs& runs) {
  const std::string message = get_or(b, "error_message", "").get<std::string>();
  for (const auto& kernel : split(name, "_vs_"))
    runs[{kernel, scenario}].push_back(make_entry(kernel, scenario, path, error_status(message), message));
}

Json timed_entry(const Json& b, const std::string& kernel, const std::string& scenario, const std::string& path) {
  Json e = make_entry(kernel, scenario, path, "ok", "", as_number(b.at("event_ms")),
                      as_number(get_or(b, "kernel_ms", 0.0)), as_number(get_or(b, "tflops", 0.0)));
  e["sm_clock_mhz"] = get_or(b, "sm_clock_mhz", 0.0);
  e["cv"] = get_or(b, "cv", 0.0);
  e["samples"] = get_or(b, "samples", 0);
  e["label"] = get_or(b, "label", "");
  return e;
}

// --compare=K,B: one benchmark carries both kernels' times and their interleaved speedup.
void add_compared(const Json& b, const std::string& name, const std::string& scenario, const std::string& path,
                  Runs& runs, Pairs& pairs) {
  const size_t sep = name.find("_vs_");
  const std::string kernel = name.substr(0, sep), base = name.substr(sep + 4);
  runs[{kernel, scenario}].push_back(timed_entry(b, kernel, scenario, path));
  Json e = make_entry(base, scenario, path, "ok", "", as_number(b.at("base_event_ms")), 0.0,
                      as_number(get_or(b, "base_tflops", 0.0)));
  e["sm_clock_mhz"] = get_or(b, "sm_clock_mhz", 0.0);
  e["cv"] = get_or(b, "base_cv", 0.0);
  runs[{base, scenario}].push_back(std::move(e));
  pairs[{kernel, base, scenario}] = {b.at("speedup"), get_or(b, "speedup_lo", 0.0), get_or(b, "speedup_hi", 0.0)};
}

// The median of a field over repetitions. An odd count gives the middle value itself, so an
// integer stays an integer (what the Python report wrote).
Json median_field(const std::vector<Json>& runs, const char* field) {
  std::vector<double> values;
  for (const auto& r : runs) values.push_back(as_number(get_or(r, field, 0.0)));
  const double m = median(values);
  if (values.size() % 2 == 1)
    for (const auto& r : runs)
      if (Json v = get_or(r, field, 0.0); as_number(v) == m) return v;
  return m;
}

// Repetitions (--benchmark_repetitions) of one kernel on one scenario: the first that ran with
// the medians of its times, and how many ran; the first failure when none ran.
Json summarize(const std::vector<Json>& runs) {
  std::vector<Json> ok;
  std::copy_if(runs.begin(), runs.end(), std::back_inserter(ok), [](const Json& e) { return e.at("status") == "ok"; });
  if (ok.empty()) return runs.front();
  Json e = ok.front();
  for (const char* field : {"event_ms", "kernel_ms", "tflops", "sm_clock_mhz"}) e[field] = median_field(ok, field);
  e["repetitions"] = ok.size();
  return e;
}

BenchFile read_bench(const NamedDocument& file) {
  Runs runs;
  BenchFile out;
  for (const auto& b : get_or(file.doc, "benchmarks", Json::array())) {
    // Aggregates of --benchmark_repetitions are skipped: the repetitions themselves are taken.
    if (get_or(b, "run_type", "iteration") != "iteration") continue;
    const auto parts = split(b.at("name").get<std::string>(), "/");
    if (parts.size() < 2) continue;
    const std::string &name = parts[0], &scenario = parts[1];
    if (truthy(get_or(b, "error_occurred", false)))
      add_failed(b, name, scenario, file.path, runs);
    else if (name.find("_vs_") != std::string::npos)
      add_compared(b, name, scenario, file.path, runs, out.pairs);
    else
      runs[{name, scenario}].push_back(timed_entry(b, name, scenario, file.path));
  }
  for (const auto& [key, repetitions] : runs.items()) out.entries[key] = summarize(repetitions);
  return out;
}

// ------------------------------------------------------------------------------------------------
// attngate_baselines.py's attngate.baseline_results/1
// ------------------------------------------------------------------------------------------------

Entries read_baselines(const NamedDocument& file) {
  const Json schema = file.doc.is_object() ? get_or(file.doc, "schema", nullptr) : Json(nullptr);
  if (schema != kBaselineResults)
    throw std::runtime_error(file.path + ": not an " + kBaselineResults + " document (schema: " + schema.dump() + ")");
  Entries out;
  for (const auto& r : file.doc.at("results")) {
    const std::string baseline = r.at("baseline"), scenario = r.at("scenario");
    Json e = make_entry(baseline, scenario, file.path, r.at("status"), get_or(r, "reason", ""),
                        as_number(get_or(r, "event_ms", 0.0)), as_number(get_or(r, "kernel_ms", 0.0)),
                        as_number(get_or(r, "tflops", 0.0)));
    e["main_kernel"] = get_or(r, "main_kernel", "");
    e["check"] = get_or(r, "check", nullptr);
    e["cv"] = get_or(r, "cv", 0.0);
    e["samples"] = get_or(r, "samples", 0);  // with cv: the plot's interval
    out[{baseline, scenario}] = std::move(e);
  }
  return out;
}

// Runs `read` on a file; a field of the wrong type or missing is reported with the file's name.
template <class Read>
auto within(const NamedDocument& file, Read read) {
  try {
    return read(file);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.path + ": unexpected content: " + e.what());
  }
}

Collected collect(const std::vector<NamedDocument>& bench_docs, const std::vector<NamedDocument>& baseline_docs) {
  Collected c;
  for (const auto& file : bench_docs) {
    BenchFile b = within(file, read_bench);
    for (const auto& [key, e] : b.entries.items()) {
      c.entries[key] = e;  // a later file replaces an earlier one's result
      append_unique(c.scenarios, key.second);
    }
    for (const auto& [key, p] : b.pairs) c.pairs[key] = p;
  }
  // With bench files the table is of the scenarios attngate timed: a baselines file that covers
  // several suites adds no rows without a candidate.
  const std::set<std::string> timed(c.scenarios.begin(), c.scenarios.end());
  for (const auto& file : baseline_docs) {
    const Entries baselines = within(file, read_baselines);
    for (const auto& [key, e] : baselines.items()) {
      if (!timed.empty() && !timed.count(key.second)) continue;
      if (!c.entries.contains(key)) c.entries[key] = e;  // attngate_bench's own result wins
      append_unique(c.scenarios, key.second);
    }
  }
  return c;
}

// ------------------------------------------------------------------------------------------------
// The join
// ------------------------------------------------------------------------------------------------

std::vector<std::string> order_baselines(const Entries& entries, const std::string& candidate) {
  std::set<std::string> names;
  for (const auto& item : entries.items())
    if (item.first.first != candidate) names.insert(item.first.first);
  std::vector<std::string> ordered;
  for (const auto& name : kPreferred)
    if (names.erase(name)) ordered.push_back(name);
  ordered.insert(ordered.end(), names.begin(), names.end());
  return ordered;
}

// The candidate ran; the baseline produced a time, even a wrong or fallback one (shown, marked,
// and kept out of the geomean).
bool comparable(const Json* candidate, const Json* base, const std::string& metric) {
  if (!candidate || !base) return false;
  const Json& status = base->at("status");
  const bool timed = status == "ok" || status == "wrong" || status == "fallback";
  return candidate->at("status") == "ok" && timed && as_number(candidate->at(metric)) > 0 &&
         as_number(base->at(metric)) > 0;
}

Json make_cell(const Json* candidate, const Json* base, const Interleaved* pair, const std::string& metric) {
  Json cell = {{"entry", base ? *base : Json(nullptr)}, {"speedup", nullptr}, {"ci", nullptr}, {"interleaved", false}};
  if (pair) {
    cell["speedup"] = pair->speedup;
    cell["ci"] = Json::array({pair->lo, pair->hi});
    cell["interleaved"] = true;
  } else if (comparable(candidate, base, metric)) {
    cell["speedup"] = as_number(base->at(metric)) / as_number(candidate->at(metric));
  }
  return cell;
}

// One row per scenario where the candidate or any baseline has an entry.
Json make_rows(const Collected& c, const std::vector<std::string>& baselines, const std::string& candidate,
               const std::string& metric) {
  Json rows = Json::array();
  for (const auto& scenario : c.scenarios) {
    const Json* mine = c.entries.find({candidate, scenario});
    bool any = mine != nullptr;
    Json cells = Json::object();
    for (const auto& b : baselines) {
      const Json* base = c.entries.find({b, scenario});
      const auto pair = c.pairs.find({candidate, b, scenario});
      cells[b] = make_cell(mine, base, pair == c.pairs.end() ? nullptr : &pair->second, metric);
      any = any || base;
    }
    if (any) rows.push_back(Json{{"scenario", scenario}, {"candidate", mine ? *mine : Json(nullptr)}, {"cells", cells}});
  }
  return rows;
}

// Only trustworthy speedups are averaged: interleaved ones, or against a baseline whose status is
// ok. A wrong or fallback baseline is shown, not averaged.
bool trusted(const Json& cell) { return cell.at("interleaved").get<bool>() || cell.at("entry").at("status") == "ok"; }

Json geomean_of(const Json& rows, const std::string& baseline) {
  int shown = 0, n = 0;
  std::vector<double> positive;
  for (const auto& row : rows) {
    const Json& cell = row.at("cells").at(baseline);
    if (!truthy(cell.at("speedup"))) continue;
    ++shown;
    if (!trusted(cell)) continue;
    ++n;
    if (const double x = as_number(cell.at("speedup")); x > 0) positive.push_back(x);
  }
  // No speedup to average (a baseline not installed): 0, which the report shows as "-".
  return Json{{"geomean", positive.empty() ? 0.0 : geomean(positive)}, {"n", n}, {"n_shown", shown}};
}

// The in-process cuDNN kernel against PyTorch's cuDNN backend, per scenario (time ratio): the
// check that both harnesses time alike, meaningful when both load the same cuDNN.
Json make_agreement(const Entries& entries) {
  Json out = Json::array();
  for (const auto& [key, e] : entries.items()) {
    if (key.first != "cudnn" || e.at("status") != "ok") continue;
    const Json* other = entries.find({"torch_cudnn", key.second});
    if (!other || other->at("status") != "ok") continue;
    const double mine = as_number(e.at("event_ms")), theirs = as_number(other->at("event_ms"));
    if (!(theirs > 0 && mine > 0)) continue;
    const double ratio = mine / theirs;
    out.push_back(Json{{"scenario", key.second}, {"ratio", ratio}, {"within", std::abs(ratio - 1) <= kAgreementLimit}});
  }
  return out;
}

void require_candidate(const Entries& entries, const std::string& candidate) {
  std::set<std::string> kernels;
  for (const auto& item : entries.items()) kernels.insert(item.first.first);
  if (kernels.count(candidate)) return;
  std::string have;
  for (const auto& k : kernels) have += (have.empty() ? "" : ", ") + k;
  throw std::runtime_error("no results of the candidate '" + candidate + "' (have: " + have + ")");
}

}  // namespace

nlohmann::ordered_json make_baseline_table(const std::vector<NamedDocument>& bench_docs,
                                           const std::vector<NamedDocument>& baseline_docs,
                                           const std::string& candidate, const std::string& metric) {
  if (metric != "event_ms" && metric != "kernel_ms")
    throw std::runtime_error("unknown metric '" + metric + "' (event_ms or kernel_ms)");
  const Collected c = collect(bench_docs, baseline_docs);
  if (c.entries.empty()) throw std::runtime_error("nothing to compare (give --bench and/or --baselines)");
  require_candidate(c.entries, candidate);
  const std::vector<std::string> baselines = order_baselines(c.entries, candidate);
  Json table = {{"candidate", candidate}, {"metric", metric}, {"baselines", baselines}};
  table["rows"] = make_rows(c, baselines, candidate, metric);
  Json geomeans = Json::object();
  for (const auto& b : baselines) geomeans[b] = geomean_of(table["rows"], b);
  table["geomean"] = std::move(geomeans);
  table["agreement"] = make_agreement(c.entries);
  return table;
}

}  // namespace attngate::bench
