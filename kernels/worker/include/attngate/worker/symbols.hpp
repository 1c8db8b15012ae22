// The forbidden symbols of a worker: what its kernel library defines that a library the worker
// links or loads (the CUDA runtime, CUPTI, the driver, NVML, libc, libstdc++ ...) or the worker's
// own code defines too, C names in the CUDA namespaces, and replacements of the global operator
// new/delete. Written at build time beside the worker as `<worker>.symbols` by
// kernels/worker/cmake/symbols.cmake, one `<symbol>\t<object file name>\t<why>` per line; an empty
// file when there is none. The judge fails a worker whose list is not empty (FORBIDDEN_SYMBOL).
#pragma once

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace attngate::worker {

struct ForbiddenSymbol {
  std::string symbol;  // as the object defines it (mangled)
  std::string object;  // the object file's name, e.g. candidate.cu.o
  std::string why;     // the rules it breaks, '; ' between them
};

// Reads `<worker_path>.symbols`. Throws std::runtime_error naming the file when it is missing or
// unreadable, or when a line is not three tab-separated fields with a symbol and an object.
inline std::vector<ForbiddenSymbol> read_forbidden_symbols(const std::string& worker_path) {
  const std::string path = worker_path + ".symbols";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no forbidden-symbol list " + path + " beside the worker (the build writes it)");
  std::vector<ForbiddenSymbol> out;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto a = line.find('\t');
    const auto b = a == std::string::npos ? std::string::npos : line.find('\t', a + 1);
    if (b == std::string::npos || a == 0 || b == a + 1)
      throw std::runtime_error(path + ":" + std::to_string(n) + ": not '<symbol>\\t<object>\\t<why>': " + line);
    out.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  if (in.bad()) throw std::runtime_error("cannot read " + path);
  return out;
}

}  // namespace attngate::worker
