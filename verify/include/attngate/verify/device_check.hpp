// Checks that stay on the device: the fp32 ground truth kept in device memory, error statistics
// reduced there (only the summary crosses to the host), and a count of unwritten (NaN) outputs.
// The bench's checks of timed calls use them, so a check costs a pass over the output, not a copy.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "attngate/verify/metrics.hpp"
#include "attngate/verify/problem.hpp"

namespace attngate::verify {

// The fp32 reference O (contiguous BSHD) and LSE of a problem's current inputs, on the device.
struct DeviceTruth {
  DeviceBuffer o, lse;
};
DeviceTruth device_ground_truth(Problem& p, cudaStream_t st);

// ErrorStats of the problem's O and LSE against `t`, as verify::compare computes them on the host,
// except that worst_index is not located (-1). Synchronizes `st`.
struct DeviceErrors {
  ErrorStats o, lse;
};
DeviceErrors device_errors(const Problem& p, const DeviceTruth& t, cudaStream_t st);

// Elements of O and LSE that hold a NaN, e.g. the poison a call did not overwrite. Synchronizes `st`.
int64_t count_nan_outputs(const Problem& p, cudaStream_t st);

// A copy of a problem's O and LSE as one call left them, kept on the device.
struct DeviceSnapshot {
  DeviceBuffer o, lse;
};
DeviceSnapshot make_snapshot(const Problem& p);
// Copies the problem's current outputs into `s` (ordered on `st`, no synchronization).
void take_snapshot(const Problem& p, DeviceSnapshot& s, cudaStream_t st);

// ErrorStats of a snapshot against `t`, as verify::compare computes them on the host; with
// `locate`, the worst element too (index, got, want: one more pass). Synchronizes `st`.
DeviceErrors snapshot_errors(const Problem& p, const DeviceSnapshot& s, const DeviceTruth& t, cudaStream_t st,
                             bool locate = true);

// Elements whose bits differ between a snapshot and the problem's current outputs, and how many of
// the differing O elements hold the NaN poison now. Synchronizes `st`.
struct DeviceDiff {
  int64_t o = 0, lse = 0, o_poison = 0;
};
DeviceDiff diff_from_snapshot(const Problem& p, const DeviceSnapshot& s, cudaStream_t st);
// The same between two snapshots of `p`'s outputs (a against b; poison counted in b).
DeviceDiff diff_snapshots(const Problem& p, const DeviceSnapshot& a, const DeviceSnapshot& b, cudaStream_t st);

// Device memory one verified scenario takes in the judge: `problems` sets of inputs and guarded
// outputs (one per kernel), the fp32 ground truth and two snapshots.
size_t verify_device_bytes(const Scenario& s, int problems);
// Throws, naming `total` (what the scenario needs) and the bytes free, when the `fresh` bytes it
// must allocate (the rest reuses kernel pools) do not fit in the free memory; allocates nothing.
void require_device_memory(const Scenario& s, size_t total, size_t fresh);

}  // namespace attngate::verify
