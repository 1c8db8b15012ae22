// The initial kernel (kernels/initial/include/attngate/initial/fa2_kernel.cuh) with planted bugs:
// its one body, instantiated with `Planted<Cheat>` knobs in place of `initial_fa2::Exact`, so that
// a compile-time `Cheat` switches a bug on at the few places it matters (the knobs say where).
// Included only by kernels/adversarial/*.cu, instantiated only for bf16, head_dim 128
// (kernels/adversarial/README.md).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "attngate/initial/fa2_kernel.cuh"
#include "attngate/params.hpp"

namespace attngate_adversarial {

using attngate::AttnParams;
using attngate::DType;
using initial_fa2::Cfg;

// Bugs planted inside the kernel; the host-side cheats (kernels/adversarial/cheats_host.cu) run
// Cheat::none and misbehave around it.
enum class Cheat : int {
  none,
  no_causal_mask,     // causal scenarios computed without the mask
  causal_off_by_one,  // each query also sees the key right after the diagonal
  gqa_head_map,       // query head h reads kv head h % heads_kv
  skip_partial_tile,  // the last partial key tile is dropped
  nan_masked_rows,    // fully masked rows get O = NaN instead of 0
  partial_heads,      // odd query heads are never written
  row_past_end,       // the epilogue writes row seqlen_q too (one row past the output)
  missing_barrier,    // the __syncthreads between the cp.async copies and the ldmatrix reads is gone
  half_accum,         // S, O and the row sum rounded to 16 bits after every mma (16-bit accumulation)
};

// The initial kernel's knobs with one bug switched on (Cheat::none: initial itself, as a distinct
// instantiation of this library's own).
template <Cheat c>
struct Planted : initial_fa2::Exact {
  static constexpr bool kCausalMask = c != Cheat::no_causal_mask;
  static constexpr int kDiagonalLookahead = c == Cheat::causal_off_by_one ? 1 : 0;  // `<=` where `<` belongs
  static constexpr bool kGroupedKvHeads = c != Cheat::gqa_head_map;  // identical for MHA, wrong for GQA/MQA
  static constexpr bool kPartialTile = c != Cheat::skip_partial_tile;
  static constexpr bool kOddHeads = c != Cheat::partial_heads;
  static constexpr bool kNanMaskedRows = c == Cheat::nan_masked_rows;
  static constexpr int kRowsPastEnd = c == Cheat::row_past_end ? 1 : 0;
  // Without the barrier a warp reads K/V rows other threads have not finished copying, and the
  // prefetch overwrites a stage slower warps still read.
  static constexpr bool kCopyBarrier = c != Cheat::missing_barrier;
  static constexpr bool kRound16 = c == Cheat::half_accum;
};

// The variant kernel's launch for one causal mode. Checks are the caller's (check_params).
template <typename T, int D, bool kCausal, Cheat kCheat>
cudaError_t launch_variant_impl(const AttnParams& p, cudaStream_t stream) {
  return initial_fa2::launch_impl<T, D, kCausal, Planted<kCheat>>(p, stream);
}

inline bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0; }

// The initial kernel's launch checks, restricted to what the variants are built for (bf16, d128).
// Returns cudaSuccess with *nothing_to_do set for an empty problem.
inline cudaError_t check_params(const AttnParams& p, bool* nothing_to_do) {
  *nothing_to_do = false;
  if (p.dtype != DType::bf16 || p.head_dim != 128) return cudaErrorInvalidValue;
  if (p.batch < 0 || p.seqlen_q < 0 || p.seqlen_k < 0 || p.heads_q <= 0 || p.heads_kv <= 0 ||
      p.heads_q % p.heads_kv != 0)
    return cudaErrorInvalidValue;
  if (p.batch == 0 || p.seqlen_q == 0) {
    *nothing_to_do = true;
    return cudaSuccess;
  }
  const int64_t strides[] = {p.q_batch_stride, p.q_row_stride, p.q_head_stride,
                             p.k_batch_stride, p.k_row_stride, p.k_head_stride,
                             p.v_batch_stride, p.v_row_stride, p.v_head_stride,
                             p.o_batch_stride, p.o_row_stride, p.o_head_stride};
  for (const int64_t s : strides)
    if (s % 8 != 0) return cudaErrorInvalidValue;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.o))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

// The honest variant (Cheat::none), defined once in cheats_host.cu; the kernel-side cheats fall
// back to it for the causal mode their bug does not touch.
cudaError_t launch_honest(const AttnParams& p, cudaStream_t stream);

// Whether a planted bug changes anything in a causal mode; modes it cannot touch run the honest
// kernel, so no instantiation is spent on them.
constexpr bool affects(Cheat c, bool causal) {
  switch (c) {
    case Cheat::no_causal_mask:
    case Cheat::causal_off_by_one:
    case Cheat::nan_masked_rows:  // only causal shapes have fully masked rows
      return causal;
    default:
      return true;
  }
}

template <Cheat kCheat>
cudaError_t launch_variant(const AttnParams& p, cudaStream_t stream) {
  bool nothing_to_do = false;
  if (const cudaError_t err = check_params(p, &nothing_to_do); err != cudaSuccess || nothing_to_do) return err;
  if (p.causal) {
    if constexpr (affects(kCheat, true)) return launch_variant_impl<__nv_bfloat16, 128, true, kCheat>(p, stream);
    else return launch_honest(p, stream);
  }
  if constexpr (affects(kCheat, false)) return launch_variant_impl<__nv_bfloat16, 128, false, kCheat>(p, stream);
  else return launch_honest(p, stream);
}

}  // namespace attngate_adversarial
