// attngate_verify: one GoogleTest test per (kernel, scenario), generated from the kernel registry and
// the YAML suites at start-up. `--emit-ctest=FILE` writes the matching CTest script instead of
// running, so CTest names and labels follow the suites (gtest_discover_tests cannot give per-test
// labels).
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "attngate/cuda_check.hpp"
#include "attngate/registry.hpp"
#include "attngate/scenario.hpp"
#include "attngate/verify/problem.hpp"
#include "attngate/verify/verify_case.hpp"

#ifndef ATTNGATE_DEFAULT_SCENARIO_DIR
#error "ATTNGATE_DEFAULT_SCENARIO_DIR must be defined by the build"
#endif

namespace {

using namespace attngate;

struct Options {
  std::filesystem::path scenario_dir = ATTNGATE_DEFAULT_SCENARIO_DIR;
  std::string emit_ctest;
  std::string emit_exe;
  std::string initial = "initial";
};

uint64_t base_seed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("ATTNGATE_SEED")) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(env, &end, 0);
      if (end == env || *end != '\0') {
        std::cerr << "ATTNGATE_SEED='" << env << "' is not an unsigned integer\n";
        std::exit(2);
      }
      return static_cast<uint64_t>(v);
    }
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd();
  }();
  return seed;
}

// Skips (never passes) when no device of the kernel's architecture is present.
void require_device(int min_sm) {
  static const verify::DeviceStatus dev = verify::probe_device();
  if (!dev.available) GTEST_SKIP() << "needs a CUDA GPU: " << dev.why;
  if (dev.sm < min_sm)
    GTEST_SKIP() << "needs compute capability " << min_sm / 10 << "." << min_sm % 10 << ", device "
                 << dev.name << " has " << dev.sm / 10 << "." << dev.sm % 10;
}

class VerifyTest : public testing::Test {
 public:
  VerifyTest(std::string kernel, std::string initial, Scenario s, Tolerance tol)
      : kernel_(std::move(kernel)), initial_(std::move(initial)), s_(std::move(s)), tol_(tol) {}

  void TestBody() override {
    const auto& reg = KernelRegistry::instance();
    const KernelInfo& k = reg.get(kernel_);
    const KernelInfo& init = reg.get(initial_);
    require_device(std::max(k.min_sm, init.min_sm));
    if (IsSkipped()) return;
    cudaStream_t stream = nullptr;
    ATTNGATE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    try {
      const auto outcome = verify::verify_case(k, init, s_, tol_, base_seed(), stream);
      std::cout << verify::describe(outcome, s_);
      EXPECT_TRUE(outcome.pass()) << kernel_ << " fails on " << s_.id << " (" << s_.origin << ")";
    } catch (...) {
      cudaStreamDestroy(stream);
      throw;
    }
    ATTNGATE_CUDA_CHECK(cudaStreamDestroy(stream));
  }

 private:
  std::string kernel_, initial_;
  Scenario s_;
  Tolerance tol_;
};

struct Generated {
  std::string gtest_name;  // Suite.Test for --gtest_filter
  std::string ctest_name;
  std::vector<std::string> labels;
};

// The reference kernel is proven against Eigen, which only the smoke suite is small enough for.
bool wanted(const KernelInfo& k, const Suite& suite, const Scenario& s) {
  if (k.name == "reference") return suite.name == "smoke";
  return k.supports(s.dtype, s.head_dim);
}

std::vector<Generated> register_tests(const Options& opt) {
  std::vector<Generated> out;
  const auto suites = load_suite_dir(opt.scenario_dir);
  for (const KernelInfo* k : KernelRegistry::instance().all()) {
    for (const Suite& suite : suites) {
      for (const Scenario& s : suite.scenarios) {
        if (!wanted(*k, suite, s)) continue;
        testing::RegisterTest(k->name.c_str(), s.id.c_str(), nullptr, s.origin.c_str(), __FILE__, __LINE__,
                              [name = k->name, init = opt.initial, s, tol = suite.tolerance]() -> testing::Test* {
                                return new VerifyTest(name, init, s, tol);
                              });
        Generated g{k->name + "." + s.id, "verify." + k->name + "." + s.id, {"gpu", "verify", suite.name}};
        if (suite.name == "gate" && k->name == "candidate") g.labels.push_back("gate");
        out.push_back(std::move(g));
      }
    }
  }
  return out;
}

void emit_ctest(const Options& opt, const std::vector<Generated>& tests) {
  std::ofstream f(opt.emit_ctest);
  if (!f) throw std::runtime_error("cannot write " + opt.emit_ctest);
  auto quoted = [](const std::string& s) { return "[==[" + s + "]==]"; };
  for (const auto& t : tests) {
    std::string labels;
    for (const auto& l : t.labels) labels += (labels.empty() ? "" : ";") + l;
    f << "add_test(" << quoted(t.ctest_name) << " " << quoted(opt.emit_exe) << " "
      << quoted("--gtest_filter=" + t.gtest_name) << " " << quoted("--scenarios=" + opt.scenario_dir.string())
      << ")\n";
    f << "set_tests_properties(" << quoted(t.ctest_name) << " PROPERTIES LABELS " << quoted(labels)
      << " SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==] TIMEOUT 900)\n";
  }
  if (!f.flush()) throw std::runtime_error("cannot write " + opt.emit_ctest);
}

Options parse(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const std::string& flag) -> const char* {
      return a.rfind(flag + "=", 0) == 0 ? argv[i] + flag.size() + 1 : nullptr;
    };
    if (const char* v = value("--scenarios")) opt.scenario_dir = v;
    else if (const char* v = value("--emit-ctest")) opt.emit_ctest = v;
    else if (const char* v = value("--emit-exe")) opt.emit_exe = v;
    else if (const char* v = value("--initial")) opt.initial = v;
    else {
      std::cerr << "attngate_verify: unknown argument '" << a
                << "'\nusage: attngate_verify [gtest flags] [--scenarios=DIR] [--initial=KERNEL]"
                   " [--emit-ctest=FILE --emit-exe=PATH]\n  ATTNGATE_SEED=N replays a run's inputs\n";
      std::exit(2);
    }
  }
  if (!opt.emit_ctest.empty() && opt.emit_exe.empty()) {
    std::cerr << "attngate_verify: --emit-ctest needs --emit-exe\n";
    std::exit(2);
  }
  return opt;
}

}  // namespace

// The host and device input generators must agree bit for bit, or the CPU reference would check
// other inputs than the kernels saw.
TEST(selfcheck, host_inputs_match_device) {
  require_device(80);
  if (IsSkipped()) return;
  Scenario s;
  s.id = "selfcheck";
  s.batch = 2; s.seqlen_q = 37; s.seqlen_k = 53; s.heads_q = 4; s.heads_kv = 2; s.head_dim = 64;
  s.causal = false;
  for (DType t : {DType::bf16, DType::fp16}) {
    s.dtype = t;
    verify::Problem p(s);
    for (Distribution d : {Distribution::standard, Distribution::large_scores}) {
      p.fill(1234, d, nullptr);
      const verify::DeviceBuffer* bufs[3] = {&p.q, &p.k, &p.v};
      for (int tensor = 0; tensor < 3; ++tensor) {
        const auto want = host_input(p.params, tensor, 1234, d);
        const verify::DeviceBuffer& b = *bufs[tensor];
        std::vector<uint16_t> raw(b.bytes() / 2);
        ATTNGATE_CUDA_CHECK(cudaMemcpy(raw.data(), b.get(), b.bytes(), cudaMemcpyDeviceToHost));
        ASSERT_EQ(raw.size(), want.size());
        for (size_t i = 0; i < raw.size(); ++i) {
          // Widen the stored 16-bit value exactly and compare with the host's rounded float.
          float got;
          if (t == DType::bf16) {
            const uint32_t bits = uint32_t(raw[i]) << 16;
            std::memcpy(&got, &bits, 4);
          } else {
            __half h;
            std::memcpy(&h, &raw[i], 2);
            got = __half2float(h);
          }
          ASSERT_EQ(got, want[i]) << dtype_name(t) << " tensor " << tensor << " element " << i;
        }
      }
      EXPECT_EQ(count_input_mismatches(p.params, 1234, d, nullptr), 0u);
    }
  }
}

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const Options opt = parse(argc, argv);
  std::vector<Generated> generated;
  try {
    generated = register_tests(opt);
    generated.push_back({"selfcheck.host_inputs_match_device", "gpu.selfcheck.host_inputs_match_device",
                         {"gpu", "verify"}});
    if (!opt.emit_ctest.empty()) {
      emit_ctest(opt, generated);
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "attngate_verify: " << e.what() << "\n";
    return 2;
  }
  std::cout << "attngate_verify: base seed " << base_seed() << " (replay with ATTNGATE_SEED=" << base_seed()
            << ")\n";
  return RUN_ALL_TESTS();
}
