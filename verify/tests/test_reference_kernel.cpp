#include <gtest/gtest.h>

#include "attngate/gpu_reference.hpp"
#include "attngate/registry.hpp"

namespace attngate {
namespace {

// verify/ registers the oracle as a kernel (reference_kernel.cpp); the link anchor keeps it in
// every binary linking attngate_verify_core.
TEST(ReferenceKernel, IsRegisteredByVerify) {
  const KernelInfo* info = KernelRegistry::instance().find("reference");
  ASSERT_NE(info, nullptr) << "reference_kernel.cpp's registration was dropped by the linker";
  EXPECT_EQ(info->launch, &gpu_reference_launch);
  EXPECT_EQ(info->min_sm, 80);
  for (DType t : {DType::bf16, DType::fp16})
    for (int d : {64, 128, 256}) EXPECT_TRUE(info->supports(t, d));
  EXPECT_FALSE(info->supports(DType::bf16, 96));
}

}  // namespace
}  // namespace attngate
