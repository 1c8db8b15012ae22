// attngate_kernels: the registered kernels (every kernel built, plugins included) as JSON or a
// table, for tools outside C++ (bench/python/attngate_compare.py records the in-process cuDNN
// version from it). The registry's own listing: it links every kernel and nothing of the judges.
//
//   attngate_kernels --json              schema attngate.kernels/1
//   attngate_kernels [--plugin=LIB]...   a table (plugins also from ATTNGATE_PLUGINS)
#include <iomanip>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "attngate/plugin_loader.hpp"
#include "attngate/registry.hpp"

namespace {

using namespace attngate;
using nlohmann::json;

json kernels_json() {
  json ks = json::array();
  for (const KernelInfo* k : KernelRegistry::instance().all()) {
    json dtypes = json::array();
    for (DType t : k->dtypes) dtypes.push_back(dtype_name(t));
    ks.push_back({{"name", k->name},
                  {"description", k->description},
                  {"dtypes", dtypes},
                  {"head_dims", k->head_dims},
                  {"min_sm", k->min_sm}});
  }
  return {{"schema", "attngate.kernels/1"}, {"kernels", ks}};
}

}  // namespace

int main(int argc, char** argv) {
  if (!plugin::load_plugins(argc, argv)) return 2;
  // --plugin=LIB was taken out of argv by load_plugins; the rest is parsed with CLI11.
  bool as_json = false;
  CLI::App app{"attngate_kernels: the registered kernels as JSON or a table", "attngate_kernels"};
  app.add_flag("--json", as_json, "JSON (schema attngate.kernels/1) instead of a table");
  CLI11_PARSE(app, argc, argv);  // an unknown flag: CLI11's message and a non-zero exit
  if (as_json) {
    std::cout << kernels_json().dump(1) << "\n";
    return 0;
  }
  for (const KernelInfo* k : KernelRegistry::instance().all())
    std::cout << std::left << std::setw(20) << k->name << " " << k->description << "\n";
  return 0;
}
