#include "attngate/gate/inputs.hpp"

#include <algorithm>
#include <ctime>
#include <stdexcept>

#include <fmt/format.h>

#include "attngate/verify/result_document.hpp"
#include "attngate/verify/schema_check.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The comparison document (performance.json) against its schema, read from the repository (a
// harness file: the gate checks it is unmodified). A missing schema is a problem too.
constexpr const char* kComparisonSchemaFile = "bench/schema/comparison.schema.json";
std::vector<std::string> comparison_problems(const fs::path& repo, const json& doc) {
  std::string err;
  const std::optional<json> schema = read_json(repo / kComparisonSchemaFile, &err);
  if (!schema) return {"cannot read the schema: " + err};
  return verify::schema_problems(*schema, doc);
}

// The typed document of a file that passed the schema check; nothing, with the reason in *error,
// where a field has another type than the reader's (the schema leaves some open).
std::optional<bench::ComparisonDocument> parse_comparison(const json& doc, std::string* error) {
  try {
    return bench::parse_comparison_document(doc);
  } catch (const json::exception& e) {
    *error = std::string("not a readable attngate.comparison/1 document: ") + e.what();
    return std::nullopt;
  }
}

}  // namespace

fs::path result_file(const ReportInputs& in, const std::string& kernel, const std::string& id) {
  return in.results_dir / verify::result_file_name(kernel, id);
}

StartRecords::StartRecords(const ReportInputs& in, const Freshness& freshness) : dir_(in.start_records_dir) {
  notes_ = freshness.stale_note;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& file = it->path();
    if (file.extension() != ".json" || !freshness.fresh(file)) continue;
    std::string err;
    const std::optional<json> doc = read_json(file, &err);
    try {
      if (!doc) throw std::runtime_error(err);
      verify::StartRecord r = verify::parse_start_record(*doc);
      // A record renamed into place would stand for another test.
      if (r.test != file.stem().string()) throw std::runtime_error("it is the record of " + r.test);
      records_.push_back(std::move(r));
    } catch (const std::exception& e) {
      notes_ += "; the start record " + file.string() + " is unreadable: " + e.what();
    }
  }
}

const verify::StartRecord* StartRecords::owing(const std::string& file) const {
  for (const auto& r : records_)
    if (std::find(r.writes.begin(), r.writes.end(), file) != r.writes.end()) return &r;
  return nullptr;
}

std::optional<int64_t> StartRecords::started_ms(const std::string& test) const {
  for (const auto& r : records_)
    if (r.test == test) return r.started_unix_ms;
  return std::nullopt;
}

std::pair<std::string, std::string> StartRecords::missing(const std::string& file, const std::string& what,
                                                          double timeout_s, std::optional<int64_t> ended_by_ms) const {
  const verify::StartRecord* r = owing(file);
  if (!r) {
    std::string failures;  // tests that stopped before they could say what they owe
    for (const auto& f : records_)
      if (f.failed) failures += "; " + f.test + " failed as it started: " + f.failed->substr(0, 300);
    if (!failures.empty()) return {"TEST_CRASHED", what + ": not written" + failures + notes_};
    return {"TEST_CRASHED", what + ": the test that writes it did not run in this gate run (no start record in " +
                                dir_.string() + " owes it)" + notes_};
  }
  const std::string started = r->test + " started at " + iso8601_utc(std::time_t(r->started_unix_ms / 1000));
  if (r->skipped) return {"TEST_CRASHED", what + ": " + started + " and skipped: " + r->skipped->substr(0, 300)};
  // The test ended before any test that waited for it started, and before this report.
  const double ran_at_most_s = double(ended_by_ms.value_or(verify::unix_ms_now()) - r->started_unix_ms) / 1e3;
  if (timeout_s > 0 && ran_at_most_s >= 0.99 * timeout_s)
    return {"TEST_TIMEOUT", what + ": " + started + " and ran up to " + fmt::format("{:.0f}", ran_at_most_s) +
                                " s without writing it; its timeout is " + fmt::format("{:.0f}", timeout_s) + " s"};
  return {"TEST_CRASHED", what + ": " + started + " (pid " + std::to_string(r->pid) + "), ended without writing its result"};
}

// The comparison of kernel against baseline (bench/include/attngate/bench/comparison_document.hpp),
// fresh from this run and schema-valid, or nothing with the reason why.
std::optional<bench::ComparisonDocument> load_comparison(const ReportInputs& in, const std::string& kernel,
                                                         const std::string& baseline, const Freshness& freshness,
                                                         const StartRecords& started, Reasons& reasons) {
  std::string perr;
  std::optional<json> perf_json;
  std::optional<bench::ComparisonDocument> perf;
  if (!fs::exists(in.perf)) {
    auto [code, detail] = started.missing(in.perf.filename().string(), "no " + in.perf.string(), in.perf_timeout_s);
    reasons.add(code == "TEST_TIMEOUT" ? code : "NO_PERF", "", detail);
  } else if (!freshness.fresh(in.perf)) {
    reasons.add("NO_PERF", "", in.perf.string() + " is older than this gate run: gate.performance did not run" + freshness.stale_note);
  } else if (!(perf_json = read_json(in.perf, &perr))) {
    reasons.add("NO_PERF", "", perr);
  } else if (auto problems = comparison_problems(in.repo, *perf_json); !problems.empty()) {
    reasons.add("NO_PERF", "", in.perf.string() + " is not an attngate.comparison/1 document (" + kComparisonSchemaFile +
                                   "): " + fmt::format("{}", fmt::join(std::vector<std::string>(problems.begin(),
                                                                         problems.begin() + std::min<size_t>(problems.size(), 3)), "; ")));
  } else if (!(perf = parse_comparison(*perf_json, &perr))) {
    reasons.add("NO_PERF", "", in.perf.string() + ": " + perr);
  } else if (perf->kernel != kernel || perf->base != baseline) {
    reasons.add("NO_PERF", "", in.perf.string() + " compares " + perf->kernel + " against " + perf->base +
                                   "; the gate needs " + kernel + " against " + baseline);
    perf.reset();
  }
  return perf;
}

}  // namespace attngate::hooks
