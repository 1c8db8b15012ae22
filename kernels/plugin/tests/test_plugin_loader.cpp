// CPU tests of the plugin loader: the example plugin and tiny fake plugins (tests/fake_plugin.c)
// are loaded with dlopen; nothing here needs a GPU (no plugin launch touches CUDA).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "attngate/kernel_status.hpp"
#include "attngate/plugin_abi.h"
#include "attngate/plugin_loader.hpp"
#include "attngate/registry.hpp"

namespace {

using attngate::AttnParams;
using attngate::DType;
using attngate::KernelRegistry;
using attngate::plugin::load_libraries;
using attngate::plugin::PluginError;

size_t registered_count() { return KernelRegistry::instance().all().size(); }

// Runs f, expecting a PluginError whose message contains every one of `parts`, and no new kernel.
template <typename F>
void expect_load_error(F f, const std::vector<std::string>& parts) {
  const size_t before = registered_count();
  try {
    f();
    ADD_FAILURE() << "no PluginError";
  } catch (const PluginError& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
  EXPECT_EQ(registered_count(), before) << "a failed load registered kernels";
}

template <typename Fn>
Fn plugin_symbol(const char* lib, const char* name) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);  // the loader has it open already
  EXPECT_NE(h, nullptr) << lib;
  void* s = h ? dlsym(h, name) : nullptr;
  EXPECT_NE(s, nullptr) << name;
  return reinterpret_cast<Fn>(s);
}

AttnParams distinct_params() {
  AttnParams p{};
  p.q = reinterpret_cast<const void*>(0x1000);
  p.k = reinterpret_cast<const void*>(0x2000);
  p.v = reinterpret_cast<const void*>(0x3000);
  p.o = reinterpret_cast<void*>(0x4000);
  p.lse = reinterpret_cast<float*>(0x5000);
  int64_t s = 101;
  for (int64_t* f : {&p.q_batch_stride, &p.q_row_stride, &p.q_head_stride, &p.k_batch_stride, &p.k_row_stride,
                     &p.k_head_stride, &p.v_batch_stride, &p.v_row_stride, &p.v_head_stride, &p.o_batch_stride,
                     &p.o_row_stride, &p.o_head_stride, &p.lse_batch_stride, &p.lse_head_stride})
    *f = (s += 1000) * (int64_t(1) << 33);  // beyond 32 bits, so truncation would show
  p.batch = 3;
  p.seqlen_q = 77;
  p.seqlen_k = 33;
  p.heads_q = 8;
  p.heads_kv = 2;
  p.head_dim = 128;
  p.softmax_scale = 0.125f;
  p.causal = true;
  p.dtype = DType::fp16;
  return p;
}

// Each test runs in its own process under CTest, but they also pass run together in one binary:
// tests that need a fresh plugin use a library of their own (fake_plugin.c built per prefix).
void ensure_good_loaded() {
  if (KernelRegistry::instance().find("plugin_good_a") == nullptr) {
    const auto names = load_libraries({ATTNGATE_FAKE_GOOD});
    ASSERT_EQ(names, (std::vector<std::string>{"plugin_good_a", "plugin_good_b"}));
  }
}

TEST(PluginLoader, RegistersEveryKernelOfAGoodPlugin) {
  ensure_good_loaded();
  const auto& a = KernelRegistry::instance().get("plugin_good_a");
  EXPECT_EQ(a.dtypes, (std::vector<DType>{DType::bf16, DType::fp16}));
  EXPECT_EQ(a.head_dims, (std::vector<int>{64, 128}));
  EXPECT_EQ(a.min_sm, 90);
  EXPECT_NE(a.description.find("fake kernel a"), std::string::npos);
  EXPECT_NE(a.description.find(ATTNGATE_FAKE_GOOD), std::string::npos) << "the description names the library";
  const auto& b = KernelRegistry::instance().get("plugin_good_b");
  EXPECT_EQ(b.dtypes, (std::vector<DType>{DType::bf16}));
  EXPECT_EQ(b.head_dims, (std::vector<int>{128}));
  EXPECT_EQ(b.min_sm, 80);
  EXPECT_NE(a.launch, b.launch) << "each plugin kernel needs its own trampoline";
}

TEST(PluginLoader, LaunchForwardsEveryFieldOfTheParams) {
  ensure_good_loaded();
  const AttnParams p = distinct_params();
  auto* stream = reinterpret_cast<cudaStream_t>(0x77);
  ASSERT_EQ(KernelRegistry::instance().get("plugin_good_a").launch(p, stream), cudaSuccess);
  using SeenFn = const attngate_plugin_params* (*)();
  const attngate_plugin_params* seen = plugin_symbol<SeenFn>(ATTNGATE_FAKE_GOOD, "fake_seen")();
  const attngate_plugin_params want = attngate::plugin::to_plugin_params(p);
  EXPECT_EQ(seen->struct_size, sizeof(attngate_plugin_params));
  EXPECT_EQ(seen->q, p.q);
  EXPECT_EQ(seen->k, p.k);
  EXPECT_EQ(seen->v, p.v);
  EXPECT_EQ(seen->o, p.o);
  EXPECT_EQ(seen->lse, p.lse);
  EXPECT_EQ(seen->q_batch_stride, p.q_batch_stride);
  EXPECT_EQ(seen->q_row_stride, p.q_row_stride);
  EXPECT_EQ(seen->q_head_stride, p.q_head_stride);
  EXPECT_EQ(seen->k_batch_stride, p.k_batch_stride);
  EXPECT_EQ(seen->k_row_stride, p.k_row_stride);
  EXPECT_EQ(seen->k_head_stride, p.k_head_stride);
  EXPECT_EQ(seen->v_batch_stride, p.v_batch_stride);
  EXPECT_EQ(seen->v_row_stride, p.v_row_stride);
  EXPECT_EQ(seen->v_head_stride, p.v_head_stride);
  EXPECT_EQ(seen->o_batch_stride, p.o_batch_stride);
  EXPECT_EQ(seen->o_row_stride, p.o_row_stride);
  EXPECT_EQ(seen->o_head_stride, p.o_head_stride);
  EXPECT_EQ(seen->lse_batch_stride, p.lse_batch_stride);
  EXPECT_EQ(seen->lse_head_stride, p.lse_head_stride);
  EXPECT_EQ(seen->batch, 3);
  EXPECT_EQ(seen->seqlen_q, 77);
  EXPECT_EQ(seen->seqlen_k, 33);
  EXPECT_EQ(seen->heads_q, 8);
  EXPECT_EQ(seen->heads_kv, 2);
  EXPECT_EQ(seen->head_dim, 128);
  EXPECT_EQ(seen->softmax_scale, 0.125f);
  EXPECT_EQ(seen->causal, 1);
  EXPECT_EQ(seen->dtype, ATTNGATE_PLUGIN_FP16);
  EXPECT_EQ(std::memcmp(seen, &want, sizeof want), 0);
}

TEST(PluginLoader, NotSupportedBecomesASkipReason) {
  ensure_good_loaded();
  using SetFn = void (*)(int32_t, const char*);
  auto set_result = plugin_symbol<SetFn>(ATTNGATE_FAKE_GOOD, "fake_set_result");
  const AttnParams p = distinct_params();
  set_result(ATTNGATE_PLUGIN_LAUNCH_NOT_SUPPORTED, "seqlen_q > seqlen_k with causal");
  EXPECT_EQ(KernelRegistry::instance().get("plugin_good_a").launch(p, nullptr), cudaErrorNotSupported);
  EXPECT_EQ(attngate::take_unsupported_reason().value_or(""), "plugin_good_a: seqlen_q > seqlen_k with causal");
  EXPECT_FALSE(attngate::take_unsupported_reason().has_value()) << "taking the reason clears it";
  // Kernel b has no last_error function.
  EXPECT_EQ(KernelRegistry::instance().get("plugin_good_b").launch(p, nullptr), cudaErrorNotSupported);
  EXPECT_EQ(attngate::take_unsupported_reason().value_or(""),
            "plugin_good_b: not supported (the plugin gave no reason)");
  // Any other error is passed through and leaves no reason.
  set_result(int32_t(cudaErrorInvalidValue), "bad strides");
  EXPECT_EQ(KernelRegistry::instance().get("plugin_good_a").launch(p, nullptr), cudaErrorInvalidValue);
  EXPECT_FALSE(attngate::take_unsupported_reason().has_value());
  set_result(0, nullptr);
  EXPECT_EQ(KernelRegistry::instance().get("plugin_good_a").launch(p, nullptr), cudaSuccess);
}

TEST(PluginLoader, MissingLibrary) {
  expect_load_error([] { load_libraries({"/nonexistent/libattngate_nothing.so"}); },
                    {"/nonexistent/libattngate_nothing.so", "cannot load the library"});
}

TEST(PluginLoader, LibraryWithoutTheEntryPoint) {
  expect_load_error([] { load_libraries({ATTNGATE_FAKE_NO_ENTRY}); },
                    {ATTNGATE_FAKE_NO_ENTRY, "not an attngate plugin", "attngate_plugin_get"});
}

TEST(PluginLoader, PluginRefusesTheHostsAbiVersion) {
  expect_load_error([] { load_libraries({ATTNGATE_FAKE_REFUSE_VERSION}); },
                    {ATTNGATE_FAKE_REFUSE_VERSION, "refuses plugin ABI version 1"});
}

TEST(PluginLoader, DescriptionOfAnotherAbiVersion) {
  expect_load_error([] { load_libraries({ATTNGATE_FAKE_INFO_VERSION}); },
                    {ATTNGATE_FAKE_INFO_VERSION, "ABI version 2", "speaks 1"});
}

TEST(PluginLoader, KernelNameThatWouldBreakTestNames) {
  expect_load_error([] { load_libraries({ATTNGATE_FAKE_BAD_NAME}); }, {"'bad-name'", "[A-Za-z0-9_]"});
}

TEST(PluginLoader, AllOrNothingAcrossLibraries) {
  expect_load_error([] { load_libraries({ATTNGATE_FAKE_OTHER, ATTNGATE_FAKE_NO_ENTRY}); }, {"not an attngate plugin"});
  EXPECT_EQ(KernelRegistry::instance().find("plugin_other_a"), nullptr);
  // The good library alone still loads afterwards.
  EXPECT_EQ(load_libraries({ATTNGATE_FAKE_OTHER}).size(), 2u);
}

TEST(PluginLoader, SameKernelTwice) {
  expect_load_error([] { load_libraries({ATTNGATE_FAKE_TWICE, ATTNGATE_FAKE_TWICE}); }, {"offered twice"});
  EXPECT_EQ(load_libraries({ATTNGATE_FAKE_DUP}).size(), 2u);
  expect_load_error([] { load_libraries({ATTNGATE_FAKE_DUP}); }, {"'plugin_dup_a' is already registered"});
}

TEST(PluginLoader, LoadPluginsTakesItsArgumentsAndReadsTheEnvironment) {
  std::string a0 = "prog", a1 = std::string("--plugin=") + ATTNGATE_FAKE_ARGV, a2 = "--gtest_brief=1", a3 = "x";
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), nullptr};
  int argc = 4;
  ASSERT_EQ(setenv("ATTNGATE_PLUGINS", (std::string(":") + ATTNGATE_FAKE_ENV + ":").c_str(), 1), 0);
  std::ostringstream log;
  ASSERT_TRUE(attngate::plugin::load_plugins(argc, argv, log)) << log.str();
  unsetenv("ATTNGATE_PLUGINS");
  ASSERT_EQ(argc, 3);
  EXPECT_STREQ(argv[1], "--gtest_brief=1");
  EXPECT_STREQ(argv[2], "x");
  EXPECT_EQ(argv[3], nullptr);
  for (const char* n : {"plugin_argv_a", "plugin_argv_b", "plugin_env_a", "plugin_env_b"}) {
    EXPECT_NE(KernelRegistry::instance().find(n), nullptr) << n;
    EXPECT_NE(log.str().find(n), std::string::npos) << log.str();
  }
}

TEST(PluginLoader, LoadPluginsReportsAnErrorAndLoadsNothing) {
  std::string a0 = "prog", a1 = std::string("--plugin=") + ATTNGATE_FAKE_TWICE,
              a2 = std::string("--plugin=") + ATTNGATE_FAKE_NO_ENTRY;
  char* argv[] = {a0.data(), a1.data(), a2.data(), nullptr};
  int argc = 3;
  std::ostringstream log;
  EXPECT_FALSE(attngate::plugin::load_plugins(argc, argv, log));
  EXPECT_NE(log.str().find("not an attngate plugin"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("no plugin was loaded"), std::string::npos) << log.str();
  EXPECT_EQ(KernelRegistry::instance().find("plugin_twice_a"), nullptr);
}

TEST(PluginLoader, NoPluginsNoChange) {
  std::string a0 = "prog", a1 = "--suite=gate";
  char* argv[] = {a0.data(), a1.data(), nullptr};
  int argc = 2;
  unsetenv("ATTNGATE_PLUGINS");
  std::ostringstream log;
  const size_t before = registered_count();
  EXPECT_TRUE(attngate::plugin::load_plugins(argc, argv, log));
  EXPECT_EQ(argc, 2);
  EXPECT_EQ(registered_count(), before);
  EXPECT_EQ(log.str(), "");
}

TEST(PluginLoader, SplitsPathLists) {
  using attngate::plugin::split_path_list;
  EXPECT_EQ(split_path_list(""), std::vector<std::string>{});
  EXPECT_EQ(split_path_list("a.so"), std::vector<std::string>{"a.so"});
  EXPECT_EQ(split_path_list("::a.so::/x/b.so:"), (std::vector<std::string>{"a.so", "/x/b.so"}));
}

// The in-tree example plugin (CUDA code, linked to the CUDA runtime) loads on a machine without a
// GPU: loading makes no CUDA call.
TEST(PluginLoader, ExamplePluginLoadsWithoutAGpu) {
  if (KernelRegistry::instance().find("plugin_example") == nullptr) {
    ASSERT_EQ(load_libraries({ATTNGATE_EXAMPLE_PLUGIN}), std::vector<std::string>{"plugin_example"});
  }
  const auto& k = KernelRegistry::instance().get("plugin_example");
  EXPECT_EQ(k.dtypes, (std::vector<DType>{DType::bf16, DType::fp16}));
  EXPECT_EQ(k.head_dims, (std::vector<int>{64, 128, 256}));
  EXPECT_EQ(k.min_sm, 80);
  EXPECT_NE(k.description.find("example plugin"), std::string::npos) << k.description;
}

TEST(KernelStatus, ReasonOnlyForNotSupportedLaunchErrors) {
  attngate::set_unsupported_reason("cuDNN: no engine");
  const std::runtime_error other("kernel 'cudnn' failed to launch: invalid argument (cudaErrorInvalidValue)");
  EXPECT_FALSE(attngate::unsupported_reason(other).has_value());
  const std::runtime_error ns("kernel 'cudnn' failed to launch: operation not supported (cudaErrorNotSupported)");
  EXPECT_EQ(attngate::unsupported_reason(ns).value_or(""), "cuDNN: no engine");
  EXPECT_FALSE(attngate::unsupported_reason(ns).has_value()) << "taken once";
  attngate::set_unsupported_reason("x");
  attngate::clear_unsupported_reason();
  EXPECT_FALSE(attngate::take_unsupported_reason().has_value());
}

}  // namespace
