#include "cudnn_plan.hpp"

#include <cstring>

namespace attngate::cudnn_sdpa {

Plan make_plan(const AttnParams& p) {
  Plan plan;
  plan.seqlen_q = p.seqlen_q;
  if (p.dtype != DType::bf16 && p.dtype != DType::fp16) {
    plan.unsupported = "dtype " + std::to_string(int(p.dtype)) + " (cudnn kernel: bf16 and fp16)";
    return plan;
  }
  if (p.batch <= 0 || p.seqlen_q <= 0 || p.seqlen_k <= 0 || p.heads_q <= 0 || p.heads_kv <= 0 || p.head_dim <= 0) {
    plan.unsupported = "empty problem";
    return plan;
  }
  if (p.heads_q % p.heads_kv != 0) {
    plan.unsupported = "heads_q " + std::to_string(p.heads_q) + " is not a multiple of heads_kv " +
                       std::to_string(p.heads_kv);
    return plan;
  }
  if (p.head_dim % 8 != 0) {
    plan.unsupported = "head_dim " + std::to_string(p.head_dim) + " is not a multiple of 8 (cuDNN SDPA)";
    return plan;
  }
  const int64_t strides[] = {p.q_batch_stride, p.q_row_stride, p.q_head_stride, p.k_batch_stride,
                             p.k_row_stride,   p.k_head_stride, p.v_batch_stride, p.v_row_stride,
                             p.v_head_stride,  p.o_batch_stride, p.o_row_stride, p.o_head_stride};
  for (int64_t s : strides)
    if (s % 8 != 0) {
      plan.unsupported = "a Q/K/V/O stride (" + std::to_string(s) +
                         " elements) is not a multiple of 8 elements (cuDNN needs 16-byte aligned strides)";
      return plan;
    }
  if (!p.causal) return plan;
  plan.causal = true;
  if (p.seqlen_q > p.seqlen_k) {
    plan.masked_rows = p.seqlen_q - p.seqlen_k;
    plan.seqlen_q = p.seqlen_k;
    plan.q_offset = int64_t(plan.masked_rows) * p.q_row_stride;
    plan.o_offset = int64_t(plan.masked_rows) * p.o_row_stride;
    plan.lse_offset = plan.masked_rows;  // LSE rows are contiguous
  }
  plan.bottom_right = plan.seqlen_q != p.seqlen_k;
  return plan;
}

std::string pointer_problem(const AttnParams& p, const Plan& plan) {
  const size_t e = 2;  // bf16 and fp16
  struct Ptr {
    const char* name;
    const void* ptr;
    int64_t offset;
  } ptrs[] = {{"Q", p.q, plan.q_offset}, {"K", p.k, 0}, {"V", p.v, 0}, {"O", p.o, plan.o_offset}};
  for (const auto& x : ptrs) {
    if (x.ptr == nullptr) return std::string(x.name) + " is null";
    const auto addr = reinterpret_cast<uintptr_t>(x.ptr) + uintptr_t(x.offset) * e;
    if (addr % 16 != 0) return std::string(x.name) + " is not 16-byte aligned (cuDNN SDPA)";
  }
  if (p.lse != nullptr && reinterpret_cast<uintptr_t>(p.lse) % 4 != 0) return "LSE is not 4-byte aligned";
  return {};
}

int lse_alignment(const AttnParams& p, const Plan& plan) {
  if (p.lse == nullptr) return 16;
  // Every (batch, head) row of LSE starts at pointer + strides: all of them must be aligned.
  const uint64_t bits = uint64_t(reinterpret_cast<uintptr_t>(p.lse + plan.lse_offset)) |
                        uint64_t(p.lse_batch_stride * 4) | uint64_t(p.lse_head_stride * 4);
  return bits % 16 == 0 ? 16 : bits % 8 == 0 ? 8 : 4;
}

std::vector<int64_t> cache_key(const AttnParams& p, int device, int lse_align) {
  int32_t scale_bits = 0;
  static_assert(sizeof(scale_bits) == sizeof(p.softmax_scale));
  std::memcpy(&scale_bits, &p.softmax_scale, sizeof scale_bits);
  return {device,
          lse_align,
          int64_t(p.dtype),
          p.batch,
          p.seqlen_q,
          p.seqlen_k,
          p.heads_q,
          p.heads_kv,
          p.head_dim,
          p.causal ? 1 : 0,
          scale_bits,
          p.lse != nullptr ? 1 : 0,
          p.q_batch_stride,
          p.q_row_stride,
          p.q_head_stride,
          p.k_batch_stride,
          p.k_row_stride,
          p.k_head_stride,
          p.v_batch_stride,
          p.v_row_stride,
          p.v_head_stride,
          p.o_batch_stride,
          p.o_row_stride,
          p.o_head_stride,
          p.lse_batch_stride,
          p.lse_head_stride};
}

}  // namespace attngate::cudnn_sdpa
