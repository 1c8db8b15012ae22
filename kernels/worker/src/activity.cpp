#include "attngate/worker/activity.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <set>

namespace attngate::worker {

void ActivityLog::append(ActivityLog&& other) {
  records.insert(records.end(), std::make_move_iterator(other.records.begin()),
                 std::make_move_iterator(other.records.end()));
  external_of.insert(other.external_of.begin(), other.external_of.end());
  ignored_records += other.ignored_records;
}

namespace {
// A copy or memset record: CUPTI's structs for them share these fields.
template <class Record>
void push_transfer(const Record* m, RecordKind kind, ActivityLog& log) {
  log.records.push_back({kind, m->start, m->end, m->streamId, m->correlationId, m->bytes, {}});
}
}  // namespace

void ingest(const CUpti_Activity* record, ActivityLog& log) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      log.records.push_back({RecordKind::kernel, k->start, k->end, k->streamId, k->correlationId, 0,
                             k->name ? std::string(k->name) : std::string("<unnamed>")});
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return push_transfer(reinterpret_cast<const CUpti_ActivityMemcpy6*>(record), RecordKind::memcpy, log);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return push_transfer(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record), RecordKind::memcpy, log);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return push_transfer(reinterpret_cast<const CUpti_ActivityMemset4*>(record), RecordKind::memset, log);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      log.external_of[e->correlationId] = e->externalId;
      return;
    }
    default:
      ++log.ignored_records;
      return;
  }
}

namespace {

bool is_harness(const ActivityRecord& r, const HarnessMarkers& m) {
  if (r.kind == RecordKind::kernel) return r.name == m.hold_kernel;
  return r.kind == RecordKind::memset && r.bytes == m.flush_bytes;
}

struct Accumulator {
  CallTrace trace;
  uint64_t first_start = std::numeric_limits<uint64_t>::max();
  uint64_t last_end = 0;
  std::set<uint32_t> streams;
  std::set<std::string> names;
};

void add(Accumulator& a, const ActivityRecord& r, std::optional<uint32_t> harness_stream) {
  switch (r.kind) {
    case RecordKind::kernel:
      ++a.trace.kernels;
      a.trace.kernel_sum_ns += double(r.end_ns - r.start_ns);
      a.first_start = std::min(a.first_start, r.start_ns);
      a.last_end = std::max(a.last_end, r.end_ns);
      a.streams.insert(r.stream_id);
      a.names.insert(r.name);
      if (r.stream_id != harness_stream) ++a.trace.foreign_stream_kernels;
      return;
    case RecordKind::memcpy: ++a.trace.memcpys; return;
    case RecordKind::memset: ++a.trace.memsets; return;
  }
}

}  // namespace

std::vector<CallTrace> attribute_calls(const ActivityLog& log, const std::vector<uint64_t>& call_ids,
                                       const HarnessMarkers& markers, AttributionStats* stats) {
  AttributionStats local;
  std::vector<Accumulator> acc(call_ids.size());
  std::map<uint64_t, size_t> slot_of;
  for (size_t i = 0; i < call_ids.size(); ++i) {
    acc[i].trace.call_id = call_ids[i];
    slot_of[call_ids[i]] = i;
  }

  std::vector<uint64_t> hold_starts;
  std::optional<uint32_t> harness_stream = markers.stream_id;
  for (const auto& r : log.records) {
    if (!is_harness(r, markers)) continue;
    ++local.harness;
    if (r.kind != RecordKind::kernel) continue;
    hold_starts.push_back(r.start_ns);
    harness_stream = r.stream_id;
  }

  std::vector<const ActivityRecord*> unlinked;
  for (const auto& r : log.records) {
    if (is_harness(r, markers)) continue;
    const auto link = log.external_of.find(r.correlation_id);
    if (link != log.external_of.end() && link->second == kHarnessExternalId) {
      ++local.harness;
      continue;
    }
    const auto slot = link == log.external_of.end() ? slot_of.end() : slot_of.find(link->second);
    if (slot != slot_of.end()) {
      add(acc[slot->second], r, harness_stream);
      ++local.by_external_id;
    } else {
      unlinked.push_back(&r);
    }
  }

  std::sort(hold_starts.begin(), hold_starts.end());
  const bool markers_usable = !call_ids.empty() && hold_starts.size() == call_ids.size();
  for (const ActivityRecord* r : unlinked) {
    const auto after = std::upper_bound(hold_starts.begin(), hold_starts.end(), r->start_ns);
    if (!markers_usable || after == hold_starts.begin()) {
      ++local.unattributed;
      continue;
    }
    add(acc[size_t(after - hold_starts.begin()) - 1], *r, harness_stream);
    ++local.by_marker;
  }

  std::vector<CallTrace> out;
  out.reserve(acc.size());
  for (auto& a : acc) {
    if (a.trace.kernels > 0) a.trace.span_ns = double(a.last_end - a.first_start);
    a.trace.streams.assign(a.streams.begin(), a.streams.end());
    a.trace.kernel_names.assign(a.names.begin(), a.names.end());
    out.push_back(std::move(a.trace));
  }
  if (stats) {
    stats->by_external_id += local.by_external_id;
    stats->by_marker += local.by_marker;
    stats->unattributed += local.unattributed;
    stats->harness += local.harness;
  }
  return out;
}

std::string short_kernel_name(std::string_view mangled) {
  std::string name(mangled);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  if (status == 0 && demangled) name = demangled.get();
  // Cut at the first '(' or '<' outside the leading "void " return type.
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);
  const size_t cut = name.find_first_of("(<");
  if (cut != std::string::npos && cut > 0) name.erase(cut);
  return name;
}

}  // namespace attngate::worker
