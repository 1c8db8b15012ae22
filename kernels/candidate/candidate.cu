// Attention forward for sm_90a, the candidate under optimization (its campaign: README.md).
//
// Every head dim runs the Hopper path (namespace candidate_hopper: a persistent, warp-specialized
// kernel of TMA copies and warpgroup MMA). Where the driver cannot describe a tensor to TMA, or
// there are no keys, the FlashAttention-2-style path it started from runs (mma.sync m16n8k16):
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
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <atomic>
#include <cstring>
#include <type_traits>

#include "attngate/params.hpp"
#include "attngate/registry.hpp"

namespace candidate_fa2 {

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

template <typename T, int D, bool kCausal>
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
  const int hk = h / (p.heads_q / p.heads_kv);
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

  int n_end = Sk;
  if constexpr (kCausal) n_end = min(Sk, m0 + kBM + diag);
  const int n_blocks = n_end > 0 ? (n_end + kBN - 1) / kBN : 0;

  if (n_blocks == 0) {
    // Every row of this block is fully masked: O = 0, LSE = -inf.
    for (int r = tid / kChunks; r < kBM; r += C::kThreads / kChunks) {
      if (m0 + r < Sq)
        *reinterpret_cast<uint4*>(o + static_cast<int64_t>(m0 + r) * p.o_row_stride +
                                  (tid % kChunks) * 8) = make_uint4(0, 0, 0, 0);
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
  if constexpr (kCausal) {
    lim[0] = min(Sk, row_a + diag + 1);
    lim[1] = min(Sk, row_a + 8 + diag + 1);
  }

  for (int it = 0; it < n_blocks; ++it, --n_block) {
    const uint32_t sK = sKV + (it & 1) * 2 * C::kKVTileBytes;
    const uint32_t sV = sK + C::kKVTileBytes;

    // Tile `it` has landed for this thread; the barrier publishes everyone's copies and also
    // guarantees every warp finished tile it-1, whose stage the next prefetch overwrites.
    cp_async_wait<0>();
    __syncthreads();
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
      }
    }

    // Mask only tiles that cross the sequence end or the causal diagonal of the block's first row.
    const int n0 = n_block * kBN;
    if (n0 + kBN > Sk || (kCausal && n0 + kBN - 1 > m0 + diag)) {
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
  const float inv[2] = {row_sum[0] > 0.f ? 1.f / row_sum[0] : 0.f,
                        row_sum[1] > 0.f ? 1.f / row_sum[1] : 0.f};

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
    if (row < Sq) *reinterpret_cast<uint4*>(o + static_cast<int64_t>(row) * p.o_row_stride + c * 8) = val;
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

template <typename T, int D, bool kCausal>
cudaError_t launch_impl(const AttnParams& p, cudaStream_t stream) {
  using C = Cfg<D>;
  auto* kernel = attn_fwd_kernel<T, D, kCausal>;
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

}  // namespace candidate_fa2

// ---------------------------------------------------------------------------------------------
// Hopper path (head dims 64, 128, 256): persistent, warp-specialized, TMA-fed warpgroup MMA (wgmma).
//
// One block per SM takes tiles (kBlockM query rows of one (batch, query head)) from one list, the
// heads in groups whose K and V fit in the L2, inside a group the longest causal row blocks first,
// each block claiming its next tile from a global counter as it starts one. One producer and two
// or three consumer warpgroups:
// warpgroup 0 produces: it gives most of its registers to the consumers (setmaxnreg), one of its
// threads claims the next tile (schedule) and another issues bulk tensor copies (TMA) of each
// tile's Q and of its K and V tiles into a ring of
// stages that runs on across tiles, so the next tile's copies start while this one finishes. Q has
// its own full and empty barriers: the consumers release it after their last S GEMM of a tile and
// write O straight from registers, so the next Q lands during the last softmax, PV and epilogue.
// Each copy completes on the stage's "full" mbarrier; consumers hand a stage back on its "empty"
// mbarrier, so no block-wide barrier is met after the start. The other
// warpgroups consume, 64 query rows each: S = Q K^T is a wgmma with both operands in shared memory,
// O += P V a wgmma with P from registers (the S accumulator layout is the A-fragment layout) and
// V read MN-major (transposed by the instruction). Iteration j issues S_j and P_(j-1) V_(j-1),
// then runs the softmax of S_j while the PV product runs; with kPingPong the consumers take
// turns issuing their GEMMs (named barriers), so one's softmax overlaps the other's GEMMs.
// TMA writes each tile as head-dim atoms of 64 elements x 128 rows in its 128-byte swizzle
// (16-byte chunk c of row r at chunk c ^ (r % 8)), the layout wgmma's 128-byte swizzle mode reads.
namespace candidate_hopper {

using attngate::AttnParams;
using attngate::DType;
using candidate_fa2::pack2;
using candidate_fa2::smem_u32;

// Tensor maps of Q, K and V as 4-D tensors (head dim, rows, heads, batch), encoded per call.
struct TensorMaps {  // 64-byte aligned as CUtensorMap is
  CUtensorMap q, k, v;
};

template <int D>
struct Cfg {
  // d64: three consumers (192 rows), as FA3: a third warp per scheduler to hide the softmax's
  // latency, where the short GEMMs leave it the larger share of each tile.
  static constexpr int kConsumers = D == 64 ? 3 : 2;        // consumer warpgroups, 64 rows each
  static constexpr int kThreads = 128 * (1 + kConsumers);   // warpgroup 0 produces
  static constexpr int kBlockM = 64 * kConsumers;
  // d256: 64 keys per tile keeps S (32 registers) + O (128) + P (16) under the consumers' 240.
  static constexpr int kBlockN = D == 256 ? 64 : 128;
  static constexpr int kQAtomBytes = kBlockM * 128;          // 64 elements x kBlockM query rows
  static constexpr int kKVAtomBytes = kBlockN * 128;         // 64 elements x kBlockN keys
  static constexpr int kQBytes = (D / 64) * kQAtomBytes;
  static constexpr int kKVBytes = (D / 64) * kKVAtomBytes;
  // Q + 3 x (K, V) = 224 KB at d128; Q + 2 x (K, V) = 192 KB at d256.
  static constexpr int kStages = D == 256 ? 2 : 3;
  // Q full and empty, the next tile's full and empty, K and V full and empty per stage.
  static constexpr int kBarriers = 4 + 4 * kStages;
  // The barriers, the tile the producer hands to the consumers (16 bytes), the tile the scheduler
  // thread hands to the producer (32), 1 KB to align.
  static constexpr int kSmemBytes = kQBytes + 2 * kStages * kKVBytes + 8 * kBarriers + 48 + 1024;
  // setmaxnreg moves registers within the block's launch allocation (65,536 / threads each, a
  // multiple of 8); asking for more deadlocks the increase. d64: 128 x 32 + 384 x 160 = 512 x 128.
  // d128: 128 x 32 + 256 x 232 < 384 x 168 (at 24 the producer warpgroup spills 16 bytes). d256:
  // 128 x 24 + 256 x 240 = 384 x 168 (O alone takes 128 of the consumers' registers; the producer
  // warpgroup spills 16-20 bytes: a few local loads and stores per tile, in two threads).
  static constexpr int kProducerRegs = D == 256 ? 24 : 32;
  static constexpr int kConsumerRegs = kConsumers == 3 ? 160 : D == 256 ? 240 : 232;
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= (65536 / kThreads) / 8 * 8 * kThreads,
                "setmaxnreg would wait for registers the block does not have");
};

// ---- PTX wrappers -------------------------------------------------------------------------

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// One arrival that also announces `bytes` of copies to come (the producer's, per stage use).
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One arrival per consumer warpgroup, by its first thread (ctid % 128 == 0), predicated rather
// than branched (a divergent branch beside the wgmmas makes ptxas serialize them, C7520). A
// warpgroup's wgmma reads shared memory as one operation, so once one of its threads has waited
// for it, the whole warpgroup's reads of the stage are done (as CUTLASS's consumer_release
// assumes); 128 arrivals per warpgroup on one mbarrier cost the shared-memory unit 128 operations.
__device__ __forceinline__ void mbar_arrive_first(uint32_t bar, int ctid) {
  asm volatile(
      "{\n .reg .pred p;\n setp.eq.u32 p, %1, 0;\n @p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n" ::"r"(bar),
      "r"(ctid & 127)
      : "memory");
}
// Waits until the phase of parity `parity` has completed (a fresh barrier's phase "1" counts as
// completed, so a producer's first wait on an empty stage passes at once).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nLAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@done bra DONE;\nbra LAB_WAIT;\nDONE:\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Box {64 elements, 128 rows} at coordinates (c0 .. c3) of `map` into shared memory at dst.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1, int c2,
                                         int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
template <int N>
__device__ __forceinline__ void regs_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void regs_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)); }
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Shared-memory matrix descriptor in 128-byte swizzle mode: start address, leading and stride
// byte offsets, each in 16-byte units.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lead_bytes, uint32_t stride_bytes) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lead_bytes & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((stride_bytes & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}
// desc advanced by `bytes` within its tile: the start address (bits 0-13, in 16-byte units) of a
// shared-memory address below 256 KB never carries into bit 14, so one 32-bit add of the low word
// does it, where smem_desc of each k-step's address cost ptxas four or five instructions.
__device__ __forceinline__ uint64_t desc_add(uint64_t desc, uint32_t bytes) {
  uint32_t lo, hi;
  asm("mov.b64 {%0, %1}, %2;" : "=r"(lo), "=r"(hi) : "l"(desc));
  uint64_t out;
  asm("mov.b64 %0, {%1, %2};" : "=l"(out) : "r"(lo + (bytes >> 4)), "r"(hi));
  return out;
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// Keeps the compiler from moving reads or writes of an accumulator across a wgmma wait.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}

// d (64 x N, f32) (+)= A (64 x 16, shared, K-major) * B (16 x N, shared, K-major).
template <int N, typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int accumulate);
// d (64 x N) += A (64 x 16, registers) * B (16 x N, shared, MN-major).
template <int N, typename T>
__device__ __forceinline__ void wgmma_rs_tb(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int accumulate);

// One definition per instruction shape, instantiated for bf16 and fp16: the accumulator operand
// lists (CAND_F*) and register lists (CAND_R*) are spelled once.
#define CAND_F8(d, i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define CAND_F32(d) CAND_F8(d, 0), CAND_F8(d, 8), CAND_F8(d, 16), CAND_F8(d, 24)
#define CAND_F64(d) CAND_F32(d), CAND_F8(d, 32), CAND_F8(d, 40), CAND_F8(d, 48), CAND_F8(d, 56)
#define CAND_F128(d) CAND_F64(d), CAND_F8(d, 64), CAND_F8(d, 72), CAND_F8(d, 80), CAND_F8(d, 88), CAND_F8(d, 96), \
  CAND_F8(d, 104), CAND_F8(d, 112), CAND_F8(d, 120)
#define CAND_R32                                                                                                     \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31}"
#define CAND_R64                                                                                                     \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define CAND_R128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
// IA, IB, IP: operand numbers (as strings) of the A descriptor, B descriptor and accumulate flag.
#define CAND_WGMMA_SS(N, T, PT, REGS, OUTS, IA, IB, IP)                                                              \
  template <>                                                                                                        \
  __device__ __forceinline__ void wgmma_ss<N, T>(float(&d)[N / 2], uint64_t da, uint64_t db, int accumulate) {       \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IP ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PT \
                 "." PT " " REGS ", %" IA ", %" IB ", p, 1, 1, 0, 0;\n}\n"                                          \
                 : OUTS(d)                                                                                           \
                 : "l"(da), "l"(db), "r"(accumulate));                                                               \
  }
// I0: operand number of a[0] (a[1..3] follow), IB and IP as above.
#define CAND_WGMMA_RS(N, T, PT, REGS, OUTS, I0, I1, I2, I3, IB, IP)                                                  \
  template <>                                                                                                        \
  __device__ __forceinline__ void wgmma_rs_tb<N, T>(float(&d)[N / 2], const uint32_t(&a)[4], uint64_t db,            \
                                                    int accumulate) {                                                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IP ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PT \
                 "." PT " " REGS ", {%" I0 ", %" I1 ", %" I2 ", %" I3 "}, %" IB ", p, 1, 1, 1;\n}\n"                \
                 : OUTS(d)                                                                                           \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));                            \
  }

CAND_WGMMA_SS(128, __nv_bfloat16, "bf16", CAND_R64, CAND_F64, "64", "65", "66")
CAND_WGMMA_SS(128, __half, "f16", CAND_R64, CAND_F64, "64", "65", "66")
CAND_WGMMA_RS(128, __nv_bfloat16, "bf16", CAND_R64, CAND_F64, "64", "65", "66", "67", "68", "69")
CAND_WGMMA_RS(128, __half, "f16", CAND_R64, CAND_F64, "64", "65", "66", "67", "68", "69")
CAND_WGMMA_SS(64, __nv_bfloat16, "bf16", CAND_R32, CAND_F32, "32", "33", "34")
CAND_WGMMA_SS(64, __half, "f16", CAND_R32, CAND_F32, "32", "33", "34")
CAND_WGMMA_RS(256, __nv_bfloat16, "bf16", CAND_R128, CAND_F128, "128", "129", "130", "131", "132", "133")
CAND_WGMMA_RS(256, __half, "f16", CAND_R128, CAND_F128, "128", "129", "130", "131", "132", "133")
CAND_WGMMA_RS(64, __nv_bfloat16, "bf16", CAND_R32, CAND_F32, "32", "33", "34", "35", "36", "37")
CAND_WGMMA_RS(64, __half, "f16", CAND_R32, CAND_F32, "32", "33", "34", "35", "36", "37")

// ---- the block's work and its shared memory ---------------------------------------------------

// Which rows and keys one tile covers.
struct Tile {
  int b, h, hk, m0, n_blocks;
};
// The order of the tiles. The (batch, head) pairs fall into groups of `group` consecutive ones whose
// K and V fit in a share of the L2 together (kL2Bytes), and the groups run one after another, so
// the blocks working at one time read the same few heads' K and V from the L2 rather than DRAM.
// Causal: inside a group, tile r is row block m_blocks - 1 - r / size of pair r % size, the longest
// row blocks first. Without a mask every tile is as long, and the row blocks of one head run next to
// each other (tile r is row block r % m_blocks of pair r / m_blocks), so the blocks at work share
// one or two heads' K and V (the groups' order cost v8 3-8 % there). Block k starts with tile k;
// its next tile comes from a counter in global memory (claim_tile), claimed one tile ahead by a
// thread of the producer warpgroup (schedule), so a block that finishes early takes more tiles (a
// static share of every gridDim.x-th tile left some SMs with 1.1-1.7x the average causal work, v7).
constexpr int64_t kL2Bytes = 32 << 20;
struct Schedule {
  int bh, m_blocks, group, tiles;
};
template <int D, int kBM>
__device__ __forceinline__ Schedule make_schedule(const AttnParams& p) {
  Schedule s;
  s.bh = p.batch * p.heads_q;
  s.m_blocks = (p.seqlen_q + kBM - 1) / kBM;
  const int64_t kv_bytes = static_cast<int64_t>(p.seqlen_k) * D * 4 * p.heads_kv / p.heads_q;  // per query head
  s.group = static_cast<int>(max(int64_t{1}, min(static_cast<int64_t>(s.bh), kL2Bytes / max(kv_bytes, int64_t{1}))));
  s.tiles = s.bh * s.m_blocks;
  return s;
}
template <int kBM, int kBN, bool kCausal>
__device__ __forceinline__ Tile locate_tile(const AttnParams& p, const Schedule& sched, int index) {
  int mb, bhi;
  if constexpr (kCausal) {
    const int per_group = sched.group * sched.m_blocks;
    const int g = index / per_group, r = index - g * per_group;
    const int size = min(sched.group, sched.bh - g * sched.group);
    mb = r / size, bhi = g * sched.group + (r - mb * size);
  } else {
    bhi = index / sched.m_blocks, mb = index - bhi * sched.m_blocks;
  }
  Tile t;
  t.b = bhi / p.heads_q;
  t.h = bhi - t.b * p.heads_q;
  t.hk = t.h / (p.heads_q / p.heads_kv);
  t.m0 = (sched.m_blocks - 1 - mb) * kBM;
  int n_end = p.seqlen_k;
  if constexpr (kCausal) n_end = min(p.seqlen_k, t.m0 + kBM + p.seqlen_k - p.seqlen_q);
  t.n_blocks = n_end > 0 ? (n_end + kBN - 1) / kBN : 0;
  return t;
}
// The tile counters, each on its own 128-byte line, zero when no call is running; a call's kernel
// gets the index of its own (next_counter_slot). The address is formed at each claim, not held: the
// producer has 24-32 registers, and a pointer held across a tile spills them.
constexpr int kCounters = 256;
__device__ unsigned g_tile_counters[kCounters * 32];

// The block's next tile is gridDim.x + the number of claims before its own. Each block claims once
// per tile it runs, until it gets an index past the end, so a call makes exactly `tiles` claims, and
// the last one puts the counter back to zero for the next call (which, on the same stream, starts
// after this one ends; calls on other streams get other counters, next_tile_counter).
__device__ __forceinline__ int claim_tile(unsigned slot, int tiles) {
  unsigned* counter = g_tile_counters + slot * 32;
  const unsigned claim = atomicAdd(counter, 1u);
  if (claim == static_cast<unsigned>(tiles) - 1u) atomicExch(counter, 0u);
  return static_cast<int>(claim + gridDim.x);
}

// Shared memory: [Q][K0][V0][K1][V1]...[barriers], every tile 1024-byte aligned (the swizzle works
// on address bits). The ring's position (stage, phase) runs on across tiles.
template <int D>
struct Ring {
  using C = Cfg<D>;
  uint32_t q_tile;
  __device__ uint32_t k_tile(int s) const { return q_tile + C::kQBytes + 2 * s * C::kKVBytes; }
  __device__ uint32_t v_tile(int s) const { return k_tile(s) + C::kKVBytes; }
  __device__ uint32_t barrier(int i) const { return q_tile + C::kQBytes + 2 * C::kStages * C::kKVBytes + 8 * i; }
  __device__ uint32_t q_full() const { return barrier(0); }
  __device__ uint32_t q_empty() const { return barrier(1); }
  __device__ uint32_t next_full() const { return barrier(2); }
  __device__ uint32_t next_empty() const { return barrier(3); }
  __device__ uint32_t k_full(int s) const { return barrier(4 + s); }
  __device__ uint32_t v_full(int s) const { return barrier(4 + C::kStages + s); }
  __device__ uint32_t k_empty(int s) const { return barrier(4 + 2 * C::kStages + s); }
  __device__ uint32_t v_empty(int s) const { return barrier(4 + 3 * C::kStages + s); }
  // The tile whose Q is in q_tile (st_tile), written before q_full's arrival.
  __device__ uint32_t tile_slot() const { return barrier(C::kBarriers); }
  // The producer's next tile, claimed and located ahead by the scheduler thread (schedule).
  __device__ uint32_t next_slot() const { return tile_slot() + 16; }
  // Full barriers wait for the producer's one arrival (and its bytes); a stage's empty ones for
  // one arrival per consumer warpgroup after its last wgmma on the stage (mbar_arrive_first), Q's
  // for every consumer thread (a thread reads the tile slot before its warpgroup's first wgmma).
  __device__ void init() const {
    mbar_init(q_full(), 1), mbar_init(q_empty(), 128 * C::kConsumers);
    mbar_init(next_full(), 1), mbar_init(next_empty(), 1);
    for (int s = 0; s < C::kStages; ++s) {
      mbar_init(k_full(s), 1), mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), C::kConsumers), mbar_init(v_empty(s), C::kConsumers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
};

// A position in the ring: the stage and the parity of its current use.
template <int kStages>
struct RingPos {
  int stage = 0;
  uint32_t phase = 0;
  __device__ void advance() {
    if (++stage == kStages) stage = 0, phase ^= 1;
  }
};

// A block whose rows see no key: O = 0, LSE = -inf.
template <typename T, int D, int kBM>
__device__ __forceinline__ void write_masked_rows(const AttnParams& p, const Tile& t, int tid, int threads) {
  constexpr int kChunks = D / 8;
  T* o = static_cast<T*>(p.o) + t.b * p.o_batch_stride + t.h * p.o_head_stride;
  for (int i = tid; i < kBM * kChunks; i += threads) {
    const int r = i / kChunks;
    if (t.m0 + r < p.seqlen_q)
      *reinterpret_cast<uint4*>(o + static_cast<int64_t>(t.m0 + r) * p.o_row_stride + (i % kChunks) * 8) =
          make_uint4(0, 0, 0, 0);
  }
  if (p.lse != nullptr && tid < kBM && t.m0 + tid < p.seqlen_q)
    p.lse[t.b * p.lse_batch_stride + t.h * p.lse_head_stride + t.m0 + tid] = -INFINITY;
}

// ---- producer -------------------------------------------------------------------------------

// kRows x D as D / 64 boxes of 64 elements x kRows rows.
template <int D, int kRows>
__device__ __forceinline__ void load_tile(uint32_t dst, const CUtensorMap* map, uint32_t bar, int row0, int head,
                                          int batch) {
  mbar_expect_tx(bar, D * kRows * 2);  // rows past the end are zero-filled and still counted
#pragma unroll
  for (int a = 0; a < D / 64; ++a) tma_load(dst + a * kRows * 128, map, bar, a * 64, row0, head, batch);
}

// The tile as the consumers need it (b < 0: no more tiles), one 16-byte shared-memory word.
__device__ __forceinline__ void st_tile(uint32_t addr, const Tile& t) {
  asm volatile("st.shared.v4.s32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(t.b), "r"(t.h), "r"(t.m0),
               "r"(t.n_blocks)
               : "memory");
}
__device__ __forceinline__ Tile ld_tile(uint32_t addr) {
  Tile t{};
  asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(t.b), "=r"(t.h), "=r"(t.m0), "=r"(t.n_blocks)
               : "r"(addr)
               : "memory");
  return t;
}

// One thread (not the producer: the schedule and a claim held across a tile spill the producer's
// 24-32 registers) claims and locates the producer's next tile while the producer loads the
// current one, and hands it over through next_slot: written, then next_full; read, then
// next_empty (the k-th hand-over and the k-th read complete phase k of each). It stops after
// handing over "no more tiles" (b < 0).
template <int D, bool kCausal>
__device__ __forceinline__ void schedule(const AttnParams& p, const Ring<D>& ring, unsigned counter_slot) {
  using C = Cfg<D>;
  const Schedule sched = make_schedule<D, C::kBlockM>(p);
  int index = blockIdx.x;  // the block's own first tile; every later one is claimed
  for (uint32_t phase = 0;; phase ^= 1) {
    const bool done = index >= sched.tiles;
    const Tile t = done ? Tile{-1, 0, 0, 0, 0} : locate_tile<C::kBlockM, C::kBlockN, kCausal>(p, sched, index);
    st_tile(ring.next_slot(), t);
    asm volatile("st.shared.s32 [%0], %1;\n" ::"r"(ring.next_slot() + 16), "r"(t.hk) : "memory");
    mbar_arrive(ring.next_full());
    if (done) return;
    // Once the producer has taken this tile (it is starting it), claim the next: one tile ahead.
    // (Claiming before this wait made it two ahead, coarser at the causal tail.)
    mbar_wait(ring.next_empty(), phase);
    index = claim_tile(counter_slot, sched.tiles);
  }
}

// Publishes the tile whose Q comes next once the consumers have released the previous Q: written
// before the arrival that completes q_full (with Q's bytes), so the consumers read it after their
// wait, and they need no copy of the schedule (registers the d128 and d256 consumers lack).
template <int D>
__device__ __forceinline__ void publish_tile(const Ring<D>& ring, uint32_t& q_phase, const Tile& t) {
  mbar_wait(ring.q_empty(), q_phase ^ 1);
  st_tile(ring.tile_slot(), t);
  q_phase ^= 1;
}

// One thread, for each tile it claims: K and V of every key tile from the diagonal down, each into
// a stage the consumers have handed back, and the tile's index and Q (once the consumers have
// released the previous tile's) between the first K and V. Waits on an empty barrier are for the
// parity before the current one: a fresh barrier counts that one as complete.
template <int D, bool kCausal>
__device__ __forceinline__ void produce(const AttnParams& p, const TensorMaps& maps, const Ring<D>& ring) {
  using C = Cfg<D>;
  RingPos<C::kStages> pos;
  uint32_t q_phase = 0;
  for (;;) {
    // The k-th tile is the scheduler's k-th hand-over, and q_phase has turned k times.
    mbar_wait(ring.next_full(), q_phase);
    Tile t = ld_tile(ring.next_slot());
    asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(t.hk) : "r"(ring.next_slot() + 16) : "memory");
    mbar_arrive(ring.next_empty());
    if (t.b < 0) break;
    if (t.n_blocks == 0) {  // no key to load: the consumers write the rows from the index alone
      publish_tile(ring, q_phase, t);
      mbar_arrive(ring.q_full());
    }
    for (int it = 0; it < t.n_blocks; ++it, pos.advance()) {
      const int s = pos.stage, row0 = (t.n_blocks - 1 - it) * C::kBlockN;
      mbar_wait(ring.k_empty(s), pos.phase ^ 1);
      load_tile<D, C::kBlockN>(ring.k_tile(s), &maps.k, ring.k_full(s), row0, t.hk, t.b);
      if (it == 0) {
        publish_tile(ring, q_phase, t);
        load_tile<D, C::kBlockM>(ring.q_tile, &maps.q, ring.q_full(), t.m0, t.h, t.b);
      }
      mbar_wait(ring.v_empty(s), pos.phase ^ 1);
      load_tile<D, C::kBlockN>(ring.v_tile(s), &maps.v, ring.v_full(s), row0, t.hk, t.b);
    }
  }
  publish_tile(ring, q_phase, Tile{-1, 0, 0, 0, 0});
  mbar_arrive(ring.q_full());
}

// ---- consumers ------------------------------------------------------------------------------

// Online-softmax state of this thread's two rows (row_a and row_a + 8 of its warp's 16).
struct RowState {
  float max[2] = {-INFINITY, -INFINITY};
  float sum[2] = {0.f, 0.f};  // per-thread partial sums, reduced across the quad at the end
};

// Masks s (64 x 128 keys from n0) where a key is past the end or above the causal diagonal.
// s[4j + e]: row (e < 2 ? row_a : row_a + 8), column n0 + 8j + 2 (lane % 4) + (e & 1).
template <int kBN>
__device__ __forceinline__ void mask_tile(float (&s)[kBN / 2], int n0, const int (&lim)[2], int lane) {
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    const int col = n0 + j * 8 + (lane & 3) * 2;
    if (col >= lim[0]) s[4 * j + 0] = -INFINITY;
    if (col + 1 >= lim[0]) s[4 * j + 1] = -INFINITY;
    if (col >= lim[1]) s[4 * j + 2] = -INFINITY;
    if (col + 1 >= lim[1]) s[4 * j + 3] = -INFINITY;
  }
}

// s <- exp2(s * scale_log2 - max * scale_log2) in place, one FFMA and one EX2 per score; returns
// the factors by which earlier sums and O must be rescaled.
template <int kBN>
__device__ __forceinline__ void online_softmax(float (&s)[kBN / 2], RowState& st, float scale_log2, float (&corr)[2]) {
  float mx[2] = {st.max[0], st.max[1]};
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    mx[0] = fmaxf(mx[0], fmaxf(s[4 * j], s[4 * j + 1]));
    mx[1] = fmaxf(mx[1], fmaxf(s[4 * j + 2], s[4 * j + 3]));
  }
  float mx_scaled[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    // A row with no visible key so far keeps max = -inf; subtracting 0 keeps exp2(-inf) = 0.
    mx_scaled[r] = mx[r] == -INFINITY ? 0.f : mx[r] * scale_log2;
    corr[r] = exp2f(st.max[r] * scale_log2 - mx_scaled[r]);
    st.max[r] = mx[r];
  }
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s[4 * j + e] = exp2f(fmaf(s[4 * j + e], scale_log2, -mx_scaled[e >> 1]));
    sum[0] += s[4 * j] + s[4 * j + 1];
    sum[1] += s[4 * j + 2] + s[4 * j + 3];
  }
  st.sum[0] = st.sum[0] * corr[0] + sum[0];
  st.sum[1] = st.sum[1] * corr[1] + sum[1];
}

// Named barriers 1 .. kConsumers order the consumers' GEMM issue (kPingPong): consumer w waits on
// barrier 1 + w and hands over to the next, in a ring.
constexpr int kSchedBarrier = 1;

// O += P V for one tile of keys, V MN-major in shared memory.
template <typename T, int D>
__device__ __forceinline__ void issue_pv(float (&acc_o)[D / 2], const uint32_t (&pa)[Cfg<D>::kBlockN / 16][4],
                                         uint32_t v_tile) {
  const uint64_t dv = smem_desc(v_tile, Cfg<D>::kKVAtomBytes, 1024);
#pragma unroll
  for (int kk = 0; kk < Cfg<D>::kBlockN / 16; ++kk) wgmma_rs_tb<D, T>(acc_o, pa[kk], desc_add(dv, kk * 16 * 128), 1);
  wgmma_commit();
}

// O (normalized, in T) straight from the accumulators to global memory (each quad writes 16
// contiguous bytes of a row; the L2 merges them), and the LSE. No shared memory: the Q tile is
// already the next tile's.
template <typename T, int D>
__device__ __forceinline__ void store_output(const AttnParams& p, const Tile& t, const float (&acc_o)[D / 2],
                                             RowState& st, int warp, int lane) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    st.sum[r] += __shfl_xor_sync(0xffffffffu, st.sum[r], 1);
    st.sum[r] += __shfl_xor_sync(0xffffffffu, st.sum[r], 2);
  }
  const float inv[2] = {st.sum[0] > 0.f ? 1.f / st.sum[0] : 0.f, st.sum[1] > 0.f ? 1.f / st.sum[1] : 0.f};
  const int row = t.m0 + warp * 16 + (lane >> 2);
  T* o = static_cast<T*>(p.o) + t.b * p.o_batch_stride + t.h * p.o_head_stride + (lane & 3) * 2;
  T* o_a = o + static_cast<int64_t>(row) * p.o_row_stride;
  T* o_b = o_a + 8 * p.o_row_stride;
  const bool in_a = row < p.seqlen_q, in_b = row + 8 < p.seqlen_q;
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    if (in_a) *reinterpret_cast<uint32_t*>(o_a + 8 * j) = pack2<T>(acc_o[4 * j] * inv[0], acc_o[4 * j + 1] * inv[0]);
    if (in_b)
      *reinterpret_cast<uint32_t*>(o_b + 8 * j) = pack2<T>(acc_o[4 * j + 2] * inv[1], acc_o[4 * j + 3] * inv[1]);
  }
  if (p.lse != nullptr && (lane & 3) == 0) {
    float* lse = p.lse + t.b * p.lse_batch_stride + t.h * p.lse_head_stride;
#pragma unroll
    for (int r = 0; r < 2; ++r)
      if (row + 8 * r < p.seqlen_q)
        lse[row + 8 * r] = st.sum[r] > 0.f ? st.max[r] * p.softmax_scale + logf(st.sum[r]) : -INFINITY;
  }
}

// One tile for one consumer warpgroup (ctid: its thread's index among all the consumers' threads),
// its Q already landed; kt counts the key tiles the block consumed before this one (modulo the
// ring's period).
template <typename T, int D, bool kCausal, bool kPingPong>
__device__ __forceinline__ void consume_tile(const AttnParams& p, const Ring<D>& ring, const Tile& t, int ctid,
                                             uint32_t kt) {
  using C = Cfg<D>;
  constexpr int kBN = C::kBlockN;
  const int warp = ctid >> 5, lane = ctid & 31, wg = ctid >> 7;
  const int Sk = p.seqlen_k, diag = Sk - p.seqlen_q;
  const int row_a = t.m0 + warp * 16 + (lane >> 2);
  int lim[2] = {Sk, Sk};  // exclusive bound on the keys each of the thread's rows sees
  if constexpr (kCausal) lim[0] = min(Sk, row_a + diag + 1), lim[1] = min(Sk, row_a + 8 + diag + 1);
  const float scale_log2 = p.softmax_scale * 1.4426950408889634f;

  float acc_o[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) acc_o[i] = 0.f;
  RowState st;
  uint32_t pa[kBN / 16][4];  // P_(j-1), the A operand of the PV product in flight
  // The ring position of key tile i of this tile, from counters alone, as v6 took it from its loop
  // index. A position carried in registers from tile to tile (v8-v11) made ptxas keep it, and
  // every shared-memory address and wgmma descriptor derived from it, in vector registers: the
  // key loop ran 2-4x v6's R2UR moves and 1.3-2.7x its vector LOP3s (SASS at d256, d128, d64).
  auto at = [&](int i) {
    const uint32_t k = kt + static_cast<uint32_t>(i);
    RingPos<C::kStages> r;
    r.stage = static_cast<int>(k % C::kStages), r.phase = (k / C::kStages) & 1u;
    return r;
  };
  const uint32_t q_rows = ring.q_tile + wg * 64 * 128;
  const uint64_t dq = smem_desc(q_rows, 16, 1024);  // this warpgroup's Q rows, every tile
  if (kPingPong && wg == 0) named_arrive(kSchedBarrier, 256);  // the first consumer goes first
  float sc[kBN / 2];
  // The factors O must be scaled by before the next PV product (from the latest softmax). O is
  // scaled while the next S GEMM runs, as FA3 does, rather than between the PV product's end and
  // the next S GEMM's issue; fence_regs keeps the multiplications before the wgmma.fence that
  // follows (the compiler may otherwise move them past it, against PTX's rule for wgmma).
  float corr[2] = {1.f, 1.f};
  auto rescale_o = [&] {
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      acc_o[4 * j] *= corr[0], acc_o[4 * j + 1] *= corr[0];
      acc_o[4 * j + 2] *= corr[1], acc_o[4 * j + 3] *= corr[1];
    }
    fence_regs(acc_o);
  };
  // S_j's softmax into P_j (pa); the PV product before it must have finished before P is written.
  // `masked` (std::true_type or false_type): whether the tile may hold keys past the end or above
  // the diagonal. For false no mask code is compiled at all: ptxas had turned the mask's branch into
  // selects run on every tile (64 FSEL and 33 ISETP of each d64 iteration's 630 instructions in v6,
  // of 600 in v13).
  auto softmax_to_p = [&](int it, bool pv_in_flight, auto masked) {
    if constexpr (decltype(masked)::value) {
      const int n0 = (t.n_blocks - 1 - it) * kBN;
      if (n0 + kBN > Sk || (kCausal && n0 + kBN - 1 > t.m0 + diag)) mask_tile<kBN>(sc, n0, lim, lane);
    }
    online_softmax<kBN>(sc, st, scale_log2, corr);
    if (pv_in_flight) {  // P and O are the PV product's until it ends
      wgmma_wait<0>();
      fence_regs(acc_o);
      fence_regs(pa);
      mbar_arrive_first(ring.v_empty(at(it - 1).stage), ctid);
    }
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {  // P's k-step kk: the accumulators of n-tiles 2kk, 2kk + 1
      pa[kk][0] = pack2<T>(sc[8 * kk + 0], sc[8 * kk + 1]);
      pa[kk][1] = pack2<T>(sc[8 * kk + 2], sc[8 * kk + 3]);
      pa[kk][2] = pack2<T>(sc[8 * kk + 4], sc[8 * kk + 5]);
      pa[kk][3] = pack2<T>(sc[8 * kk + 6], sc[8 * kk + 7]);
    }
  };
  auto issue_s = [&](int s) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t q_step = (kk >> 2) * C::kQAtomBytes + (kk & 3) * 32;
      const uint32_t k_step = (kk >> 2) * C::kKVAtomBytes + (kk & 3) * 32;
      wgmma_ss<kBN, T>(sc, desc_add(dq, q_step), desc_add(smem_desc(ring.k_tile(s), 16, 1024), k_step),
                       kk > 0);
    }
    wgmma_commit();
  };
  // The first key tile apart: S_0 has no PV product beside it. (A branch around a wgmma inside the
  // loop over tiles makes ptxas serialize every wgmma: C7520.)
  mbar_wait(ring.k_full(at(0).stage), at(0).phase);
  if (kPingPong) named_sync(kSchedBarrier + wg, 256);
  issue_s(at(0).stage);
  wgmma_wait<0>();
  fence_regs(sc);
  if (kPingPong) named_arrive(kSchedBarrier + (wg + 1) % C::kConsumers, 256);
  mbar_arrive_first(ring.k_empty(at(0).stage), ctid);
  softmax_to_p(0, false, std::true_type{});

  // Key tile `it` (from the top) may need the mask only while (n_blocks - it) * kBN > m0 + diag + 1:
  // past the end only at it = 0, above the diagonal on the first n_masked. Counting more tiles as
  // masked is safe (the mask checks each key); fewer is not.
  int n_masked = 1;
  if constexpr (kCausal) n_masked = max(1, t.n_blocks - max(0, t.m0 + diag + 1) / kBN);
  auto step = [&](int it, auto masked) {
    const RingPos<C::kStages> cur = at(it), prev = at(it - 1);
    const int s = cur.stage;
    mbar_wait(ring.k_full(s), cur.phase);
    mbar_wait(ring.v_full(prev.stage), prev.phase);
    if (kPingPong) named_sync(kSchedBarrier + wg, 256);
    issue_s(s);
    rescale_o();
    wgmma_fence();  // O was written outside the wgmmas
    issue_pv<T, D>(acc_o, pa, ring.v_tile(prev.stage));
    wgmma_wait<1>();  // S_j is done; the PV product may still run
    fence_regs(sc);
    // The next consumer's turn: its GEMMs queue behind our PV product. (Arriving before the wait
    // would put a non-wgmma instruction inside the wgmma pipeline stage, which ptxas serializes.)
    if (kPingPong) named_arrive(kSchedBarrier + (wg + 1) % C::kConsumers, 256);
    mbar_arrive_first(ring.k_empty(s), ctid);
    softmax_to_p(it, true, masked);
  };
  for (int it = 1; it < min(n_masked, t.n_blocks); ++it) step(it, std::true_type{});
  for (int it = n_masked; it < t.n_blocks; ++it) step(it, std::false_type{});
  // The last S GEMM, this tile's last read of Q, finished in the loop's last wait. (Arriving there
  // would be a branch with the PV product in flight, which makes ptxas serialize every wgmma.)
  mbar_arrive(ring.q_empty());
  const RingPos<C::kStages> prev = at(t.n_blocks - 1);
  mbar_wait(ring.v_full(prev.stage), prev.phase);
  if (kPingPong) named_sync(kSchedBarrier + wg, 256);
  rescale_o();
  wgmma_fence();
  issue_pv<T, D>(acc_o, pa, ring.v_tile(prev.stage));
  wgmma_wait<0>();
  fence_regs(acc_o);
  mbar_arrive_first(ring.v_empty(prev.stage), ctid);
  // The last consumer's last turn hands over to nobody: every sync above has its arrival. (A
  // branch between a wgmma and its wait would serialize the wgmmas, so this comes after.) The
  // first consumer's next tile starts with its own arrival, so the turns stay balanced per tile.
  if (kPingPong && wg + 1 < C::kConsumers) named_arrive(kSchedBarrier + wg + 1, 256);
  store_output<T, D>(p, t, acc_o, st, warp, lane);
}

// The consumers take each tile the producer publishes with its Q, until it publishes none; a tile
// whose rows see no key is written here (O = 0, LSE = -inf) and takes no stage.
template <typename T, int D, bool kCausal, bool kPingPong>
__device__ __forceinline__ void consume(const AttnParams& p, const Ring<D>& ring, int ctid) {
  using C = Cfg<D>;
  uint32_t kt = 0;  // key tiles consumed so far, modulo the ring's period (2 x stages)
  for (uint32_t q_phase = 0;; q_phase ^= 1) {
    mbar_wait(ring.q_full(), q_phase);
    const Tile t = ld_tile(ring.tile_slot());
    if (t.b < 0) return;
    if (t.n_blocks == 0) {
      write_masked_rows<T, D, C::kBlockM>(p, t, ctid, 128 * C::kConsumers);
      mbar_arrive(ring.q_empty());
      continue;
    }
    consume_tile<T, D, kCausal, kPingPong>(p, ring, t, ctid, kt);
    kt = (kt + static_cast<uint32_t>(t.n_blocks)) % (2 * C::kStages);
  }
}

template <typename T, int D, bool kCausal, bool kPingPong>
__global__ void __launch_bounds__(Cfg<D>::kThreads, 1)
    attn_fwd_kernel(const __grid_constant__ AttnParams p, const __grid_constant__ TensorMaps maps,
                    unsigned counter_slot) {
  using C = Cfg<D>;
  extern __shared__ uint8_t smem_raw[];
  const Ring<D> ring{(smem_u32(smem_raw) + 1023) & ~1023u};
  if (threadIdx.x == 0) ring.init();
  __syncthreads();
  if (threadIdx.x < 128) {
    regs_dec<C::kProducerRegs>();
    if (threadIdx.x == 0) produce<D, kCausal>(p, maps, ring);
    if (threadIdx.x == 32) schedule<D, kCausal>(p, ring, counter_slot);
    return;
  }
  regs_inc<C::kConsumerRegs>();
  consume<T, D, kCausal, kPingPong>(p, ring, threadIdx.x - 128);
}

// ---- host -----------------------------------------------------------------------------------

using EncodeTiled = PFN_cuTensorMapEncodeTiled_v12000;

// The driver's encoder, looked up once (a function pointer, not state about any call).
EncodeTiled tensor_map_encoder() {
  static const EncodeTiled fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      return static_cast<EncodeTiled>(nullptr);
    return reinterpret_cast<EncodeTiled>(f);
  }();
  return fn;
}

// (head dim, rows, heads, batch) with strides in elements; boxes of 64 x box_rows, 128-byte
// swizzle, rows past the end read as zeros. False if the driver refuses the layout.
bool encode_map(CUtensorMap* map, const void* base, DType dtype, int d, int rows, int heads, int batch,
                int64_t row_stride, int64_t head_stride, int64_t batch_stride, unsigned box_rows) {
  const EncodeTiled encode = tensor_map_encoder();
  if (encode == nullptr || rows <= 0) return false;
  // A stride of a dimension of extent 1 is never stepped; give the driver a valid one.
  auto bytes = [&](int64_t stride, int extent) {
    return static_cast<cuuint64_t>(extent == 1 && stride <= 0 ? row_stride : stride) * 2;
  };
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[3] = {bytes(row_stride, rows), bytes(head_stride, heads), bytes(batch_stride, batch)};
  const cuuint32_t box[4] = {64, box_rows, 1, 1};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  return encode(map, dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
                const_cast<void*>(base), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <int D>
bool encode_maps(const AttnParams& p, TensorMaps& m) {
  constexpr unsigned kQRows = Cfg<D>::kBlockM, kKVRows = Cfg<D>::kBlockN;
  return encode_map(&m.q, p.q, p.dtype, D, p.seqlen_q, p.heads_q, p.batch, p.q_row_stride, p.q_head_stride,
                    p.q_batch_stride, kQRows) &&
         encode_map(&m.k, p.k, p.dtype, D, p.seqlen_k, p.heads_kv, p.batch, p.k_row_stride, p.k_head_stride,
                    p.k_batch_stride, kKVRows) &&
         encode_map(&m.v, p.v, p.dtype, D, p.seqlen_k, p.heads_kv, p.batch, p.v_row_stride, p.v_head_stride,
                    p.v_batch_stride, kKVRows);
}

// Calls take the tile counters in turn, so calls running at once on different streams use different
// counters unless more than kCounters are in flight together. Not covered: one captured CUDA graph
// launched twice at once (its calls share the counter captured with it); their tiles would mix.
unsigned next_counter_slot() {
  static std::atomic<unsigned> calls{0};
  return calls.fetch_add(1, std::memory_order_relaxed) % kCounters;
}

// Whether the consumers take turns issuing their GEMMs (see the namespace comment).
constexpr bool kPingPong = true;

// setmaxnreg moves registers within the block's launch allocation (Cfg's static_assert assumes
// ptxas gave the kernel the ceiling, 65,536 / threads); with fewer, the consumers' increase would
// wait forever, so the launch is refused instead. Checked once per kernel.
template <int D, typename Kernel>
cudaError_t check_register_budget(Kernel kernel) {
  using C = Cfg<D>;
  static const cudaError_t verdict = [kernel] {
    cudaFuncAttributes a{};
    if (const cudaError_t err = cudaFuncGetAttributes(&a, kernel); err != cudaSuccess) return err;
    const int pool = (a.numRegs + 7) / 8 * 8 * C::kThreads;
    return pool >= 128 * C::kProducerRegs + 128 * C::kConsumers * C::kConsumerRegs ? cudaSuccess
                                                                                   : cudaErrorInvalidConfiguration;
  }();
  return verdict;
}

template <typename T, int D, bool kCausal>
cudaError_t launch_impl(const AttnParams& p, const TensorMaps& maps, cudaStream_t stream) {
  using C = Cfg<D>;
  auto* kernel = attn_fwd_kernel<T, D, kCausal, kPingPong>;
  cudaError_t err = check_register_budget<D>(kernel);
  if (err != cudaSuccess) return err;
  if ((err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmemBytes)) != cudaSuccess)
    return err;
  // One block per SM (its shared memory allows no second), never more blocks than tiles.
  int device = 0, sms = 0;
  if ((err = cudaGetDevice(&device)) != cudaSuccess) return err;
  if ((err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return err;
  const int64_t tiles = static_cast<int64_t>(p.batch) * p.heads_q * ((p.seqlen_q + C::kBlockM - 1) / C::kBlockM);
  if (tiles > INT32_MAX) return cudaErrorInvalidConfiguration;
  const unsigned grid = static_cast<unsigned>(tiles < sms ? tiles : sms);
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(p, maps, next_counter_slot());
  return cudaGetLastError();
}

// The Hopper path where the driver can describe the tensors to TMA, else the FA2 path.
template <int D>
cudaError_t dispatch(const AttnParams& p, cudaStream_t stream) {
  TensorMaps maps;
  if (p.seqlen_k == 0 || !encode_maps<D>(p, maps)) return candidate_fa2::dispatch<D>(p, stream);
  if (p.dtype == DType::bf16)
    return p.causal ? launch_impl<__nv_bfloat16, D, true>(p, maps, stream)
                    : launch_impl<__nv_bfloat16, D, false>(p, maps, stream);
  return p.causal ? launch_impl<__half, D, true>(p, maps, stream) : launch_impl<__half, D, false>(p, maps, stream);
}

}  // namespace candidate_hopper

namespace candidate_launch {

using attngate::AttnParams;
using attngate::DType;

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0; }

cudaError_t launch(const AttnParams& p, cudaStream_t stream) {
  if (p.batch < 0 || p.seqlen_q < 0 || p.seqlen_k < 0 || p.heads_q <= 0 || p.heads_kv <= 0 ||
      p.heads_q % p.heads_kv != 0)
    return cudaErrorInvalidValue;
  if (p.batch == 0 || p.seqlen_q == 0) return cudaSuccess;
  if (p.dtype != DType::bf16 && p.dtype != DType::fp16) return cudaErrorInvalidValue;
  // Each row's max is taken over the raw scores: the max of the scaled ones only for a positive scale.
  if (!(p.softmax_scale > 0.f)) return cudaErrorInvalidValue;
  const int64_t strides[] = {p.q_batch_stride, p.q_row_stride, p.q_head_stride,
                             p.k_batch_stride, p.k_row_stride, p.k_head_stride,
                             p.v_batch_stride, p.v_row_stride, p.v_head_stride,
                             p.o_batch_stride, p.o_row_stride, p.o_head_stride};
  for (const int64_t s : strides)
    if (s % 8 != 0) return cudaErrorInvalidValue;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.o))
    return cudaErrorInvalidValue;
  switch (p.head_dim) {
    case 64: return candidate_hopper::dispatch<64>(p, stream);
    case 128: return candidate_hopper::dispatch<128>(p, stream);
    case 256: return candidate_hopper::dispatch<256>(p, stream);
    default: return cudaErrorInvalidValue;
  }
}

ATTNGATE_REGISTER_KERNEL("candidate",
                         "Kernel under optimization: a persistent, warp-specialized TMA + wgmma (Hopper) kernel "
                         "for head dims 64, 128 and 256; initial's FA2-style mma.sync path where TMA cannot "
                         "describe the tensors",
                         {DType::bf16, DType::fp16}, {64, 128, 256}, 80, launch);

}  // namespace candidate_launch
