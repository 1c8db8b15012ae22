// The fp32 GPU reference (reference/) as the kernel "reference" of the registry, so that
// verification checks the oracle against the Eigen CPU reference and the bench can time it like
// any kernel. reference/ is the oracle's library and registers nothing; what is judged is decided here.
#include "attngate/gpu_reference.hpp"
#include "attngate/registry.hpp"

// attngate_verify_core's link options name this symbol (--undefined), which pulls this object, and
// with it the registration, into every binary linking the static library.
extern "C" const int attngate_verify_reference_kernel_anchor = 1;

namespace attngate {

ATTNGATE_REGISTER_KERNEL("reference",
                         "fp32 SIMT flash-style oracle (64x64 tiles, precise expf/logf, IEEE "
                         "division); O rounded to the input dtype",
                         {DType::bf16, DType::fp16}, {64, 128, 256}, 80, &gpu_reference_launch);

}  // namespace attngate
