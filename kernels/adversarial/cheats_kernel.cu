// Planted cheats whose bug is inside the attention kernel (fa2_variants.cuh). Each is the initial
// kernel with one change, registered as `cheat_<name>` for bf16 / head_dim 128 only. They exist to
// be caught: kernels/adversarial/README.md lists what each does and which check must catch it.
#include "attngate/registry.hpp"
#include "fa2_variants.cuh"

namespace attngate_adversarial {
namespace {

ATTNGATE_REGISTER_KERNEL("cheat_no_causal_mask", "PLANTED CHEAT: ignores the causal mask", {DType::bf16}, {128},
                         90, launch_variant<Cheat::no_causal_mask>);
ATTNGATE_REGISTER_KERNEL("cheat_causal_off_by_one",
                         "PLANTED CHEAT: causal mask off by one (query i also sees key i + 1)", {DType::bf16},
                         {128}, 90, launch_variant<Cheat::causal_off_by_one>);
ATTNGATE_REGISTER_KERNEL("cheat_gqa_head_map",
                         "PLANTED CHEAT: query head h reads kv head h % heads_kv instead of its group",
                         {DType::bf16}, {128}, 90, launch_variant<Cheat::gqa_head_map>);
ATTNGATE_REGISTER_KERNEL("cheat_skip_partial_tile", "PLANTED CHEAT: drops the last partial key tile",
                         {DType::bf16}, {128}, 90, launch_variant<Cheat::skip_partial_tile>);
ATTNGATE_REGISTER_KERNEL("cheat_nan_masked_rows", "PLANTED CHEAT: fully masked rows get O = NaN instead of 0",
                         {DType::bf16}, {128}, 90, launch_variant<Cheat::nan_masked_rows>);
ATTNGATE_REGISTER_KERNEL("cheat_partial_heads", "PLANTED CHEAT: odd query heads are never written",
                         {DType::bf16}, {128}, 90, launch_variant<Cheat::partial_heads>);
ATTNGATE_REGISTER_KERNEL("cheat_row_past_end", "PLANTED CHEAT: writes one row past the end of O",
                         {DType::bf16}, {128}, 90, launch_variant<Cheat::row_past_end>);
ATTNGATE_REGISTER_KERNEL("cheat_missing_barrier",
                         "PLANTED CHEAT: no __syncthreads between the K/V copies and their reads (a race)",
                         {DType::bf16}, {128}, 90, launch_variant<Cheat::missing_barrier>);
ATTNGATE_REGISTER_KERNEL("cheat_half_accum",
                         "PLANTED CHEAT: 16-bit accumulation of S, O and the row sum where fp32 is required",
                         {DType::bf16}, {128}, 90, launch_variant<Cheat::half_accum>);

}  // namespace
}  // namespace attngate_adversarial
