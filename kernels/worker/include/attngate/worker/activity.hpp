// CUPTI activity records reduced to what the harness needs, and their attribution to timed calls.
// Conversion reads CUPTI's record structs only (no CUPTI call), so it is unit-tested on records
// built by hand.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attngate::worker {

enum class RecordKind { kernel, memcpy, memset };

struct ActivityRecord {
  RecordKind kind = RecordKind::kernel;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;  // CUDA API call that enqueued it
  uint64_t bytes = 0;           // memcpy / memset
  std::string name;             // kernels: the (mangled) function name
};

// What a traced block produced: GPU records, and which CUDA API call (correlation id) ran inside
// which pushed external id (the harness pushes the timed call's id around the launch).
struct ActivityLog {
  std::vector<ActivityRecord> records;
  std::unordered_map<uint32_t, uint64_t> external_of;
  uint64_t ignored_records = 0;  // kinds the harness does not use (driver API records, ...)

  void append(ActivityLog&& other);
};

// Adds one CUPTI record to `log`: kernels (CONCURRENT_KERNEL, KERNEL), memcpy (MEMCPY, MEMCPY2),
// memset, and external-correlation links; other kinds are counted in ignored_records.
void ingest(const CUpti_Activity* record, ActivityLog& log);

// Everything one timed call put on the GPU.
struct CallTrace {
  uint64_t call_id = 0;
  int kernels = 0;
  double kernel_sum_ns = 0;  // sum of kernel durations
  double span_ns = 0;        // first kernel start to last kernel end
  int memcpys = 0;
  int memsets = 0;
  int foreign_stream_kernels = 0;  // kernels on a stream other than the harness stream (all of
                                   // them when the block has no hold kernel to tell it)
  std::vector<uint32_t> streams;   // distinct streams of its kernels, sorted
  std::vector<std::string> kernel_names;  // distinct, sorted
};

// The external correlation id the harness pushes around its own work between calls (the poison,
// fresh contents and L2 flush of an in-process call; the judge's work around a call in a worker):
// records under it are the harness's, never a call's. Without it they fell between two hold
// kernels and counted as the previous call's kernels (an in-process A/A on the H200, 2026-12-02:
// CUPTI kernel time 0.27-0.54 ms above the events). A worker files every record of its one-call
// window as that call's, so a candidate that pushes this id itself hides nothing there.
inline constexpr uint64_t kHarnessExternalId = ~uint64_t(0);

// How the harness recognises its own GPU work inside a traced block. The harness stream is the
// stream its hold kernels ran on (they are launched there by construction), so no CUPTI stream-id
// query is needed.
struct HarnessMarkers {
  std::string hold_kernel;   // the kernel that holds the stream until the call is enqueued
  uint64_t flush_bytes = 0;  // size of the L2 flush memset
  // The call's stream as CUPTI numbers it, where the caller knows it (a worker, whose stream waits
  // for the judge's event rather than a hold kernel); else the hold kernels' stream.
  std::optional<uint32_t> stream_id;
};

struct AttributionStats {
  int by_external_id = 0;  // records attributed through their external correlation id
  int by_marker = 0;       // records attributed by position between hold-kernel markers
  int unattributed = 0;    // records neither way could place (never counted in a call)
  int harness = 0;         // the harness's own hold kernels, flush memsets and records under kHarnessExternalId
};

// Splits a traced block's records into calls. call_ids lists the block's calls in launch order.
// A record belongs to call c when its correlation id links to external id c. Records without a
// link (should the driver not emit links) are placed by position: calls run one at a time, each
// preceded by its hold kernel, so a record that starts after the k-th hold kernel and before the
// (k+1)-th belongs to call k. This fallback is used only when the block holds exactly one hold
// kernel per call.
std::vector<CallTrace> attribute_calls(const ActivityLog& log, const std::vector<uint64_t>& call_ids,
                                       const HarnessMarkers& markers, AttributionStats* stats);

// A readable kernel name: demangled, without its parameter list or template arguments.
std::string short_kernel_name(std::string_view mangled);

}  // namespace attngate::worker
