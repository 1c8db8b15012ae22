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

}  // namespace attngate::verify
