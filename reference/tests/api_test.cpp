// The parts of the CUDA-facing API that need no GPU: error reporting, argument validation, and
// the kernel registration surviving the static-library link.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "attngate/cuda_check.hpp"
#include "attngate/gpu_reference.hpp"
#include "attngate/inputs.hpp"
#include "attngate/registry.hpp"
#include "test_shapes.hpp"

namespace attngate {
namespace {

using test::make_shape;

TEST(CudaCheck, MessageNamesFileLineCallAndError) {
  const int line = __LINE__ + 2;
  try {
    ATTNGATE_CUDA_CHECK(cudaErrorMemoryAllocation);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "api_test.cpp:" + std::to_string(line) +
                  ": cudaErrorMemoryAllocation failed: out of memory (cudaErrorMemoryAllocation)");
  }
  EXPECT_NO_THROW(ATTNGATE_CUDA_CHECK(cudaSuccess));
}

cudaError_t forwards(cudaError_t e) {
  ATTNGATE_CUDA_RETURN_IF_ERROR(e);
  return cudaErrorUnknown;  // reached only on success
}

TEST(CudaCheck, ReturnIfErrorForwardsFailures) {
  EXPECT_EQ(forwards(cudaErrorInvalidValue), cudaErrorInvalidValue);
  EXPECT_EQ(forwards(cudaSuccess), cudaErrorUnknown);
}

// reference/ is the oracle's library: it registers no kernel (verify/src/reference_kernel.cpp does).
TEST(Registry, TheReferenceLibraryRegistersNothing) {
  EXPECT_EQ(KernelRegistry::instance().find("reference"), nullptr);
  EXPECT_TRUE(KernelRegistry::instance().all().empty());
}

// Validation happens before any CUDA call, so these run without a GPU.
TEST(GpuReference, RejectsUnsupportedParams) {
  float dummy[16];
  AttnParams p = make_shape(1, 8, 8, 4, 2, 128, false);
  p.q = p.k = p.v = dummy;
  p.o = dummy;
  const auto rejected = [&](AttnParams bad) {
    return gpu_reference_fp32(bad, dummy, nullptr) == cudaErrorInvalidValue &&
           gpu_reference_launch(bad, nullptr) == cudaErrorInvalidValue;
  };
  AttnParams bad = p;
  bad.head_dim = 96;
  EXPECT_TRUE(rejected(bad));
  bad = p;
  bad.dtype = static_cast<DType>(3);
  EXPECT_TRUE(rejected(bad));
  bad = p;
  bad.heads_kv = 3;
  EXPECT_TRUE(rejected(bad));
  bad = p;
  bad.heads_kv = 0;
  EXPECT_TRUE(rejected(bad));
  bad = p;
  bad.seqlen_k = -1;
  EXPECT_TRUE(rejected(bad));
  bad = p;
  bad.k = nullptr;
  EXPECT_TRUE(rejected(bad));
  bad = p;
  bad.o = nullptr;
  EXPECT_EQ(gpu_reference_launch(bad, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(gpu_reference_fp32(p, nullptr, nullptr), cudaErrorInvalidValue);
}

TEST(GpuReference, EmptyProblemLaunchesNothing) {
  AttnParams p = make_shape(0, 8, 8, 4, 2, 128, false);
  EXPECT_EQ(gpu_reference_fp32(p, nullptr, nullptr), cudaSuccess);
  p = make_shape(2, 0, 8, 4, 2, 64, true);
  EXPECT_EQ(gpu_reference_launch(p, nullptr), cudaSuccess);
}

TEST(Inputs, DeviceHelpersValidateBeforeTouchingTheDevice) {
  AttnParams p = make_shape(1, 8, 8, 2, 2, 64, false);
  EXPECT_THROW(fill_inputs(p, 0, Distribution::standard, nullptr), std::invalid_argument)
      << "null pointers";
  float dummy[4];
  p.q = p.k = p.v = dummy;
  p.dtype = static_cast<DType>(5);
  EXPECT_THROW(fill_inputs(p, 0, Distribution::standard, nullptr), std::invalid_argument);
  EXPECT_THROW(count_input_mismatches(p, 0, Distribution::standard, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace attngate
