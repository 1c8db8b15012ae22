// The planted cheat that interposes on its worker's clocks (issue 19): it defines the CUDA
// runtime's event timer and CUPTI's record reader itself, so that every event time and every CUPTI
// kernel duration the worker reads is half the truth, and runs the honest kernel. It lives in a
// library and worker of its own (attngate::worker::library_of): defining these symbols makes the
// whole worker FORBIDDEN_SYMBOL, which would otherwise hit every planted cheat of the shared
// adversarial worker. The judge's own clock, in another process, is what it cannot reach.
#include <cuda_runtime.h>
#include <cupti.h>
#include <dlfcn.h>

#include "../fa2_variants.cuh"
#include "attngate/registry.hpp"

namespace {

template <typename Fn>
Fn real(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));  // the shared library's definition
}

cudaError_t launch_interposes_timers(const attngate::AttnParams& p, cudaStream_t stream) {
  using namespace attngate_adversarial;
  bool nothing_to_do = false;
  if (const cudaError_t err = check_params(p, &nothing_to_do); err != cudaSuccess || nothing_to_do) return err;
  return p.causal ? launch_variant_impl<__nv_bfloat16, 128, true, Cheat::none>(p, stream)
                  : launch_variant_impl<__nv_bfloat16, 128, false, Cheat::none>(p, stream);
}

ATTNGATE_REGISTER_KERNEL("cheat_interposes_timers",
                         "PLANTED CHEAT: defines cudaEventElapsedTime and cuptiActivityGetNextRecord, halving "
                         "every time its worker reads",
                         {attngate::DType::bf16}, {128}, 90, launch_interposes_timers);

}  // namespace

// Half of the real elapsed time.
extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  using Fn = cudaError_t (*)(float*, cudaEvent_t, cudaEvent_t);
  static const Fn fn = real<Fn>("cudaEventElapsedTime");
  if (!fn) return cudaErrorUnknown;
  const cudaError_t e = fn(ms, start, end);
  if (e == cudaSuccess && ms) *ms *= 0.5f;
  return e;
}

// The real record, with every kernel's duration halved.
extern "C" CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  using Fn = CUptiResult (*)(uint8_t*, size_t, CUpti_Activity**);
  static const Fn fn = real<Fn>("cuptiActivityGetNextRecord");
  if (!fn) return CUPTI_ERROR_UNKNOWN;
  const CUptiResult r = fn(buffer, valid, record);
  if (r == CUPTI_SUCCESS && *record && (*record)->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
    auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(*record);
    k->end = k->start + (k->end - k->start) / 2;
  }
  return r;
}
