#pragma once
// Runs a program (no shell, so arguments need no quoting) and waits for it, through verify's
// child-process layer (attngate/verify/process.hpp), which the judge and the adversarial driver share.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace attngate::hooks {

enum class Output {
  inherit,  // the child writes to our stdout/stderr
  capture,  // stdout and stderr come back in RunResult
  log,      // both are appended to RunOptions::log_file
  stderr_only,  // both go to our stderr (keeps our stdout for one JSON object: `gate --json`)
};

struct RunOptions {
  std::filesystem::path cwd;                               // empty: ours
  std::vector<std::pair<std::string, std::string>> env;    // added to (or replacing in) ours
  Output output = Output::capture;
  std::filesystem::path log_file;
};

struct RunResult {
  int exit_code = -1;  // 128+N when killed by signal N, 127 when the program could not be started
  std::string out;
  std::string err;
};

RunResult run_process(const std::vector<std::string>& argv, const RunOptions& options = {});

// Whether `name` is an executable found through PATH, as run_process would find it.
bool on_path(const std::string& name);

}  // namespace attngate::hooks
