/* attngate plugin ABI, version 1: how a kernel built outside attngate (a user's FlashAttention-3
 * build, a vendor kernel) offers itself to attngate_verify and attngate_bench.
 *
 * Plain C (C99 and C++), fixed-width types only, no attngate or CUDA headers: a plugin is a shared
 * library that exports one function,
 *
 *     int32_t attngate_plugin_get(uint32_t host_abi_version,
 *                                 const struct attngate_plugin_info** kernels, uint32_t* count);
 *
 * which, when host_abi_version equals the ATTNGATE_PLUGIN_ABI_VERSION it was built with, points
 * *kernels at an array of *count kernel descriptions (static storage, alive until the library is
 * unloaded) and returns ATTNGATE_PLUGIN_OK; otherwise it returns ATTNGATE_PLUGIN_ERR_ABI_VERSION
 * and touches nothing. attngate checks the version again in every description. Loading must not
 * touch the GPU: attngate loads plugins on machines without one (to list tests) and calls
 * attngate_plugin_get right after dlopen.
 *
 * Each kernel registers as "plugin_<name>" and gets the same generated verify tests and benchmarks
 * as a built-in kernel (kernels/plugin/README.md). The semantics a launch must implement are
 * attngate's (kernels/api/include/attngate/params.hpp): BSHD layout, element strides, softmax over
 * softmax_scale * Q.K^T, GQA by heads_q / heads_kv groups, causal masks aligned bottom-right (key j
 * visible to query i iff j <= i + seqlen_k - seqlen_q), fully masked rows O = 0 and LSE = -inf,
 * LSE in natural log, fp32 [batch, heads_q, seqlen_q] (row stride 1).
 *
 * Versioning: any change to a struct below, or to the meaning of a field, makes a new ABI version;
 * a host loads only plugins of its own version.
 */
#ifndef ATTNGATE_PLUGIN_ABI_H
#define ATTNGATE_PLUGIN_ABI_H

#include <stdint.h>

#define ATTNGATE_PLUGIN_ABI_VERSION 1
#define ATTNGATE_PLUGIN_ENTRY_POINT "attngate_plugin_get"

#if defined(_WIN32)
#define ATTNGATE_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ATTNGATE_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of Q, K, V and O (LSE is always fp32). Same values as attngate::DType. */
enum attngate_plugin_dtype { ATTNGATE_PLUGIN_BF16 = 0, ATTNGATE_PLUGIN_FP16 = 1 };

/* attngate_plugin_get's results. */
enum attngate_plugin_status {
  ATTNGATE_PLUGIN_OK = 0,
  ATTNGATE_PLUGIN_ERR_ABI_VERSION = 1, /* the host speaks another ABI version */
  ATTNGATE_PLUGIN_ERR_INIT = 2         /* the plugin could not initialize (say why in stderr) */
};

/* launch() returns a cudaError_t value: 0 (cudaSuccess) once the work is enqueued, or an error.
 * cudaErrorNotSupported (801) means "this problem is outside what the kernel supports"; attngate
 * then reports the case as SKIPPED with the text of last_error(). */
#define ATTNGATE_PLUGIN_LAUNCH_OK 0
#define ATTNGATE_PLUGIN_LAUNCH_NOT_SUPPORTED 801

/* One attention-forward problem; mirrors attngate::AttnParams field by field. Strides are in
 * elements; the last dimension (head_dim) of Q, K, V and O is contiguous, as is LSE's seqlen. */
struct attngate_plugin_params {
  uint32_t struct_size; /* sizeof(struct attngate_plugin_params) as the host compiled it */
  uint32_t reserved;    /* 0 */

  const void* q; /* [batch, seqlen_q, heads_q, head_dim] */
  const void* k; /* [batch, seqlen_k, heads_kv, head_dim] */
  const void* v; /* [batch, seqlen_k, heads_kv, head_dim] */
  void* o;       /* [batch, seqlen_q, heads_q, head_dim], dtype of q */
  float* lse;    /* [batch, heads_q, seqlen_q] */

  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t lse_batch_stride, lse_head_stride;

  int32_t batch;
  int32_t seqlen_q;
  int32_t seqlen_k;
  int32_t heads_q;
  int32_t heads_kv;
  int32_t head_dim;

  float softmax_scale;
  int32_t causal; /* 0 or 1 */
  int32_t dtype;  /* enum attngate_plugin_dtype */
};

/* Enqueues the whole forward pass on `stream` (a cudaStream_t) and returns without synchronizing.
 * Must not allocate or synchronize on the timed path (build caches on a problem's first call). */
typedef int32_t (*attngate_plugin_launch_fn)(const struct attngate_plugin_params* params, void* stream);

/* Why the calling thread's last launch failed or declined, or NULL; may be NULL itself. */
typedef const char* (*attngate_plugin_last_error_fn)(void);

struct attngate_plugin_info {
  uint32_t abi_version;    /* ATTNGATE_PLUGIN_ABI_VERSION the plugin was built with */
  const char* name;        /* [A-Za-z0-9_]+, at most 64 characters; registered as "plugin_<name>" */
  const char* description; /* free text: what it is, version, build */
  const int32_t* dtypes;   /* enum attngate_plugin_dtype values it supports */
  uint32_t num_dtypes;
  const int32_t* head_dims; /* head dims it supports (attngate's scenarios use 64, 128, 256) */
  uint32_t num_head_dims;
  int32_t min_sm; /* lowest compute capability it runs on, major*10+minor (90 for sm_90a) */
  attngate_plugin_launch_fn launch;
  attngate_plugin_last_error_fn last_error; /* may be NULL */
};

typedef int32_t (*attngate_plugin_get_fn)(uint32_t host_abi_version, const struct attngate_plugin_info** kernels,
                                          uint32_t* count);

/* Every plugin defines this (with ATTNGATE_PLUGIN_EXPORT). */
ATTNGATE_PLUGIN_EXPORT int32_t attngate_plugin_get(uint32_t host_abi_version,
                                                   const struct attngate_plugin_info** kernels, uint32_t* count);

#ifdef __cplusplus
}
#endif

#endif /* ATTNGATE_PLUGIN_ABI_H */
