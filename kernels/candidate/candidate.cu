// Attention forward for sm_90a, the candidate under optimization (its campaign: README.md).
//
// Head dim 128 runs the Hopper path below (warpgroup MMA on swizzled shared memory); head dims 64
// and 256 still run the FlashAttention-2-style path it started from (mma.sync m16n8k16):
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
// Hopper path (head dim 128; written for 64 too): warpgroup MMA (wgmma) on 128-byte-swizzled shared memory.
//
// One block of two warpgroups (256 threads) computes 128 query rows of one (batch, query head);
// warpgroup g owns rows 64g..64g+63 for the whole pass. S = Q K^T is a wgmma with both operands
// in shared memory (Q and K rows K-major); O += P V is a wgmma with P from registers (the S
// accumulator layout is the A-fragment layout, as with mma.sync) and V read MN-major (transposed
// by the instruction). K/V tiles of 128 keys stream through a three-stage cp.async ring; every tile
// is stored as head-dim atoms of 64 elements x rows, 128 bytes per row, 16-byte chunks XOR-swizzled
// by row % 8 (the layout wgmma's 128-byte swizzle mode reads), so copies and MMAs are both free of
// bank conflicts.
namespace candidate_hopper {

using attngate::AttnParams;
using candidate_fa2::cp_async_16;
using candidate_fa2::cp_async_commit;
using candidate_fa2::cp_async_wait;
using candidate_fa2::pack2;
using candidate_fa2::smem_u32;

template <int D>
struct Cfg {
  static constexpr int kThreads = 256;  // two consumer warpgroups
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = 128;
  static constexpr int kAtoms = D / 64;            // 64-element (128-byte) head-dim atoms per row
  static constexpr int kQBytes = kBlockM * D * 2;  // one tile of 128 rows
  static constexpr int kTileBytes = kBlockN * D * 2;
  static constexpr int kAtomBytes = kBlockN * 128;  // one atom of a 128-row tile
  // Three stages of (K, V): tile j+1 lands while S_j runs and tile j-1's V is still read by P_{j-1} V.
  static constexpr int kStages = 3;
  static constexpr int kSmemBytes = kQBytes + 2 * kStages * kTileBytes + 1024;  // 1 KB to align
};

// Byte offset of 16-byte chunk `chunk` (of D / 8) of row `row` in a 128-row tile.
__device__ __forceinline__ uint32_t tile_offset(int row, int chunk) {
  return static_cast<uint32_t>((chunk >> 3) * (128 * 128) + row * 128 + (((chunk & 7) ^ (row & 7)) << 4));
}

// 128 rows x D columns from global row `row0`; rows >= row_limit are zero-filled.
template <typename T, int D>
__device__ __forceinline__ void load_tile(uint32_t s_base, const T* g, int64_t row_stride, int row0, int row_limit,
                                          int tid) {
  constexpr int kChunks = D / 8;
  constexpr int kStep = 256 / kChunks;
  const int c = tid % kChunks;
#pragma unroll
  for (int r = tid / kChunks; r < 128; r += kStep) {
    const int grow = row0 + r;
    const bool ok = grow < row_limit;
    cp_async_16(s_base + tile_offset(r, c), g + static_cast<int64_t>(ok ? grow : 0) * row_stride + c * 8, ok);
  }
}

// Shared-memory matrix descriptor in 128-byte swizzle mode: start address, leading and stride
// byte offsets, each in 16-byte units.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lead_bytes, uint32_t stride_bytes) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lead_bytes & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((stride_bytes & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// Copies by the generic proxy (cp.async, st.shared) become visible to wgmma's async proxy.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
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

template <>
__device__ __forceinline__ void wgmma_ss<64, __nv_bfloat16>(float (&d)[32], uint64_t da, uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(accumulate));
}
template <>
__device__ __forceinline__ void wgmma_rs_tb<64, __nv_bfloat16>(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

template <>
__device__ __forceinline__ void wgmma_ss<64, __half>(float (&d)[32], uint64_t da, uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(accumulate));
}
template <>
__device__ __forceinline__ void wgmma_rs_tb<64, __half>(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

template <>
__device__ __forceinline__ void wgmma_ss<128, __nv_bfloat16>(float (&d)[64], uint64_t da, uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(accumulate));
}
template <>
__device__ __forceinline__ void wgmma_rs_tb<128, __nv_bfloat16>(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

template <>
__device__ __forceinline__ void wgmma_ss<128, __half>(float (&d)[64], uint64_t da, uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(accumulate));
}
template <>
__device__ __forceinline__ void wgmma_rs_tb<128, __half>(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}


template <typename T, int D, bool kCausal>
__global__ void __launch_bounds__(256, 1) attn_fwd_kernel(const __grid_constant__ AttnParams p) {
  using C = Cfg<D>;
  constexpr int kBM = C::kBlockM, kBN = C::kBlockN;
  extern __shared__ uint8_t smem_raw[];
  // The swizzle works on address bits, so every tile starts on a 1024-byte boundary.
  const uint32_t sQ = (smem_u32(smem_raw) + 1023) & ~1023u;
  uint8_t* smem = smem_raw + (sQ - smem_u32(smem_raw));
  const uint32_t sKV = sQ + C::kQBytes;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, wg = tid >> 7;
  const int b = blockIdx.x / p.heads_q;
  const int h = blockIdx.x - b * p.heads_q;
  const int hk = h / (p.heads_q / p.heads_kv);
  const int m0 = (gridDim.y - 1 - blockIdx.y) * kBM;  // longest causal rows first
  const int Sq = p.seqlen_q, Sk = p.seqlen_k, diag = Sk - Sq;

  const T* q = static_cast<const T*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  const T* k = static_cast<const T*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const T* v = static_cast<const T*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  T* o = static_cast<T*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;
  float* lse = p.lse == nullptr ? nullptr : p.lse + b * p.lse_batch_stride + h * p.lse_head_stride;

  int n_end = Sk;
  if constexpr (kCausal) n_end = min(Sk, m0 + kBM + diag);
  const int n_blocks = n_end > 0 ? (n_end + kBN - 1) / kBN : 0;
  if (n_blocks == 0) {  // every row fully masked: O = 0, LSE = -inf
    constexpr int kChunks = D / 8;
    for (int i = tid; i < kBM * kChunks; i += C::kThreads) {
      const int r = i / kChunks;
      if (m0 + r < Sq)
        *reinterpret_cast<uint4*>(o + static_cast<int64_t>(m0 + r) * p.o_row_stride + (i % kChunks) * 8) =
            make_uint4(0, 0, 0, 0);
    }
    if (lse != nullptr && tid < kBM && m0 + tid < Sq) lse[m0 + tid] = -INFINITY;
    return;
  }

  int n_block = n_blocks - 1;  // from the diagonal down, so the masked tiles come first
  load_tile<T, D>(sQ, q, p.q_row_stride, m0, Sq, tid);
  load_tile<T, D>(sKV, k, p.k_row_stride, n_block * kBN, Sk, tid);
  load_tile<T, D>(sKV + C::kTileBytes, v, p.v_row_stride, n_block * kBN, Sk, tid);
  cp_async_commit();

  float acc_o[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) acc_o[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  const float scale_log2 = p.softmax_scale * 1.4426950408889634f;
  const int row_a = m0 + warp * 16 + (lane >> 2);  // this thread's rows: row_a and row_a + 8
  int lim[2] = {Sk, Sk};
  if constexpr (kCausal) lim[0] = min(Sk, row_a + diag + 1), lim[1] = min(Sk, row_a + 8 + diag + 1);

  // Intra-warpgroup overlap: iteration j issues S_j = Q K_j and then O += P_{j-1} V_{j-1}, waits
  // for S_j only, and runs the softmax of S_j while the tensor cores do the PV product.
  uint32_t pa[kBN / 16][4];  // P_{j-1}, the A operand of the PV product in flight
  auto stage = [&](int j) { return sKV + (j % C::kStages) * 2 * C::kTileBytes; };
  for (int it = 0; it < n_blocks; ++it, --n_block) {
    const uint32_t sK = stage(it);
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();  // tile `it` visible to all; every warpgroup done with tile it-2's stage
    if (n_block > 0) {
      const uint32_t sNext = stage(it + 1);
      load_tile<T, D>(sNext, k, p.k_row_stride, (n_block - 1) * kBN, Sk, tid);
      load_tile<T, D>(sNext + C::kTileBytes, v, p.v_row_stride, (n_block - 1) * kBN, Sk, tid);
    }
    cp_async_commit();

    // S = Q K^T: this warpgroup's 64 rows x 128 keys, D / 16 k-steps of 16.
    float s[kBN / 2];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t step = (kk >> 2) * C::kAtomBytes + (kk & 3) * 32;
      wgmma_ss<kBN, T>(s, smem_desc(sQ + wg * 64 * 128 + step, 16, 1024), smem_desc(sK + step, 16, 1024), kk > 0);
    }
    wgmma_commit();
    if (it > 0) {
      const uint32_t sVprev = stage(it - 1) + C::kTileBytes;
#pragma unroll
      for (int kk = 0; kk < kBN / 16; ++kk)
        wgmma_rs_tb<D, T>(acc_o, pa[kk], smem_desc(sVprev + kk * 16 * 128, C::kAtomBytes, 1024), 1);
      wgmma_commit();
      wgmma_wait<1>();  // S_j is done; the PV product may still run
    } else {
      wgmma_wait<0>();
    }
    fence_regs(s);

    // s[4j + e]: row (e < 2 ? row_a : row_a + 8), column n0 + 8j + 2 (lane % 4) + (e & 1).
    const int n0 = n_block * kBN;
    if (n0 + kBN > Sk || (kCausal && n0 + kBN - 1 > m0 + diag)) {
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        const int col = n0 + j * 8 + (lane & 3) * 2;
        if (col >= lim[0]) s[4 * j + 0] = -INFINITY;
        if (col + 1 >= lim[0]) s[4 * j + 1] = -INFINITY;
        if (col >= lim[1]) s[4 * j + 2] = -INFINITY;
        if (col + 1 >= lim[1]) s[4 * j + 3] = -INFINITY;
      }
    }

    // Online softmax in log2 space, as in the FA2 path.
    float mx[2] = {row_max[0], row_max[1]};
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
      mx[0] = fmaxf(mx[0], fmaxf(s[4 * j], s[4 * j + 1]));
      mx[1] = fmaxf(mx[1], fmaxf(s[4 * j + 2], s[4 * j + 3]));
    }
    float corr[2], mx_scaled[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      mx_scaled[r] = mx[r] == -INFINITY ? 0.f : mx[r] * scale_log2;
      corr[r] = exp2f(row_max[r] * scale_log2 - mx_scaled[r]);
      row_max[r] = mx[r];
    }
    float sum[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[4 * j + e] = exp2f(fmaf(s[4 * j + e], scale_log2, -mx_scaled[e >> 1]));
      sum[0] += s[4 * j] + s[4 * j + 1];
      sum[1] += s[4 * j + 2] + s[4 * j + 3];
    }
    row_sum[0] = row_sum[0] * corr[0] + sum[0];
    row_sum[1] = row_sum[1] * corr[1] + sum[1];

    // The PV product of P_{j-1} must finish before O is rescaled and P_j replaces P_{j-1}.
    wgmma_wait<0>();
    fence_regs(acc_o);
    fence_regs(pa);
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      acc_o[4 * j] *= corr[0], acc_o[4 * j + 1] *= corr[0];
      acc_o[4 * j + 2] *= corr[1], acc_o[4 * j + 3] *= corr[1];
    }
    // P's k-step kk is the accumulators of n-tiles 2kk and 2kk + 1.
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      pa[kk][0] = pack2<T>(s[8 * kk + 0], s[8 * kk + 1]);
      pa[kk][1] = pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
      pa[kk][2] = pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
      pa[kk][3] = pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
    }
  }
  {  // the last tile's PV product
    const uint32_t sVlast = stage(n_blocks - 1) + C::kTileBytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk)
      wgmma_rs_tb<D, T>(acc_o, pa[kk], smem_desc(sVlast + kk * 16 * 128, C::kAtomBytes, 1024), 1);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(acc_o);
    fence_regs(pa);
  }

  // Epilogue: normalize, stage each warp's 16 rows in its own rows of the Q tile (same layout),
  // then store whole 16-byte chunks.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
  }
  const float inv[2] = {row_sum[0] > 0.f ? 1.f / row_sum[0] : 0.f, row_sum[1] > 0.f ? 1.f / row_sum[1] : 0.f};
  __syncthreads();  // every warpgroup's last read of Q is done
  const int g = warp * 16 + (lane >> 2);
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    *reinterpret_cast<uint32_t*>(smem + tile_offset(g, j) + (lane & 3) * 4) =
        pack2<T>(acc_o[4 * j] * inv[0], acc_o[4 * j + 1] * inv[0]);
    *reinterpret_cast<uint32_t*>(smem + tile_offset(g + 8, j) + (lane & 3) * 4) =
        pack2<T>(acc_o[4 * j + 2] * inv[1], acc_o[4 * j + 3] * inv[1]);
  }
  __syncwarp();
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int i = lane; i < 16 * kChunks; i += 32) {
    const int r = warp * 16 + i / kChunks, c = i % kChunks;
    const uint4 val = *reinterpret_cast<const uint4*>(smem + tile_offset(r, c));
    if (m0 + r < Sq) *reinterpret_cast<uint4*>(o + static_cast<int64_t>(m0 + r) * p.o_row_stride + c * 8) = val;
  }
  if (lse != nullptr && (lane & 3) == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row_a + r * 8;
      if (row < Sq) lse[row] = row_sum[r] > 0.f ? row_max[r] * p.softmax_scale + logf(row_sum[r]) : -INFINITY;
    }
  }
}

template <typename T, int D, bool kCausal>
cudaError_t launch_impl(const AttnParams& p, cudaStream_t stream) {
  using C = Cfg<D>;
  auto* kernel = attn_fwd_kernel<T, D, kCausal>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmemBytes);
  if (err != cudaSuccess) return err;
  const int m_blocks = (p.seqlen_q + C::kBlockM - 1) / C::kBlockM;
  if (m_blocks > 65535) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(p.batch) * static_cast<unsigned>(p.heads_q), m_blocks);
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace candidate_hopper

namespace candidate_launch {

using attngate::AttnParams;
using attngate::DType;

template <int D>
cudaError_t dispatch_hopper(const AttnParams& p, cudaStream_t stream) {
  if (p.dtype == DType::bf16)
    return p.causal ? candidate_hopper::launch_impl<__nv_bfloat16, D, true>(p, stream)
                    : candidate_hopper::launch_impl<__nv_bfloat16, D, false>(p, stream);
  if (p.dtype == DType::fp16)
    return p.causal ? candidate_hopper::launch_impl<__half, D, true>(p, stream) : candidate_hopper::launch_impl<__half, D, false>(p, stream);
  return cudaErrorInvalidValue;
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0; }

cudaError_t launch(const AttnParams& p, cudaStream_t stream) {
  if (p.batch < 0 || p.seqlen_q < 0 || p.seqlen_k < 0 || p.heads_q <= 0 || p.heads_kv <= 0 ||
      p.heads_q % p.heads_kv != 0)
    return cudaErrorInvalidValue;
  if (p.batch == 0 || p.seqlen_q == 0) return cudaSuccess;
  const int64_t strides[] = {p.q_batch_stride, p.q_row_stride, p.q_head_stride,
                             p.k_batch_stride, p.k_row_stride, p.k_head_stride,
                             p.v_batch_stride, p.v_row_stride, p.v_head_stride,
                             p.o_batch_stride, p.o_row_stride, p.o_head_stride};
  for (const int64_t s : strides)
    if (s % 8 != 0) return cudaErrorInvalidValue;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.o))
    return cudaErrorInvalidValue;
  switch (p.head_dim) {
    case 64: return candidate_fa2::dispatch<64>(p, stream);  // v1's wgmma path lost at d64 up to 4k tokens
    case 128: return dispatch_hopper<128>(p, stream);
    case 256: return candidate_fa2::dispatch<256>(p, stream);
    default: return cudaErrorInvalidValue;
  }
}

ATTNGATE_REGISTER_KERNEL("candidate",
                         "Kernel under optimization: wgmma (Hopper) path for head dim 128, "
                         "the FA2-style mma.sync path of initial for 64 and 256",
                         {DType::bf16, DType::fp16}, {64, 128, 256}, 80, launch);

}  // namespace candidate_launch
