/* Tiny plugins for the loader's CPU tests, one shared library per variant (compiled as C99, which
 * also proves plugin_abi.h is plain C). None of them touches CUDA.
 *   FAKE_GOOD (with FAKE_PREFIX): two well-formed kernels, <prefix>_a and <prefix>_b, whose launch
 *     records the params it got and returns what fake_set_result asked for;
 *   FAKE_NO_ENTRY: exports no attngate_plugin_get;
 *   FAKE_REFUSE_VERSION: built "for ABI 2": refuses the host's version, as a correct plugin would;
 *   FAKE_INFO_VERSION: accepts, but its description claims ABI 2 (a plugin that forgot to check);
 *   FAKE_BAD_NAME: a kernel name with a '-' (it would break test names). */
#include <stddef.h>
#include <string.h>

#include "attngate/plugin_abi.h"

#ifndef FAKE_NO_ENTRY

static const int32_t kDtypes[] = {ATTNGATE_PLUGIN_BF16, ATTNGATE_PLUGIN_FP16};
static const int32_t kHeadDims[] = {64, 128};

static struct attngate_plugin_params g_seen;
static int32_t g_result = 0;
static const char* g_message = NULL;

static int32_t fake_launch(const struct attngate_plugin_params* p, void* stream) {
  (void)stream;
  memcpy(&g_seen, p, sizeof g_seen);
  return g_result;
}

static const char* fake_last_error(void) { return g_message; }

ATTNGATE_PLUGIN_EXPORT void fake_set_result(int32_t rc, const char* message) {
  g_result = rc;
  g_message = message;
}

ATTNGATE_PLUGIN_EXPORT const struct attngate_plugin_params* fake_seen(void) { return &g_seen; }

#if defined(FAKE_INFO_VERSION)
#define FAKE_ABI (ATTNGATE_PLUGIN_ABI_VERSION + 1)
#else
#define FAKE_ABI ATTNGATE_PLUGIN_ABI_VERSION
#endif

#ifndef FAKE_PREFIX
#define FAKE_PREFIX "fake"
#endif

#if defined(FAKE_BAD_NAME)
#define FAKE_NAME_A "bad-name"
#else
#define FAKE_NAME_A FAKE_PREFIX "_a"
#endif

static const struct attngate_plugin_info kKernels[2] = {
    {FAKE_ABI, FAKE_NAME_A, "fake kernel a", kDtypes, 2, kHeadDims, 2, 90, fake_launch, fake_last_error},
    {FAKE_ABI, FAKE_PREFIX "_b", "fake kernel b", kDtypes, 1, kHeadDims + 1, 1, 80, fake_launch, NULL},
};

#if defined(FAKE_REFUSE_VERSION)
#define FAKE_SPEAKS (ATTNGATE_PLUGIN_ABI_VERSION + 1)
#else
#define FAKE_SPEAKS ATTNGATE_PLUGIN_ABI_VERSION
#endif

ATTNGATE_PLUGIN_EXPORT int32_t attngate_plugin_get(uint32_t host_abi_version,
                                                   const struct attngate_plugin_info** kernels, uint32_t* count) {
  if (host_abi_version != FAKE_SPEAKS) return ATTNGATE_PLUGIN_ERR_ABI_VERSION;
  *kernels = kKernels;
  *count = 2;
  return ATTNGATE_PLUGIN_OK;
}

#else

ATTNGATE_PLUGIN_EXPORT int32_t not_the_entry_point(void) { return 0; }

#endif
