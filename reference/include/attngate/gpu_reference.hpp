// The device reference: fp32 SIMT arithmetic (no tensor cores, no TF32, precise expf/logf and
// IEEE division), fast enough to serve as the oracle for long-sequence scenarios.
#pragma once

#include <cuda_runtime_api.h>

#include "attngate/params.hpp"

namespace attngate {

// Reads Q, K, V in p.dtype through p's strides and computes attention in fp32 with params.hpp's
// semantics. Writes O as a contiguous fp32 [batch, seqlen_q, heads_q, head_dim] array to o_fp32
// (p.o is not touched) and LSE through p.lse and its strides (skipped when p.lse is null).
// Supports bf16/fp16 and head_dim 64, 128, 256. Asynchronous on `s`: it does not synchronize or
// allocate. Returns cudaErrorInvalidValue for an unsupported or inconsistent p, else the launch
// status.
cudaError_t gpu_reference_fp32(const AttnParams& p, float* o_fp32, cudaStream_t s);

// The same computation with O rounded (RNE) to p.dtype and written through p.o and its strides:
// the launch function of the registered kernel "reference".
cudaError_t gpu_reference_launch(const AttnParams& p, cudaStream_t s);

}  // namespace attngate
