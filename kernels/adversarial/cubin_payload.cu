// The payload of cheat_cubin_renamed (cheats_worker.cu): the honest variant kernel, compiled on its
// own to a cubin (CMakeLists.txt) that the cheat embeds as bytes and loads at run time. Its two
// kernels have the same mangled names as the variant cheats_host.cu instantiates, so the worker's
// inventory lists them although no object of the library is their code.
#include "fa2_variants.cuh"

using Honest = attngate_adversarial::Planted<attngate_adversarial::Cheat::none>;
template __global__ void initial_fa2::attn_fwd_kernel<__nv_bfloat16, 128, false, Honest>(
    const __grid_constant__ attngate::AttnParams);
template __global__ void initial_fa2::attn_fwd_kernel<__nv_bfloat16, 128, true, Honest>(
    const __grid_constant__ attngate::AttnParams);
