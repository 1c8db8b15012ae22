// The child-process layer (process.hpp) against real children: /bin/sh does what each case needs.
#include "attngate/verify/process.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace attngate::verify::process {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class Process : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "attngate-process-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(Process, ExitCodeIsTheChildsOwn) {
  const Exit e = run(sh("exit 3"));
  EXPECT_EQ(e.code, 3);
  EXPECT_EQ(e.signal, 0);
  EXPECT_FALSE(e.timed_out);
}

TEST_F(Process, KilledBySignalIs128PlusN) {
  const Exit e = run(sh("kill -TERM $$"));
  EXPECT_EQ(e.code, 128 + SIGTERM);
  EXPECT_EQ(e.signal, SIGTERM);
}

TEST_F(Process, ProgramThatCannotStartExits127) {
  const std::string missing = (dir_ / "no-such-program").string();
  EXPECT_THROW(spawn({missing}), CannotStart);
  const Captured c = capture({missing});
  EXPECT_EQ(c.exit.code, 127);
  EXPECT_EQ(c.err, "cannot run " + missing + ": No such file or directory\n");
  // run() writes the message where the child's stderr would have gone.
  const fs::path log = dir_ / "log";
  {
    const Fd fd = open_output(log, false);
    SpawnOptions o;
    o.err = Stream::to(fd.get());
    EXPECT_EQ(run({missing}, o).code, 127);
  }
  EXPECT_EQ(slurp(log), "cannot run " + missing + ": No such file or directory\n");
}

TEST_F(Process, SearchPathFindsProgramsByName) {
  SpawnOptions o;
  o.search_path = true;
  EXPECT_EQ(capture({"sh", "-c", "echo found"}, o).out, "found\n");
  EXPECT_EQ(capture({"sh", "-c", "true"}).exit.code, 127);  // without it, "sh" is a path relative to the cwd
}

TEST_F(Process, CapturesStdoutAndStderrApart) {
  const Captured c = capture(sh("echo out; echo err >&2; echo more"));
  EXPECT_EQ(c.exit.code, 0);
  EXPECT_EQ(c.out, "out\nmore\n");
  EXPECT_EQ(c.err, "err\n");
}

TEST_F(Process, CapturesMoreThanAPipeHolds) {
  const Captured c = capture(sh("head -c 1000000 /dev/zero; head -c 300000 /dev/zero >&2"));
  EXPECT_EQ(c.out.size(), 1000000u);
  EXPECT_EQ(c.err.size(), 300000u);
}

TEST_F(Process, EnvironmentIsOursWithTheAdditions) {
  ::setenv("ATTNGATE_PROCESS_KEPT", "kept", 1);
  ::setenv("ATTNGATE_PROCESS_REPLACED", "old", 1);
  SpawnOptions o;
  o.env = {{"ATTNGATE_PROCESS_REPLACED", "new"}, {"ATTNGATE_PROCESS_ADDED", "added"}};
  const Captured c =
      capture(sh("echo $ATTNGATE_PROCESS_KEPT $ATTNGATE_PROCESS_REPLACED $ATTNGATE_PROCESS_ADDED"), o);
  EXPECT_EQ(c.out, "kept new added\n");
  ::unsetenv("ATTNGATE_PROCESS_KEPT");
  ::unsetenv("ATTNGATE_PROCESS_REPLACED");
}

TEST_F(Process, RunsInTheGivenDirectory) {
  SpawnOptions o;
  o.cwd = dir_;
  EXPECT_EQ(capture({"/bin/pwd", "-P"}, o).out, fs::canonical(dir_).string() + "\n");
  o.cwd = dir_ / "missing";
  const Captured c = capture({"/bin/pwd"}, o);
  EXPECT_EQ(c.exit.code, 127);
  EXPECT_NE(c.err.find("No such file or directory"), std::string::npos) << c.err;
}

TEST_F(Process, StdinFromDevNull) {
  SpawnOptions o;
  o.in = Stream::null();
  const Captured c = capture(sh("cat; echo done"), o);  // would wait for a terminal's input otherwise
  EXPECT_EQ(c.out, "done\n");
}

TEST_F(Process, OutputFileIsAppendedToOrEmptied) {
  const fs::path log = dir_ / "log";
  for (const bool append : {true, true, false}) {
    const Fd fd = open_output(log, append);
    SpawnOptions o;
    o.out = o.err = Stream::to(fd.get());
    EXPECT_EQ(run(sh("echo a; echo b >&2"), o).code, 0);
  }
  EXPECT_EQ(slurp(log), "a\nb\n");
  try {
    open_output(dir_ / "missing" / "log", true);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("verify/src/process.cpp:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("::open("), std::string::npos) << e.what();
  }
}

TEST_F(Process, ExtraDescriptorsReachTheChild) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  Fd read_end(p[0]), write_end(p[1]);
  SpawnOptions o;
  o.fds = {{write_end.get(), 5}};
  const pid_t pid = spawn(sh("echo hello >&5"), o);
  write_end.reset();
  EXPECT_EQ(wait(pid).code, 0);
  char buf[16] = {};
  EXPECT_EQ(::read(read_end.get(), buf, sizeof buf), 6);
  EXPECT_STREQ(buf, "hello\n");
}

// Whether `pid` is gone or a zombie (killed; its new parent has not reaped it yet).
bool dead(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

TEST_F(Process, TimeoutKillsTheWholeGroup) {
  const fs::path pidfile = dir_ / "grandchild";
  SpawnOptions o;
  o.own_group = true;
  const auto t0 = std::chrono::steady_clock::now();
  const Exit e = run(sh("sleep 30 & echo $! > " + pidfile.string() + "; wait"), o, 0.3);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(e.timed_out);
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_EQ(e.code, 128 + SIGKILL);
  EXPECT_LT(s, 10.0);
  const pid_t grandchild = std::atoi(slurp(pidfile).c_str());
  ASSERT_GT(grandchild, 0);
  bool gone = false;
  for (int i = 0; i < 200 && !(gone = dead(grandchild)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(gone) << "the background sleep outlived the timeout";
}

TEST_F(Process, NoTimeoutWithinIt) {
  const Exit e = run(sh("exit 4"), {}, 5.0);
  EXPECT_FALSE(e.timed_out);
  EXPECT_EQ(e.code, 4);
}

}  // namespace
}  // namespace attngate::verify::process
