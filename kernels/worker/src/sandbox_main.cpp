// attngate_sandbox: seals itself, then execs the worker in its place (same pid, same descriptors),
// so nothing of the worker, not even a static initializer, runs unsealed.
//   attngate_sandbox --scratch DIR [--read PATH]... [--exec PATH]... [--policy fail|warn] -- WORKER [ARGS...]
//   attngate_sandbox --probe
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "attngate/worker/sandbox.hpp"

namespace sb = attngate::sandbox;

namespace {

constexpr const char* kName = "attngate_sandbox";

[[noreturn]] void exec_worker(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int err = errno;
  std::cerr << kName << ": " << __FILE__ << ":" << __LINE__ << ": execvp [" << command[0] << "]: " << std::strerror(err)
            << std::endl;
  std::_Exit(127);
}

}  // namespace

int main(int argc, char** argv) {
  // Everything after the first "--" is the worker's command line, untouched by the parser.
  char** dashes = std::find_if(argv + 1, argv + argc, [](const char* a) { return std::strcmp(a, "--") == 0; });
  const std::vector<std::string> command(dashes == argv + argc ? dashes : dashes + 1, argv + argc);

  CLI::App app{"attngate_sandbox: seals itself (no_new_privs, no capabilities, Landlock, seccomp, death with its "
               "parent) and execs WORKER; exit 97 when a mechanism is unavailable under --policy fail"};
  sb::Options opt;
  bool probe = false;
  const std::map<std::string, sb::Policy> policies{{"fail", sb::Policy::fail}, {"warn", sb::Policy::warn}};
  app.add_option("--scratch", opt.scratch, "The only folder the worker may write (created 0700 if missing)");
  app.add_option("--read", opt.read_paths, "An extra read-only tree (repeatable)");
  app.add_option("--exec", opt.exec_paths, "A tree the worker may execute from (repeatable)");
  app.add_option("--policy", opt.policy, "fail (default): exit 97 if a mechanism is unavailable; warn: go on without it")
      ->transform(CLI::CheckedTransformer(policies, CLI::ignore_case));
  app.add_flag("--probe", probe, "Print one line per mechanism (available or not, and why) and exit");
  try {
    app.parse(int(dashes - argv), argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (probe) {
    std::cout << sb::probe_sandbox().text();
    return 0;
  }
  if (opt.scratch.empty() || command.empty()) {
    std::cerr << kName << ": usage: " << kName << " --scratch DIR [--read PATH]... [--exec PATH]... "
              << "[--policy fail|warn] -- WORKER [ARGS...]" << std::endl;
    return 2;
  }
  try {
    for (const sb::Unavailable& u : sb::seal(opt)) std::cerr << kName << ": " << u.what() << std::endl;
  } catch (const sb::Unavailable& u) {
    std::cerr << kName << ": " << u.what() << std::endl;
    return sb::kUnavailableExit;
  } catch (const std::exception& e) {
    std::cerr << kName << ": " << e.what() << std::endl;
    return 1;
  }
  exec_worker(command);
}
