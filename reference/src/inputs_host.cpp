// Host half of the input generator. Rounding goes through Eigen's bfloat16/half rather than
// cuda_bf16.h so that verify's host-vs-device comparison checks two independent RNE
// implementations against each other.
#include <Eigen/Core>

#include <stdexcept>
#include <string>

#include "attngate/inputs.hpp"

namespace attngate {

std::string distribution_name(Distribution d) {
  switch (d) {
    case Distribution::standard: return "standard";
    case Distribution::large_scores: return "large_scores";
  }
  throw std::invalid_argument("unknown Distribution " + std::to_string(static_cast<int>(d)));
}

Distribution parse_distribution(std::string_view name) {
  if (name == "standard") return Distribution::standard;
  if (name == "large_scores") return Distribution::large_scores;
  throw std::invalid_argument("unknown distribution '" + std::string(name) +
                              "' (expected standard or large_scores)");
}

int64_t input_numel(const AttnParams& p, int tensor) {
  if (tensor < kTensorQ || tensor > kTensorV)
    throw std::invalid_argument("input tensor id must be 0 (Q), 1 (K) or 2 (V), got " +
                                std::to_string(tensor));
  if (p.batch < 0 || p.seqlen_q < 0 || p.seqlen_k < 0 || p.heads_q < 0 || p.heads_kv < 0 ||
      p.head_dim < 0)
    throw std::invalid_argument("input shape has a negative size");
  const int64_t rows = tensor == kTensorQ ? p.seqlen_q : p.seqlen_k;
  const int64_t heads = tensor == kTensorQ ? p.heads_q : p.heads_kv;
  return int64_t{p.batch} * rows * heads * p.head_dim;
}

float input_value(uint64_t seed, int tensor, uint64_t index, Distribution d, DType dtype) {
  const float x = input_value_fp32(seed, tensor, index, d);
  switch (dtype) {
    case DType::bf16: return static_cast<float>(Eigen::bfloat16(x));
    case DType::fp16: return static_cast<float>(Eigen::half(x));
  }
  throw std::invalid_argument("unknown DType " + std::to_string(static_cast<int>(dtype)));
}

std::vector<float> host_input(const AttnParams& p, int tensor, uint64_t seed, Distribution d) {
  const int64_t n = input_numel(p, tensor);
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = input_value(seed, tensor, static_cast<uint64_t>(i), d, p.dtype);
  return out;
}

}  // namespace attngate
