// Runs every file of the fuzz corpus through the same check as the libFuzzer target, with any
// compiler (CTest unit.scenarios.fuzz_corpus). File names say what must happen:
//   ok_*   must load (a valid suite named "fuzz"),
//   bad_*  must be rejected with a ScenarioError,
//   other  (inputs the fuzzer found, crash-*/timeout-*, binary junk) may do either.
// Any other exception or a broken invariant fails; a crash fails by killing the process.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_one.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: attngate_fuzz_corpus CORPUS_DIR [--min-files=N] [-v]\n";
    return 2;
  }
  size_t min_files = 1;
  bool verbose = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--min-files=", 0) == 0) min_files = std::strtoul(a.c_str() + 12, nullptr, 10);
    else if (a == "-v") verbose = true;
    else {
      std::cerr << "attngate_fuzz_corpus: unknown argument '" << a << "'\n";
      return 2;
    }
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(argv[1]))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.size() < min_files) {
    std::cerr << "FAIL: " << files.size() << " corpus files in " << argv[1] << ", expected at least " << min_files
              << "\n";
    return 1;
  }
  int loaded = 0, rejected = 0, failures = 0;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    const std::string name = f.filename().string();
    const bool must_load = name.rfind("ok_", 0) == 0;
    const bool must_reject = name.rfind("bad_", 0) == 0;
    try {
      const attngate::fuzz::Outcome o = attngate::fuzz::load_one(text.str());
      (o.loaded ? loaded : rejected)++;
      if (verbose || (must_load && !o.loaded) || (must_reject && o.loaded))
        std::cout << name << ": " << (o.loaded ? "loaded, " + std::to_string(o.scenarios) + " scenarios" : o.message)
                  << "\n";
      if (must_load && !o.loaded) {
        std::cout << "FAIL: " << name << " must load\n";
        ++failures;
      }
      if (must_reject && o.loaded) {
        std::cout << "FAIL: " << name << " must be rejected with a ScenarioError\n";
        ++failures;
      }
    } catch (const std::exception& e) {
      std::cout << "FAIL: " << name << ": unexpected exception: " << e.what() << "\n";
      ++failures;
    } catch (...) {
      std::cout << "FAIL: " << name << ": unexpected exception of a non-std type\n";
      ++failures;
    }
  }
  std::cout << files.size() << " corpus files: " << loaded << " loaded, " << rejected << " rejected, " << failures
            << " failures\n";
  return failures == 0 ? 0 : 1;
}
