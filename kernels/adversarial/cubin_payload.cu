// The payload of cheat_cubin_renamed (cheats_worker.cu): the honest variant kernel, compiled on its
// own to a cubin (CMakeLists.txt) that the cheat embeds as bytes and loads at run time. Its two
// kernels have the same mangled names as the variant cheats_host.cu instantiates, so the worker's
// inventory lists them although no object of the library is their code.
#include "fa2_variants.cuh"

namespace attngate_adversarial {
template __global__ void attn_fwd_variant<__nv_bfloat16, 128, false, Cheat::none>(const __grid_constant__ AttnParams);
template __global__ void attn_fwd_variant<__nv_bfloat16, 128, true, Cheat::none>(const __grid_constant__ AttnParams);
}  // namespace attngate_adversarial
