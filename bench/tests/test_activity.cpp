// CUPTI record handling on synthetic records: the structs CUDA 13's cupti_activity.h defines,
// filled by hand, fed through ingest() and attribute_calls().
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "attngate/bench/trace.hpp"
#include "attngate/bench/stream_hold.hpp"

namespace attngate::bench {
namespace {

constexpr uint32_t kHarnessStream = 7;
constexpr uint32_t kOtherStream = 9;
constexpr uint64_t kFlushBytes = 120u << 20;

const HarnessMarkers kMarkers{kHoldKernelName, kFlushBytes};

void kernel(ActivityLog& log, const char* name, uint64_t start, uint64_t end, uint32_t stream, uint32_t corr) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.streamId = stream;
  k.correlationId = corr;
  k.name = name;
  ingest(reinterpret_cast<const CUpti_Activity*>(&k), log);
}

void memcpy_record(ActivityLog& log, uint64_t start, uint64_t end, uint32_t stream, uint32_t corr) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.start = start;
  m.end = end;
  m.streamId = stream;
  m.correlationId = corr;
  m.bytes = 4096;
  ingest(reinterpret_cast<const CUpti_Activity*>(&m), log);
}

void memset_record(ActivityLog& log, uint64_t bytes, uint64_t start, uint64_t end, uint32_t stream, uint32_t corr) {
  CUpti_ActivityMemset4 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.start = start;
  m.end = end;
  m.streamId = stream;
  m.correlationId = corr;
  m.bytes = bytes;
  ingest(reinterpret_cast<const CUpti_Activity*>(&m), log);
}

void link(ActivityLog& log, uint32_t corr, uint64_t external) {
  CUpti_ActivityExternalCorrelation e;
  std::memset(&e, 0, sizeof e);
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = external;
  e.correlationId = corr;
  ingest(reinterpret_cast<const CUpti_Activity*>(&e), log);
}

TEST(Activity, IngestKeepsTheFieldsItNeeds) {
  ActivityLog log;
  kernel(log, "fwd", 100, 350, kHarnessStream, 11);
  memcpy_record(log, 400, 450, kHarnessStream, 12);
  memset_record(log, 64, 500, 510, kHarnessStream, 13);
  link(log, 11, 1001);
  CUpti_Activity driver{};
  driver.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  ingest(&driver, log);

  ASSERT_EQ(log.records.size(), 3u);
  EXPECT_EQ(log.records[0].kind, RecordKind::kernel);
  EXPECT_EQ(log.records[0].name, "fwd");
  EXPECT_EQ(log.records[0].start_ns, 100u);
  EXPECT_EQ(log.records[0].end_ns, 350u);
  EXPECT_EQ(log.records[0].stream_id, kHarnessStream);
  EXPECT_EQ(log.records[0].correlation_id, 11u);
  EXPECT_EQ(log.records[1].kind, RecordKind::memcpy);
  EXPECT_EQ(log.records[1].bytes, 4096u);
  EXPECT_EQ(log.records[2].kind, RecordKind::memset);
  EXPECT_EQ(log.records[2].bytes, 64u);
  EXPECT_EQ(log.external_of.at(11), 1001u);
  EXPECT_EQ(log.ignored_records, 1u);
}

// Two calls (external ids 1001, 1002), each preceded by the harness's flush memset and hold kernel.
// Call 1001 launches two kernels on the harness stream; call 1002 launches one there, one on
// another stream, and a memset inside the call.
ActivityLog two_calls(bool with_links) {
  ActivityLog log;
  memset_record(log, kFlushBytes, 0, 40, kHarnessStream, 1);
  kernel(log, kHoldKernelName, 50, 80, kHarnessStream, 2);
  kernel(log, "_ZN8attngate3fwdILi128EEEvv", 100, 300, kHarnessStream, 3);
  kernel(log, "combine", 310, 330, kHarnessStream, 4);

  memset_record(log, kFlushBytes, 400, 440, kHarnessStream, 5);
  kernel(log, kHoldKernelName, 450, 480, kHarnessStream, 6);
  memset_record(log, 256, 490, 495, kHarnessStream, 7);
  kernel(log, "_ZN8attngate3fwdILi128EEEvv", 500, 700, kHarnessStream, 8);
  kernel(log, "side", 520, 560, kOtherStream, 9);
  if (with_links) {
    link(log, 3, 1001);
    link(log, 4, 1001);
    link(log, 7, 1002);
    link(log, 8, 1002);
    link(log, 9, 1002);
  }
  return log;
}

void expect_two_calls(const std::vector<CallTrace>& calls) {
  ASSERT_EQ(calls.size(), 2u);
  const CallTrace& a = calls[0];
  EXPECT_EQ(a.call_id, 1001u);
  EXPECT_EQ(a.kernels, 2);
  EXPECT_DOUBLE_EQ(a.kernel_sum_ns, 200 + 20);
  EXPECT_DOUBLE_EQ(a.span_ns, 330 - 100);
  EXPECT_EQ(a.memsets, 0);  // the flush memset is the harness's, outside the call
  EXPECT_EQ(a.memcpys, 0);
  EXPECT_EQ(a.foreign_stream_kernels, 0);
  EXPECT_EQ(a.streams, std::vector<uint32_t>{kHarnessStream});
  EXPECT_EQ(a.kernel_names, (std::vector<std::string>{"_ZN8attngate3fwdILi128EEEvv", "combine"}));

  const CallTrace& b = calls[1];
  EXPECT_EQ(b.call_id, 1002u);
  EXPECT_EQ(b.kernels, 2);
  EXPECT_DOUBLE_EQ(b.kernel_sum_ns, 200 + 40);
  EXPECT_DOUBLE_EQ(b.span_ns, 700 - 500);
  EXPECT_EQ(b.memsets, 1);
  EXPECT_EQ(b.foreign_stream_kernels, 1);
  EXPECT_EQ(b.streams, (std::vector<uint32_t>{kHarnessStream, kOtherStream}));
}

TEST(Activity, AttributesByExternalCorrelation) {
  AttributionStats stats;
  expect_two_calls(attribute_calls(two_calls(true), {1001, 1002}, kMarkers, &stats));
  EXPECT_EQ(stats.by_external_id, 5);
  EXPECT_EQ(stats.by_marker, 0);
  EXPECT_EQ(stats.unattributed, 0);
  EXPECT_EQ(stats.harness, 4);
}

TEST(Activity, FallsBackToHoldKernelMarkers) {
  AttributionStats stats;
  expect_two_calls(attribute_calls(two_calls(false), {1001, 1002}, kMarkers, &stats));
  EXPECT_EQ(stats.by_external_id, 0);
  EXPECT_EQ(stats.by_marker, 5);
  EXPECT_EQ(stats.unattributed, 0);
}

// The harness's own kernels between two calls (fresh contents, poison) under kHarnessExternalId are
// its own, never the previous call's (an in-process A/A on the H200 counted them: 2026-12-02).
TEST(Activity, HarnessWorkBetweenCallsIsNeverACalls) {
  ActivityLog log = two_calls(true);
  kernel(log, "fill_inputs", 340, 390, kHarnessStream, 20);  // after call 1's kernels, before call 2's hold
  memset_record(log, 4096, 392, 398, kHarnessStream, 21);    // the poison of call 2's outputs
  link(log, 20, kHarnessExternalId);
  link(log, 21, kHarnessExternalId);
  AttributionStats stats;
  expect_two_calls(attribute_calls(log, {1001, 1002}, kMarkers, &stats));
  EXPECT_EQ(stats.harness, 6);
  EXPECT_EQ(stats.unattributed, 0);
  // Untagged, the same records fall to call 1 by position: what the tag prevents.
  ActivityLog untagged = two_calls(true);
  kernel(untagged, "fill_inputs", 340, 390, kHarnessStream, 20);
  EXPECT_EQ(attribute_calls(untagged, {1001, 1002}, kMarkers, nullptr)[0].kernels, 3);
}

TEST(Activity, RecordsOrderDoesNotMatter) {
  ActivityLog log = two_calls(true);
  std::reverse(log.records.begin(), log.records.end());
  expect_two_calls(attribute_calls(log, {1001, 1002}, kMarkers, nullptr));
}

TEST(Activity, UnplaceableRecordsAreCountedNotGuessed) {
  ActivityLog log = two_calls(false);
  // One hold marker lost: positions no longer identify calls, so nothing is attributed.
  log.records.erase(log.records.begin() + 5);
  AttributionStats stats;
  const auto calls = attribute_calls(log, {1001, 1002}, kMarkers, &stats);
  EXPECT_EQ(stats.unattributed, 5);
  EXPECT_EQ(calls[0].kernels + calls[1].kernels, 0);

  // A linked record of an unknown call (not in this block) is unattributed too.
  ActivityLog other;
  kernel(other, "stray", 10, 20, kHarnessStream, 77);
  link(other, 77, 999);
  AttributionStats s2;
  attribute_calls(other, {1001}, kMarkers, &s2);
  EXPECT_EQ(s2.unattributed, 1);
}

TEST(Activity, KernelCountChangesAreVisiblePerCall) {
  // The same kernel launched twice in one call and once in the next.
  ActivityLog log;
  kernel(log, "k", 0, 10, kHarnessStream, 1);
  kernel(log, "k", 20, 30, kHarnessStream, 2);
  kernel(log, "k", 100, 110, kHarnessStream, 3);
  link(log, 1, 1);
  link(log, 2, 1);
  link(log, 3, 2);
  const auto calls = attribute_calls(log, {1, 2}, kMarkers, nullptr);
  EXPECT_EQ(calls[0].kernels, 2);
  EXPECT_EQ(calls[1].kernels, 1);
  EXPECT_DOUBLE_EQ(calls[0].span_ns, 30);
  EXPECT_DOUBLE_EQ(calls[0].kernel_sum_ns, 20);
}

TEST(Activity, ShortKernelNames) {
  EXPECT_EQ(short_kernel_name("_ZN8attngate3fwdILi128EEEvv"), "attngate::fwd");
  EXPECT_EQ(short_kernel_name("_Z6kernelPfi"), "kernel");
  EXPECT_EQ(short_kernel_name("attngate_bench_hold"), "attngate_bench_hold");
}

}  // namespace
}  // namespace attngate::bench
