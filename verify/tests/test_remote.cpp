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

#include "attngate/registry.hpp"
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

// A fake worker of protocol 2 offering one kernel, which answers every timed request with `timed`
// (lines of its replies, as the shell writes them) and everything else with nothing.
std::string timed_worker(const std::string& name, const std::string& timed) {
  const std::string hello = "{\"ok\":true,\"protocol\":2,\"kernel_tree_sha256\":\"\",\"kernels\":[{\"name\":\"" + name +
                            "\",\"description\":\"fake\",\"dtypes\":[0],\"head_dims\":[128],\"min_sm\":90}]}";
  return fake_worker(name, "read line <&3; echo '" + hello + "' >&4\n"
                           "while IFS= read -r line <&3; do case \"$line\" in *'\"op\":\"timed\"'*) " + timed +
                           " ;; esac; done");
}

attngate::verify::remote::RemoteKernel& started(const std::string& path, const std::string& name) {
  attngate::verify::remote::start_worker(path);
  fs::remove(path);
  auto* k = attngate::verify::remote::find(attngate::KernelRegistry::instance().get(name));
  if (!k) throw std::runtime_error(name + " is not a remote kernel");
  return *k;
}

// The timed call's two replies (kernels/worker/README.md, protocol 2): enqueued, then the worker's
// own figures; a worker that could not enqueue, or never finishes, is an error, never a hang.
TEST(RemoteWorker, ATimedCallIsAnsweredTwice) {
  using namespace attngate::verify::remote;
  const JudgeEvents events{std::string(128, 'a'), std::string(128, 'b')};
  RemoteKernel& ok = started(timed_worker("fake_two_replies", "echo '{\"ok\":true,\"enqueued\":true}' >&4; "
                                                              "echo '{\"ok\":true,\"event_ms\":0.25}' >&4"),
                             "fake_two_replies");
  begin_timed(ok, attngate::AttnParams{}, events, false, 1);
  EXPECT_DOUBLE_EQ(finish_timed(ok).event_ms, 0.25);

  RemoteKernel& refused = started(
      timed_worker("fake_not_enqueued", "echo '{\"ok\":false,\"enqueued\":false,\"error\":\"bad IPC handle\"}' >&4"),
      "fake_not_enqueued");
  try {
    begin_timed(refused, attngate::AttnParams{}, events, false, 2);
    ADD_FAILURE() << "a worker that could not enqueue was not an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("could not enqueue a timed call"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad IPC handle"), std::string::npos) << e.what();
  }

  ::setenv("ATTNGATE_WORKER_TIMEOUT_S", "1", 1);
  RemoteKernel& mute = started(timed_worker("fake_never_done", "echo '{\"ok\":true,\"enqueued\":true}' >&4"),
                               "fake_never_done");
  const auto t0 = std::chrono::steady_clock::now();
  begin_timed(mute, attngate::AttnParams{}, events, false, 3);
  try {
    finish_timed(mute);
    ADD_FAILURE() << "a worker that never finished was not an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no reply within 1 s"), std::string::npos) << e.what();
  }
  ::unsetenv("ATTNGATE_WORKER_TIMEOUT_S");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

}  // namespace
