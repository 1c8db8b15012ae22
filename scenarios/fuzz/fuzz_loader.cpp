// libFuzzer target of the YAML suite loader (option ATTNGATE_FUZZ; scenarios/fuzz/README.md).
// load_one() returns for a loaded suite or a ScenarioError; any other exception, a broken
// invariant, or a crash (caught by ASan/UBSan) is a bug in the loader or in yaml-cpp.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "fuzz_one.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    attngate::fuzz::load_one(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attngate fuzz: unexpected exception: %s\n", e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "attngate fuzz: unexpected exception of a non-std type\n");
    std::abort();
  }
  return 0;
}
