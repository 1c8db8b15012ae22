// Counter-based input generator: every element of Q, K and V is a pure function of
// (seed, tensor id, logical index), so the host and the device produce the same inputs for any
// shape, stride or launch order, and a failing case is reproducible from its seed alone.
// README.md spells the definition out.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attngate/params.hpp"

// The generator core is shared verbatim by g++ (host tests) and nvcc (device fill).
#if defined(__CUDACC__)
#define ATTNGATE_HOST_DEVICE __host__ __device__
#else
#define ATTNGATE_HOST_DEVICE
#endif

namespace attngate {

enum class Distribution : int32_t {
  standard = 0,      // Q, K, V ~ U[-1, 1)
  large_scores = 1,  // Q, K ~ U[-10, 10), V ~ U[-1, 1): scaled scores reach ~±100, so a softmax
                     // without max subtraction overflows fp32
};

// Tensor ids, part of the generator's definition.
inline constexpr int kTensorQ = 0;
inline constexpr int kTensorK = 1;
inline constexpr int kTensorV = 2;

std::string distribution_name(Distribution d);          // "standard", "large_scores"
Distribution parse_distribution(std::string_view name);  // inverse; throws std::invalid_argument

// splitmix64's output function (Stafford variant 13): a bijective 64-bit mixer.
ATTNGATE_HOST_DEVICE inline uint64_t input_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

inline constexpr uint64_t kInputGamma = 0x9E3779B97F4A7C15ull;  // splitmix64's increment

ATTNGATE_HOST_DEVICE inline float input_amplitude(Distribution d, int tensor) {
  return (d == Distribution::large_scores && tensor != kTensorV) ? 10.0f : 1.0f;
}

// The element before rounding to the kernel dtype. `index` is the element's position in the
// tensor's logical contiguous BSHD order. Every step is exact in fp32 except the final multiply by
// the amplitude, which is one correctly rounded IEEE multiply on both host and device.
ATTNGATE_HOST_DEVICE inline float input_value_fp32(uint64_t seed, int tensor, uint64_t index,
                                                   Distribution d) {
  const uint64_t stream = input_mix64(seed + kInputGamma * (static_cast<uint64_t>(tensor) + 1));
  const uint64_t h = input_mix64(stream + kInputGamma * (index + 1));
  // The top 24 bits give k in [0, 2^24); k * 2^-23 - 1 is exact and lies in [-1, 1).
  const float u = static_cast<float>(static_cast<uint32_t>(h >> 40)) * (1.0f / 8388608.0f) - 1.0f;
  return u * input_amplitude(d, tensor);
}

// Elements of Q (batch*seqlen_q*heads_q*head_dim) or K/V (batch*seqlen_k*heads_kv*head_dim).
int64_t input_numel(const AttnParams& p, int tensor);

// The host value of one element: input_value_fp32 rounded to `dtype` (round-to-nearest-even),
// returned as a float. Lets a check sample a few elements of a tensor too large to generate.
float input_value(uint64_t seed, int tensor, uint64_t index, Distribution d, DType dtype);

// Tensor `tensor` of p's shape, rounded to p.dtype, as floats in contiguous BSHD order; identical
// bit for bit to what fill_inputs writes. Only sizes and dtype of `p` are read.
std::vector<float> host_input(const AttnParams& p, int tensor, uint64_t seed, Distribution d);

// Writes Q, K and V in p.dtype through p.q/p.k/p.v and their strides (the buffers must be
// writable device memory). Asynchronous on `s`; throws std::invalid_argument on a bad shape and
// std::runtime_error when the launch fails.
void fill_inputs(const AttnParams& p, uint64_t seed, Distribution d, cudaStream_t s);

// Regenerates every element of Q, K and V on the device and counts those whose bits differ from
// what p's buffers hold (a kernel must not modify its inputs). Synchronizes `s`; throws like
// fill_inputs.
uint64_t count_input_mismatches(const AttnParams& p, uint64_t seed, Distribution d,
                                cudaStream_t s);

}  // namespace attngate
