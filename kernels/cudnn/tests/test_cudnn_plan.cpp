// How the cudnn kernel maps attngate problems onto cuDNN's SDPA (no cuDNN, no GPU needed).
#include <gtest/gtest.h>

#include "bshd_params.hpp"
#include "cudnn_plan.hpp"

namespace {

using attngate::AttnParams;
using attngate::DType;
using namespace attngate::cudnn_sdpa;

// Contiguous BSHD problem at fixed fake addresses (plans never dereference them).
AttnParams problem(int b, int sq, int sk, int hq, int hkv, int d, bool causal) {
  return attngate::cudnn_test::bshd_params(
      b, sq, sk, hq, hkv, d, causal, reinterpret_cast<const void*>(uintptr_t(0x10000)),
      reinterpret_cast<const void*>(uintptr_t(0x20000)), reinterpret_cast<const void*>(uintptr_t(0x30000)),
      reinterpret_cast<void*>(uintptr_t(0x40000)), reinterpret_cast<float*>(uintptr_t(0x50000)));
}

TEST(CudnnPlan, NonCausalIsPassedAsIs) {
  const Plan plan = make_plan(problem(2, 77, 33, 8, 2, 128, false));
  EXPECT_TRUE(plan.unsupported.empty());
  EXPECT_FALSE(plan.causal);
  EXPECT_EQ(plan.seqlen_q, 77);
  EXPECT_EQ(plan.masked_rows, 0);
  EXPECT_EQ(plan.q_offset, 0);
}

TEST(CudnnPlan, SquareCausalUsesTopLeftWhichIsTheSameMask) {
  const Plan plan = make_plan(problem(4, 4096, 4096, 32, 8, 128, true));
  EXPECT_TRUE(plan.causal);
  EXPECT_FALSE(plan.bottom_right);
  EXPECT_EQ(plan.seqlen_q, 4096);
  EXPECT_EQ(plan.masked_rows, 0);
}

TEST(CudnnPlan, FewerQueriesThanKeysIsBottomRight) {
  const Plan plan = make_plan(problem(1, 33, 77, 4, 1, 256, true));
  EXPECT_TRUE(plan.causal);
  EXPECT_TRUE(plan.bottom_right);
  EXPECT_EQ(plan.seqlen_q, 33);
  EXPECT_EQ(plan.masked_rows, 0);
}

// Sq > Sk causal: rows 0..Sq-Sk-1 see no key; cuDNN gets the last Sk rows as a square problem.
TEST(CudnnPlan, MoreQueriesThanKeysSlicesOffTheMaskedRows) {
  const AttnParams p = problem(1, 77, 33, 2, 2, 64, true);
  const Plan plan = make_plan(p);
  ASSERT_TRUE(plan.unsupported.empty());
  EXPECT_EQ(plan.masked_rows, 44);
  EXPECT_EQ(plan.seqlen_q, 33);
  EXPECT_TRUE(plan.causal);
  EXPECT_FALSE(plan.bottom_right);
  EXPECT_EQ(plan.q_offset, 44 * p.q_row_stride);
  EXPECT_EQ(plan.o_offset, 44 * p.o_row_stride);
  EXPECT_EQ(plan.lse_offset, 44);
  // The first row cuDNN sees, query 44, may see key 0 only: 0 <= 44 + 33 - 77. In cuDNN's square
  // problem that is row 0, which sees key 0 only under a top-left causal mask.
  EXPECT_TRUE(pointer_problem(p, plan).empty());
}

TEST(CudnnPlan, DeclinesWhatCudnnCannotTake) {
  AttnParams p = problem(1, 64, 64, 2, 2, 100, false);
  EXPECT_NE(make_plan(p).unsupported.find("multiple of 8"), std::string::npos);
  p = problem(1, 64, 64, 2, 2, 64, false);
  p.q_row_stride = 132;
  EXPECT_NE(make_plan(p).unsupported.find("stride"), std::string::npos);
  p = problem(1, 64, 64, 6, 4, 64, false);
  EXPECT_NE(make_plan(p).unsupported.find("multiple of heads_kv"), std::string::npos);
  p = problem(1, 64, 64, 2, 2, 64, false);
  p.k = reinterpret_cast<const void*>(uintptr_t(0x20008));
  EXPECT_NE(pointer_problem(p, make_plan(p)).find("K is not 16-byte aligned"), std::string::npos);
}

TEST(CudnnPlan, CacheKeyIgnoresPointersOnly) {
  const AttnParams a = problem(2, 128, 128, 4, 2, 64, true);
  AttnParams b = a;
  b.q = b.k = b.v = reinterpret_cast<const void*>(uintptr_t(0x90000));
  b.o = reinterpret_cast<void*>(uintptr_t(0xa0000));
  b.lse = reinterpret_cast<float*>(uintptr_t(0xb0000));
  EXPECT_EQ(cache_key(a, 0, 16), cache_key(b, 0, 16));
  EXPECT_NE(cache_key(a, 0, 16), cache_key(a, 1, 16)) << "device";
  AttnParams c = a;
  c.softmax_scale = 0.1f;
  EXPECT_NE(cache_key(a, 0, 16), cache_key(c, 0, 16)) << "scale";
  c = a;
  c.causal = false;
  EXPECT_NE(cache_key(a, 0, 16), cache_key(c, 0, 16)) << "causal";
  c = a;
  c.dtype = DType::fp16;
  EXPECT_NE(cache_key(a, 0, 16), cache_key(c, 0, 16)) << "dtype";
  c = a;
  c.lse_head_stride += 1;
  EXPECT_NE(cache_key(a, 0, 16), cache_key(c, 0, 16)) << "strides";
  c = a;
  c.lse = nullptr;
  EXPECT_NE(cache_key(a, 0, 16), cache_key(c, 0, 16)) << "with or without LSE";
  EXPECT_NE(cache_key(a, 0, 16), cache_key(a, 0, 4)) << "LSE alignment";
}

// verify's LSE buffer starts after a guard of seqlen_q * 4 bytes (>= 4096), and masked rows move
// cuDNN's first LSE row by 4 bytes each: the graph must not assume 16.
TEST(CudnnPlan, LseAlignmentFollowsThePointerAndStridesCudnnWritesTo) {
  AttnParams p = problem(1, 128, 128, 2, 2, 64, true);
  EXPECT_EQ(lse_alignment(p, make_plan(p)), 16);
  p = problem(1, 80, 36, 2, 2, 64, true);  // 44 masked rows: +176 bytes, head stride 320 bytes
  EXPECT_EQ(lse_alignment(p, make_plan(p)), 16);
  p = problem(1, 80, 37, 2, 2, 64, true);  // 43 masked rows: +172 bytes
  EXPECT_EQ(lse_alignment(p, make_plan(p)), 4);
  p = problem(1, 78, 78, 2, 2, 64, false);  // head stride 312 bytes
  EXPECT_EQ(lse_alignment(p, make_plan(p)), 8);
  p = problem(1, 4096, 4096, 2, 2, 64, false);
  p.lse = reinterpret_cast<float*>(uintptr_t(0x50000) + 4095 * 4);  // after a 4095-row guard
  EXPECT_EQ(lse_alignment(p, make_plan(p)), 4);
  p.lse = nullptr;
  EXPECT_EQ(lse_alignment(p, make_plan(p)), 16);
}

}  // namespace
