// GPU checks of the cudnn kernel (label gpu; SKIPPED without a GPU): a graph is built once per
// shape and reused for other buffers, and rows with no visible key come out as O = 0, LSE = -inf.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "attngate/cudnn_kernel.h"
#include "bshd_params.hpp"
#include "attngate/registry.hpp"

namespace {

using attngate::AttnParams;
using attngate::DType;

#define CHECK_CUDA(x) ASSERT_EQ((x), cudaSuccess) << #x

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct Buffers {
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  float* lse = nullptr;
  ~Buffers() {
    cudaFree(q);
    cudaFree(k);
    cudaFree(v);
    cudaFree(o);
    cudaFree(lse);
  }
};

AttnParams contiguous(const Buffers& b, int batch, int sq, int sk, int hq, int hkv, int d, bool causal) {
  return attngate::cudnn_test::bshd_params(batch, sq, sk, hq, hkv, d, causal, b.q, b.k, b.v, b.o, b.lse);
}

void allocate(Buffers& b, int batch, int sq, int sk, int hq, int hkv, int d) {
  const size_t qn = size_t(batch) * sq * hq * d, kn = size_t(batch) * sk * hkv * d;
  ASSERT_EQ(cudaMalloc(&b.q, qn * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b.k, kn * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b.v, kn * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b.o, qn * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&b.lse), size_t(batch) * hq * sq * 4), cudaSuccess);
  // Every element 0x3c3c, which is 0.011474609375 in bf16: equal small scores everywhere.
  ASSERT_EQ(cudaMemset(b.q, 0x3c, qn * 2), cudaSuccess);
  ASSERT_EQ(cudaMemset(b.k, 0x3c, kn * 2), cudaSuccess);
  ASSERT_EQ(cudaMemset(b.v, 0x3c, kn * 2), cudaSuccess);
}

TEST(CudnnGpu, OneGraphPerShapeReusedAcrossBuffers) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU";
  const auto& k = attngate::KernelRegistry::instance().get("cudnn");
  Buffers a, b;
  allocate(a, 1, 128, 128, 4, 2, 64);
  allocate(b, 1, 128, 128, 4, 2, 64);
  const long before = attngate_cudnn_cached_graphs();
  ASSERT_EQ(k.launch(contiguous(a, 1, 128, 128, 4, 2, 64, true), nullptr), cudaSuccess) << attngate_cudnn_last_error();
  ASSERT_EQ(k.launch(contiguous(b, 1, 128, 128, 4, 2, 64, true), nullptr), cudaSuccess) << attngate_cudnn_last_error();
  ASSERT_EQ(k.launch(contiguous(a, 1, 128, 128, 4, 2, 64, true), nullptr), cudaSuccess) << attngate_cudnn_last_error();
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(attngate_cudnn_cached_graphs(), before + 1);
  ASSERT_EQ(k.launch(contiguous(a, 1, 128, 128, 4, 2, 64, false), nullptr), cudaSuccess);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(attngate_cudnn_cached_graphs(), before + 2) << "another mask is another graph";
}

TEST(CudnnGpu, FullyMaskedRowsAreZeroWithMinusInfinityLse) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU";
  const int sq = 77, sk = 33, h = 2, d = 64;
  Buffers b;
  allocate(b, 1, sq, sk, h, h, d);
  CHECK_CUDA(cudaMemset(b.o, 0xff, size_t(sq) * h * d * 2));  // NaN
  CHECK_CUDA(cudaMemset(b.lse, 0xff, size_t(h) * sq * 4));
  const auto& k = attngate::KernelRegistry::instance().get("cudnn");
  ASSERT_EQ(k.launch(contiguous(b, 1, sq, sk, h, h, d, true), nullptr), cudaSuccess) << attngate_cudnn_last_error();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<uint16_t> o(size_t(sq) * h * d);
  std::vector<float> lse(size_t(h) * sq);
  CHECK_CUDA(cudaMemcpy(o.data(), b.o, o.size() * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(lse.data(), b.lse, lse.size() * 4, cudaMemcpyDeviceToHost));
  for (int hh = 0; hh < h; ++hh)
    for (int i = 0; i < sq; ++i) {
      const float l = lse[size_t(hh) * sq + i];
      if (i < sq - sk) {
        EXPECT_TRUE(std::isinf(l) && l < 0) << "head " << hh << " row " << i << " LSE " << l;
        for (int x = 0; x < d; ++x) ASSERT_EQ(o[(size_t(i) * h + hh) * d + x], 0) << "row " << i;
      } else {
        // Equal scores over the i - (sq - sk) + 1 visible keys: LSE = score + log(count).
        const float x = 0.011474609375f, score = x * x * d / std::sqrt(float(d));
        EXPECT_NEAR(l, score + std::log(float(i - (sq - sk) + 1)), 1e-3) << "head " << hh << " row " << i;
        for (int e = 0; e < d; ++e) ASSERT_EQ(o[(size_t(i) * h + hh) * d + e], 0x3c3c) << "row " << i;  // = V
      }
    }
}

}  // namespace
