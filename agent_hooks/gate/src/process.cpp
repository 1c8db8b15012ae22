#include "attngate/gate/process.hpp"

#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "attngate/verify/process.hpp"

namespace attngate::hooks {

// The output modes are the shared layer's streams (verify/include/attngate/verify/process.hpp);
// stdin is always /dev/null: the child must not wait for input that an agent runner will never type.
RunResult run_process(const std::vector<std::string>& argv, const RunOptions& options) {
  namespace proc = attngate::verify::process;
  if (argv.empty()) throw std::invalid_argument("run_process: empty command");
  proc::SpawnOptions spawn;
  spawn.in = proc::Stream::null();
  spawn.cwd = options.cwd;
  spawn.env = options.env;
  spawn.search_path = true;
  RunResult result;
  if (options.output == Output::capture) {
    proc::Captured c = proc::capture(argv, spawn);
    result.exit_code = c.exit.code;
    result.out = std::move(c.out);
    result.err = std::move(c.err);
    return result;
  }
  proc::Fd log;
  if (options.output == Output::log) {
    log = proc::open_output(options.log_file, true);
    spawn.out = spawn.err = proc::Stream::to(log.get());
  } else if (options.output == Output::stderr_only) {
    spawn.out = proc::Stream::to(STDERR_FILENO);
  }
  result.exit_code = proc::run(argv, spawn).code;
  return result;
}

bool on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string file = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (::access(file.c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace attngate::hooks
