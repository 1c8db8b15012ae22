#pragma once
// The initial kernel's body (kernels/initial/initial.cu registers it): FlashAttention-2-style
// attention forward on tensor cores (mma.sync m16n8k16). A header so that the planted cheats of
// kernels/adversarial are built from this one body (through the `Exact` knobs below) instead of
// from a copy of it.
//
// One block computes kBlockM query rows of one (batch, query head). Each warp owns 16 of those
// rows for the whole pass, so the online-softmax statistics (row max, row sum) never leave
// registers and warps never exchange data. K/V tiles of kBlockN keys stream through a two-stage
// cp.async ring in shared memory: tile j+1 is in flight while tile j is consumed. S = Q K^T and
// O += P V both run on mma.sync; P is rounded to the input dtype in registers and reused directly
// as the A operand of the PV product (the S accumulator layout equals the A fragment layout).
// Shared-memory rows are XOR-swizzled in 16-byte chunks so that ldmatrix and cp.async are free of
// bank conflicts without padding.
//
// Assumes (checked at launch): 16-byte aligned base pointers and strides that are multiples of
// 8 elements, which every BSHD tensor with head_dim in {64, 128, 256} has unless it is sliced oddly.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "attngate/params.hpp"

namespace initial_fa2 {

using attngate::AttnParams;
using attngate::DType;

// Tile shapes per head dim (picked by measurement on an H200 among spill-free variants). Each warp
// always owns 16 query rows, so kBlockM = 16 * kWarps.
//   d=64:  8 warps, 64 keys, two blocks per SM (128-register cap): the occupancy hides latency
//          better than wider tiles; Q is re-read from shared memory because holding it in
//          registers would spill under the cap.
//   d=128: 8 warps, 64 keys, one block per SM: Q (32 regs) + O (64) + S (32) stay in registers,
//          and a 128-row block halves the K/V traffic from L2 compared with 64 rows.
//   d=256: 4 warps, 32 keys, two blocks per SM: O alone takes 128 registers, so Q is re-read from
//          shared memory each k-step; 96 KB of shared memory per block lets two blocks share an SM.
template <int D>
struct Cfg {
  static constexpr int kWarps = D == 256 ? 4 : 8;
  static constexpr int kBlockN = D == 256 ? 32 : 64;
  static constexpr int kMinBlocks = D == 128 ? 1 : 2;
  static constexpr bool kQInRegs = D == 128;

  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBlockM = kWarps * 16;
  static constexpr int kRowBytes = D * 2;
  static constexpr int kQBytes = kBlockM * kRowBytes;
  static constexpr int kKVTileBytes = kBlockN * kRowBytes;
  // Q, then two stages of (K tile, V tile).
  static constexpr int kSmemBytes = kQBytes + 4 * kKVTileBytes;
};

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global->shared copy; when !valid nothing is read and the destination is zero-filled, so
// rows past the sequence end contribute zeros (never stale NaNs) to the products.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c += a * b for one 16x8x16 tile, fp32 accumulate.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats -> one register of two T, `lo` in the low half (the lower column index in mma
// fragments).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t u;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&u, &v, 4);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&u, &v, 4);
  }
  return u;
}

// Byte offset of 16-byte chunk `chunk` of tile row `row`. XOR with row % 8 spreads the 8 rows read
// by one ldmatrix phase (and the rows written by one warp of cp.async) over all 32 banks.
template <int D>
__device__ __forceinline__ uint32_t swz(int row, int chunk) {
  return static_cast<uint32_t>(row * (D * 2) + ((chunk ^ (row & 7)) << 4));
}

// Cooperative copy of kRows rows x D columns starting at global row `row0`; rows >= row_limit are
// zero-filled. Every thread keeps one chunk column and walks rows with a fixed step.
template <typename T, int D, int kRows, int kThreads>
__device__ __forceinline__ void load_tile(uint32_t s_base, const T* g, int64_t row_stride, int row0,
                                          int row_limit, int tid) {
  constexpr int kChunks = D / 8;
  constexpr int kStep = kThreads / kChunks;
  static_assert(kThreads % kChunks == 0 && kRows % kStep == 0, "tile copy must divide evenly");
  const int c = tid % kChunks;
  const int r0 = tid / kChunks;
#pragma unroll
  for (int i = 0; i < kRows / kStep; ++i) {
    const int r = r0 + i * kStep;
    const int grow = row0 + r;
    const bool ok = grow < row_limit;
    const T* src = g + static_cast<int64_t>(ok ? grow : 0) * row_stride + c * 8;
    cp_async_16(s_base + swz<D>(r, c), src, ok);
  }
}

// What a variant of this kernel may change, at the few places where it matters; `Exact` is the
// initial kernel itself. kernels/adversarial builds its planted bugs from these knobs, so the
// kernel's body exists once.
struct Exact {
  static constexpr bool kCausalMask = true;      // causal problems are masked
  static constexpr int kDiagonalLookahead = 0;   // keys past the diagonal that a query also sees
  static constexpr bool kGroupedKvHeads = true;  // query head h reads kv head h / group (else h % heads_kv)
  static constexpr bool kPartialTile = true;     // the last, partial key tile is computed (else dropped)
  static constexpr bool kOddHeads = true;        // odd query heads are computed (else never written)
  static constexpr bool kNanMaskedRows = false;  // fully masked rows get NaN (else O = 0)
  static constexpr int kRowsPastEnd = 0;         // rows past seqlen_q that the epilogue writes
  static constexpr bool kCopyBarrier = true;     // the block barrier between the copies and their reads
  static constexpr bool kRound16 = false;        // accumulators rounded to 16 bits after every mma
};

// What a 16-bit accumulator keeps (kRound16): bf16 inputs have no 16-bit-accumulating mma, so the
// fp32 accumulators are rounded after every instruction to bf16's 8 mantissa bits.
__device__ __forceinline__ float round_16bit(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
__device__ __forceinline__ void round_accumulator(float (&c)[4]) {
  c[0] = round_16bit(c[0]);
  c[1] = round_16bit(c[1]);
  c[2] = round_16bit(c[2]);
  c[3] = round_16bit(c[3]);
}

template <typename T, int D, bool kCausal, class V = Exact>
__global__ void __launch_bounds__(Cfg<D>::kThreads, Cfg<D>::kMinBlocks)
    attn_fwd_kernel(const __grid_constant__ AttnParams p) {
  using C = Cfg<D>;
  constexpr int kBM = C::kBlockM;
  constexpr int kBN = C::kBlockN;
  constexpr int kRB = C::kRowBytes;
  constexpr int kChunks = D / 8;

  extern __shared__ __align__(128) uint8_t smem[];
  const uint32_t sQ = smem_u32(smem);
  const uint32_t sKV = sQ + C::kQBytes;

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;

  const int b = blockIdx.x / p.heads_q;
  const int h = blockIdx.x - b * p.heads_q;
  if constexpr (!V::kOddHeads) {
    if (h & 1) return;
  }
  const int hk = V::kGroupedKvHeads ? h / (p.heads_q / p.heads_kv) : h % p.heads_kv;
  // blockIdx.y runs backwards over query blocks: under the causal mask the last query blocks see
  // the most keys, and launching them first keeps the tail of the grid short.
  const int m0 = (gridDim.y - 1 - blockIdx.y) * kBM;
  const int Sq = p.seqlen_q;
  const int Sk = p.seqlen_k;
  const int diag = Sk - Sq;  // query i sees keys j <= i + diag (bottom-right aligned)

  const T* q = static_cast<const T*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  const T* k = static_cast<const T*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const T* v = static_cast<const T*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  T* o = static_cast<T*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;
  float* lse = p.lse == nullptr ? nullptr : p.lse + b * p.lse_batch_stride + h * p.lse_head_stride;

  constexpr bool kMask = kCausal && V::kCausalMask;
  constexpr int kLookahead = V::kDiagonalLookahead;
  int n_end = Sk;
  if constexpr (kMask) n_end = min(Sk, m0 + kBM + diag + kLookahead);
  const int n_blocks = n_end > 0 ? (V::kPartialTile ? (n_end + kBN - 1) / kBN : n_end / kBN) : 0;

  if (n_blocks == 0) {
    // Every row of this block is fully masked: O = 0, LSE = -inf.
    const uint32_t fill = V::kNanMaskedRows ? 0xFFFFFFFFu : 0u;
    for (int r = tid / kChunks; r < kBM; r += C::kThreads / kChunks) {
      if (m0 + r < Sq)
        *reinterpret_cast<uint4*>(o + static_cast<int64_t>(m0 + r) * p.o_row_stride +
                                  (tid % kChunks) * 8) = make_uint4(fill, fill, fill, fill);
    }
    if (lse != nullptr)
      for (int r = tid; r < kBM; r += C::kThreads)
        if (m0 + r < Sq) lse[m0 + r] = -INFINITY;
    return;
  }

  // Prologue: Q, then the highest KV tile. Tiles are visited from the diagonal down to 0, so the
  // few tiles that need masking come first and the rest run mask-free.
  load_tile<T, D, kBM, C::kThreads>(sQ, q, p.q_row_stride, m0, Sq, tid);
  cp_async_commit();
  int n_block = n_blocks - 1;
  load_tile<T, D, kBN, C::kThreads>(sKV, k, p.k_row_stride, n_block * kBN, Sk, tid);
  load_tile<T, D, kBN, C::kThreads>(sKV + C::kKVTileBytes, v, p.v_row_stride, n_block * kBN, Sk,
                                    tid);
  cp_async_commit();

  // Per-lane ldmatrix addressing. Lane l supplies the row address for 8x8 matrix l/8. Every row
  // offset below is a multiple of 8 plus (l % 8), so the swizzle term is l % 8 and each chunk
  // index reduces to (2 * step) ^ x with a per-lane x.
  const int l8 = lane & 7;
  // Q as A operand: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (8-15, 8-15).
  const uint32_t q_row = sQ + (warp * 16 + l8 + ((lane >> 3) & 1) * 8) * kRB;
  const int q_x = (lane >> 4) ^ l8;
  // K as B operand of S = Q K^T (K rows are the n index): (n 0-7, k 0-7), (n 0-7, k 8-15),
  // (n 8-15, k 0-7), (n 8-15, k 8-15) -> registers {b0, b1} of two adjacent n-tiles.
  const uint32_t k_row = (l8 + (lane >> 4) * 8) * kRB;
  const int k_x = ((lane >> 3) & 1) ^ l8;
  // V as B operand of O = P V, loaded transposed: (keys 0-7, d 0-7), (keys 8-15, d 0-7),
  // (keys 0-7, d 8-15), (keys 8-15, d 8-15) -> {b0, b1} of two adjacent d-tiles.
  const uint32_t v_row = (l8 + ((lane >> 3) & 1) * 8) * kRB;
  const int v_x = (lane >> 4) ^ l8;

  uint32_t q_frag[C::kQInRegs ? D / 16 : 1][4];
  if constexpr (C::kQInRegs) {
    cp_async_wait<1>();
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) ldsm_x4(q_frag[kk], q_row + (((2 * kk) ^ q_x) << 4));
  }

  float acc_o[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) acc_o[j][0] = acc_o[j][1] = acc_o[j][2] = acc_o[j][3] = 0.f;
  // This thread's two rows are g and g + 8 of the warp's 16 (g = lane / 4). Row max is kept in
  // raw score units; the row sum is a per-thread partial, reduced across the quad at the end.
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.f, 0.f};
  const float scale_log2 = p.softmax_scale * 1.4426950408889634f;
  const int row_a = m0 + warp * 16 + (lane >> 2);
  // Exclusive bound on visible keys for each of the thread's rows.
  int lim[2] = {Sk, Sk};
  if constexpr (kMask) {
    lim[0] = min(Sk, row_a + diag + 1 + kLookahead);
    lim[1] = min(Sk, row_a + 8 + diag + 1 + kLookahead);
  }

  for (int it = 0; it < n_blocks; ++it, --n_block) {
    const uint32_t sK = sKV + (it & 1) * 2 * C::kKVTileBytes;
    const uint32_t sV = sK + C::kKVTileBytes;

    // Tile `it` has landed for this thread; the barrier publishes everyone's copies and also
    // guarantees every warp finished tile it-1, whose stage the next prefetch overwrites.
    cp_async_wait<0>();
    if constexpr (V::kCopyBarrier) __syncthreads();
    if (n_block > 0) {
      const uint32_t sNext = sKV + ((it + 1) & 1) * 2 * C::kKVTileBytes;
      load_tile<T, D, kBN, C::kThreads>(sNext, k, p.k_row_stride, (n_block - 1) * kBN, Sk, tid);
      load_tile<T, D, kBN, C::kThreads>(sNext + C::kKVTileBytes, v, p.v_row_stride,
                                        (n_block - 1) * kBN, Sk, tid);
    }
    cp_async_commit();

    // S = Q K^T for this warp's 16 rows x kBN keys.
    float s[kBN / 8][4];
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t a[4];
      if constexpr (C::kQInRegs) {
        a[0] = q_frag[kk][0], a[1] = q_frag[kk][1], a[2] = q_frag[kk][2], a[3] = q_frag[kk][3];
      } else {
        ldsm_x4(a, q_row + (((2 * kk) ^ q_x) << 4));
      }
#pragma unroll
      for (int nn = 0; nn < kBN / 16; ++nn) {
        uint32_t bk[4];
        ldsm_x4(bk, sK + nn * 16 * kRB + k_row + (((2 * kk) ^ k_x) << 4));
        mma_16816<T>(s[2 * nn], a, bk[0], bk[1]);
        mma_16816<T>(s[2 * nn + 1], a, bk[2], bk[3]);
        if constexpr (V::kRound16) {
          round_accumulator(s[2 * nn]);
          round_accumulator(s[2 * nn + 1]);
        }
      }
    }

    // Mask only tiles that cross the sequence end or the causal diagonal of the block's first row.
    const int n0 = n_block * kBN;
    if (n0 + kBN > Sk || (kMask && n0 + kBN - 1 > m0 + diag + kLookahead)) {
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        const int col = n0 + j * 8 + (lane & 3) * 2;
        if (col >= lim[0]) s[j][0] = -INFINITY;
        if (col + 1 >= lim[0]) s[j][1] = -INFINITY;
        if (col >= lim[1]) s[j][2] = -INFINITY;
        if (col + 1 >= lim[1]) s[j][3] = -INFINITY;
      }
    }

    // Online softmax in log2 space: p = 2^(s * scale_log2 - max * scale_log2), one FFMA + EX2.
    float mx[2] = {row_max[0], row_max[1]};
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
      mx[0] = fmaxf(mx[0], fmaxf(s[j][0], s[j][1]));
      mx[1] = fmaxf(mx[1], fmaxf(s[j][2], s[j][3]));
    }
    float corr[2];
    float mx_scaled[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // The quad (lanes 4g..4g+3) holds one row between them.
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      // A row with no visible key so far keeps max = -inf; subtracting 0 instead keeps
      // exp2(-inf - x) = 0 rather than NaN. corr is then exp2(-inf) = 0 on both paths.
      mx_scaled[r] = mx[r] == -INFINITY ? 0.f : mx[r] * scale_log2;
      corr[r] = exp2f(row_max[r] * scale_log2 - mx_scaled[r]);
      row_max[r] = mx[r];
    }
    float sum[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
      s[j][0] = exp2f(fmaf(s[j][0], scale_log2, -mx_scaled[0]));
      s[j][1] = exp2f(fmaf(s[j][1], scale_log2, -mx_scaled[0]));
      s[j][2] = exp2f(fmaf(s[j][2], scale_log2, -mx_scaled[1]));
      s[j][3] = exp2f(fmaf(s[j][3], scale_log2, -mx_scaled[1]));
      sum[0] += s[j][0] + s[j][1];
      sum[1] += s[j][2] + s[j][3];
    }
    row_sum[0] = row_sum[0] * corr[0] + sum[0];
    row_sum[1] = row_sum[1] * corr[1] + sum[1];
    if constexpr (V::kRound16) {
      row_sum[0] = round_16bit(row_sum[0]);
      row_sum[1] = round_16bit(row_sum[1]);
    }
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      acc_o[j][0] *= corr[0];
      acc_o[j][1] *= corr[0];
      acc_o[j][2] *= corr[1];
      acc_o[j][3] *= corr[1];
    }

    // O += P V. The accumulators of n-tiles 2kk and 2kk+1 are exactly the A fragment of k-step kk.
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      const uint32_t a[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]),
                             pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                             pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int nn = 0; nn < D / 16; ++nn) {
        uint32_t bv[4];
        ldsm_x4_trans(bv, sV + kk * 16 * kRB + v_row + (((2 * nn) ^ v_x) << 4));
        mma_16816<T>(acc_o[2 * nn], a, bv[0], bv[1]);
        mma_16816<T>(acc_o[2 * nn + 1], a, bv[2], bv[3]);
        if constexpr (V::kRound16) {
          round_accumulator(acc_o[2 * nn]);
          round_accumulator(acc_o[2 * nn + 1]);
        }
      }
    }
  }

  // Epilogue. The last iteration committed an empty group, so no copy is in flight.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
  }
  // A row with a visible key has row_sum >= 1 (its max term is exp2(0)); 0 means fully masked.
  const float masked_inv = V::kNanMaskedRows ? __int_as_float(0x7fc00000) : 0.f;
  const float inv[2] = {row_sum[0] > 0.f ? 1.f / row_sum[0] : masked_inv,
                        row_sum[1] > 0.f ? 1.f / row_sum[1] : masked_inv};

  // Stage O through this warp's own 16 rows of the Q tile (only this warp ever reads them), so
  // the global stores are whole 16-byte chunks of contiguous rows. The __syncwarp orders the
  // warp's last ldmatrix reads of those rows (Q is re-read from shared memory for d != 128)
  // before they are overwritten.
  uint8_t* s_o = smem + warp * 16 * kRB;
  const int g = lane >> 2;
  __syncwarp();
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    *reinterpret_cast<uint32_t*>(s_o + swz<D>(g, j) + (lane & 3) * 4) =
        pack2<T>(acc_o[j][0] * inv[0], acc_o[j][1] * inv[0]);
    *reinterpret_cast<uint32_t*>(s_o + swz<D>(g + 8, j) + (lane & 3) * 4) =
        pack2<T>(acc_o[j][2] * inv[1], acc_o[j][3] * inv[1]);
  }
  __syncwarp();
#pragma unroll
  for (int i = 0; i < 16 * kChunks / 32; ++i) {
    const int idx = lane + i * 32;
    const int r = idx / kChunks;
    const int c = idx % kChunks;
    const int row = m0 + warp * 16 + r;
    const uint4 val = *reinterpret_cast<const uint4*>(s_o + swz<D>(r, c));
    if (row < Sq + V::kRowsPastEnd)
      *reinterpret_cast<uint4*>(o + static_cast<int64_t>(row) * p.o_row_stride + c * 8) = val;
  }

  if (lse != nullptr && (lane & 3) == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row_a + r * 8;
      if (row < Sq)
        lse[row] = row_sum[r] > 0.f ? row_max[r] * p.softmax_scale + logf(row_sum[r]) : -INFINITY;
    }
  }
}

template <typename T, int D, bool kCausal, class V = Exact>
cudaError_t launch_impl(const AttnParams& p, cudaStream_t stream) {
  using C = Cfg<D>;
  auto* kernel = attn_fwd_kernel<T, D, kCausal, V>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         C::kSmemBytes);
  if (err != cudaSuccess) return err;
  // Ask for the largest shared-memory carveout so that kMinBlocks blocks fit on one SM.
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                             cudaSharedmemCarveoutMaxShared);
  if (err != cudaSuccess) return err;
  const int m_blocks = (p.seqlen_q + C::kBlockM - 1) / C::kBlockM;
  if (m_blocks > 65535) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(p.batch) * static_cast<unsigned>(p.heads_q), m_blocks);
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(p);
  return cudaGetLastError();
}

template <int D>
cudaError_t dispatch(const AttnParams& p, cudaStream_t stream) {
  if (p.dtype == DType::bf16)
    return p.causal ? launch_impl<__nv_bfloat16, D, true>(p, stream)
                    : launch_impl<__nv_bfloat16, D, false>(p, stream);
  if (p.dtype == DType::fp16)
    return p.causal ? launch_impl<__half, D, true>(p, stream)
                    : launch_impl<__half, D, false>(p, stream);
  return cudaErrorInvalidValue;
}

}  // namespace initial_fa2
