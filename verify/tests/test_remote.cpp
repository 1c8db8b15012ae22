// The judge's side of a worker that misbehaves before any GPU work: the judge must fail with the
// worker's story, never hang. Fake workers are shell scripts speaking (or not) on descriptors 3/4.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "attngate/verify/remote.hpp"

namespace {

namespace fs = std::filesystem;

// The fake workers below are shell scripts with no sandbox launcher beside them: they run unsealed.
const bool g_unsealed = [] { return ::setenv("ATTNGATE_SANDBOX", "off", 1) == 0; }();

std::string fake_worker(const std::string& name, const std::string& body) {
  const fs::path p = fs::temp_directory_path() / ("attngate_fake_worker_" + name + "_" + std::to_string(::getpid()));
  std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
  ::chmod(p.c_str(), 0755);
  return p.string();
}

// Starts the worker and returns what start_worker threw, with how long it took.
std::string start_error(const std::string& path, double* seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string what;
  try {
    attngate::verify::remote::start_worker(path);
  } catch (const std::exception& e) {
    what = e.what();
  }
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fs::remove(path);
  return what;
}

TEST(RemoteWorker, AWorkerThatClosesItsChannelButLivesOnIsKilled) {
  double s = 0;
  const std::string what = start_error(fake_worker("mute", "exec 4>&-; exec sleep 60"), &s);
  EXPECT_NE(what.find("closed its reply channel"), std::string::npos) << what;
  EXPECT_NE(what.find("still running and was killed"), std::string::npos) << what;
  EXPECT_LT(s, 10.0);
}

TEST(RemoteWorker, AWorkerThatExitsIsReportedWithItsStatus) {
  double s = 0;
  const std::string what = start_error(fake_worker("exit", "exit 7"), &s);
  EXPECT_NE(what.find("exited with status 7"), std::string::npos) << what;
}

TEST(RemoteWorker, AnotherProtocolOrAGarbledReplyIsRefused) {
  double s = 0;
  const std::string old = start_error(
      fake_worker("old", "read line <&3; echo '{\"ok\":true,\"protocol\":0,\"kernels\":[]}' >&4; exec sleep 60"), &s);
  EXPECT_NE(old.find("speaks protocol 0"), std::string::npos) << old;
  const std::string garbled = start_error(fake_worker("garbled", "read line <&3; echo 'not json' >&4; exec sleep 60"), &s);
  EXPECT_FALSE(garbled.empty());
  EXPECT_LT(s, 10.0) << "a refused worker that lives on must not hang the judge";
}

// With the sandbox on, a worker is started only through attngate_sandbox beside it; without one the
// judge refuses, naming the launcher it looked for, rather than run the worker unsealed.
TEST(RemoteWorker, AWorkerWithoutItsSandboxLauncherIsRefused) {
  ASSERT_TRUE(g_unsealed);
  ::setenv("ATTNGATE_SANDBOX", "on", 1);
  double s = 0;
  const std::string what = start_error(fake_worker("nolauncher", "exec sleep 60"), &s);
  ::setenv("ATTNGATE_SANDBOX", "off", 1);
  EXPECT_NE(what.find("no sandbox launcher"), std::string::npos) << what;
  EXPECT_NE(what.find("attngate_sandbox"), std::string::npos) << what;
}

}  // namespace
