// --shape: ad-hoc shapes go through the suites' own loader (scenarios/src/shape.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attngate/scenario.hpp"

namespace {

using attngate::adhoc_suite;
using attngate::ScenarioError;

std::string error_of(const std::vector<std::string>& specs) {
  try {
    adhoc_suite(specs);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(Shape, EveryFieldAsGiven) {
  const attngate::Suite s = adhoc_suite({"b=4,sq=8192,sk=4096,hq=32,hkv=8,d=128,causal,fp16"});
  ASSERT_EQ(s.scenarios.size(), 1u);
  const attngate::Scenario& x = s.scenarios[0];
  EXPECT_EQ(s.name, "adhoc");
  // The summary line names every field: batch, both lengths, both head counts, head dim, mask, dtype.
  EXPECT_EQ(attngate::scenario_summary(x), "b=4 sq=8192 sk=4096 hq=32 hkv=8 d=128 causal fp16");
  EXPECT_EQ(x.dtype, attngate::DType::fp16);
  EXPECT_EQ(x.id, "shape_b4_sq8192_sk4096_hq32_hkv8_d128_causal_fp16");
  EXPECT_EQ(x.tags, std::vector<std::string>{"adhoc"});
}

TEST(Shape, DefaultsAndSpacesAndAnId) {
  const attngate::Suite s = adhoc_suite({"b=1 sq=1000 hq=16 d=64", "id=mine,b=2,sq=77,sk=33,hq=4,d=256,causal"});
  ASSERT_EQ(s.scenarios.size(), 2u);
  EXPECT_EQ(s.scenarios[0].seqlen_k, 1000);
  EXPECT_EQ(s.scenarios[0].heads_kv, 16);
  EXPECT_FALSE(s.scenarios[0].causal);
  EXPECT_EQ(s.scenarios[0].dtype, attngate::DType::bf16);
  EXPECT_EQ(s.scenarios[1].id, "adhoc_mine");  // prefixed: an ad-hoc shape never takes a suite's id
  EXPECT_EQ(s.scenarios[1].seqlen_k, 33);
}

TEST(Shape, TheSummaryLineParsesBack) {
  const attngate::Suite s = adhoc_suite({"b=1 sq=16384 sk=16384 hq=16 hkv=16 d=128 noncausal bf16"});
  EXPECT_EQ(attngate::scenario_summary(s.scenarios[0]), "b=1 sq=16384 sk=16384 hq=16 hkv=16 d=128 noncausal bf16");
}

TEST(Shape, ErrorsNameTheSpecAndTheProblem) {
  EXPECT_NE(error_of({"b=1,sq=10,hq=2"}).find("no head_dim"), std::string::npos);
  EXPECT_NE(error_of({"b=1,sq=10,hq=2,d=128,x=3"}).find("unknown key 'x'"), std::string::npos);
  EXPECT_NE(error_of({"b=1,sq=10,hq=2,d=128,fast"}).find("unknown item 'fast'"), std::string::npos);
  EXPECT_NE(error_of({"b=1,b=2,sq=10,hq=2,d=128"}).find("sets batch twice"), std::string::npos);
  EXPECT_NE(error_of({"b=1,sq=-4,hq=2,d=128"}).find("positive integer"), std::string::npos);
  EXPECT_EQ(error_of({"b=1,sq=10,hq=2,d=128"}), "");
  EXPECT_NE(error_of({}).find("no shape"), std::string::npos);
  // The loader's own rules: heads_q a multiple of heads_kv, a known dtype, unique ids.
  EXPECT_NE(error_of({"b=1,sq=10,hq=6,hkv=4,d=128"}), "");
  EXPECT_NE(error_of({"b=1,sq=10,hq=2,d=128,dtype=fp64"}), "");
  EXPECT_NE(error_of({"b=1,sq=10,hq=2,d=128", "b=1,sq=10,hq=2,d=128"}), "");
  EXPECT_NE(error_of({"id=a-b,b=1,sq=10,hq=2,d=128"}), "");
  EXPECT_NE(error_of({"b=0,sq=10,hq=2,d=128"}), "");
}

}  // namespace
