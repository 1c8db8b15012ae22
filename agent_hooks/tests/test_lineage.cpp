#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "attngate/hooks/lineage.hpp"
#include "attngate/gate/digest.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

using test::TempDir;

Record append_one(Lineage& l, const std::string& source, std::size_t payload = 0) {
  return l.append([&](const LineageContents&, int version) {
    Record r = test::scored(version, 1.0 + version * 0.001);
    r.source = source;
    // A long detail makes each record larger than PIPE_BUF, where O_APPEND alone would not keep
    // concurrent writes apart on every file system.
    if (payload) r.reasons.push_back({"GEOMEAN_BELOW_TARGET", {}, std::string(payload, 'x')});
    return r;
  });
}

std::vector<std::string> raw_lines(const std::filesystem::path& f) {
  std::vector<std::string> lines;
  std::ifstream in(f);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(Lineage, AppendsConsecutiveVersions) {
  TempDir d;
  Lineage l(d / "sub" / "lineage.jsonl");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(append_one(l, "t").version, i + 1);
  auto c = l.read();
  ASSERT_EQ(c.records.size(), 3u);
  EXPECT_TRUE(c.issues.empty());
  EXPECT_EQ(c.records[2].version, 3);
  EXPECT_EQ(raw_lines(l.file()).size(), 3u);
}

TEST(Lineage, MissingFileReadsEmpty) {
  TempDir d;
  auto c = Lineage(d / "none.jsonl").read();
  EXPECT_TRUE(c.records.empty());
  EXPECT_TRUE(c.issues.empty());
}

TEST(Lineage, RecordRoundTrips) {
  TempDir d;
  Lineage l(d / "l.jsonl");
  l.append([](const LineageContents&, int version) {
    Record r = test::scored(version, 1.25);
    r.git.commit = "deadbeef";
    r.git.dirty = true;
    r.git.candidate_dirty = false;
    r.churn = ChurnFigure{10, 4};
    r.signals.push_back({"stall", "no_new_best", "detail"});
    r.triggers = {"stall"};
    r.questions.push_back({"stall", "stall.memory"});
    r.baselines["cudnn"]["gate_a"] = 500.0;
    r.scenarios[0].flags = {"SIDE_STREAM_WORK"};
    r.scenarios[0].percent_of_peak = 40.5;
    r.build_exit = 0;
    r.ctest_exit = 8;
    return r;
  });
  auto c = l.read();
  ASSERT_EQ(c.records.size(), 1u);
  const Record& r = c.records[0];
  EXPECT_EQ(r.version, 1);
  EXPECT_EQ(r.git.commit, "deadbeef");
  EXPECT_TRUE(r.git.dirty);
  EXPECT_FALSE(r.git.candidate_dirty);
  ASSERT_TRUE(r.churn);
  EXPECT_EQ(r.churn->readded, 4u);
  EXPECT_DOUBLE_EQ(*r.geomean.speedup, 1.25);
  ASSERT_EQ(r.signals.size(), 1u);
  EXPECT_EQ(r.signals[0].kind, "no_new_best");
  ASSERT_EQ(r.questions.size(), 1u);
  EXPECT_EQ(r.questions[0].id, "stall.memory");
  EXPECT_DOUBLE_EQ(r.baselines.at("cudnn").at("gate_a"), 500.0);
  EXPECT_EQ(r.scenarios[0].flags, std::vector<std::string>{"SIDE_STREAM_WORK"});
  EXPECT_DOUBLE_EQ(*r.scenarios[0].percent_of_peak, 40.5);
  EXPECT_EQ(*r.ctest_exit, 8);
}

TEST(Lineage, TruncatedLastLineIsReportedSkippedAndRepaired) {
  TempDir d;
  Lineage l(d / "l.jsonl");
  append_one(l, "a");
  append_one(l, "b");
  // A crash mid-write: part of a record, no newline.
  {
    std::ofstream out(l.file(), std::ios::app | std::ios::binary);
    out << R"({"schema":"attngate.lineage/1","type":"evaluation","version":3,"time":"2024-)";
  }
  auto c = l.read();
  ASSERT_EQ(c.records.size(), 2u);
  ASSERT_EQ(c.issues.size(), 1u);
  EXPECT_EQ(c.issues[0].line, 3u);
  EXPECT_NE(c.issues[0].str().find("l.jsonl:3: skipped a truncated last record"), std::string::npos)
      << c.issues[0].str();

  // The next append numbers from the records that survived and starts on its own line.
  EXPECT_EQ(append_one(l, "c").version, 3);
  c = l.read();
  ASSERT_EQ(c.records.size(), 3u);
  EXPECT_EQ(c.records[0].source, "a");
  EXPECT_EQ(c.records[1].source, "b");
  EXPECT_EQ(c.records[2].source, "c");
  ASSERT_EQ(c.issues.size(), 1u);
  EXPECT_EQ(c.issues[0].line, 3u);
  EXPECT_NE(c.issues[0].message.find("unparseable"), std::string::npos);
  auto lines = raw_lines(l.file());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3].front(), '{');
  EXPECT_EQ(append_one(l, "d").version, 4);
  EXPECT_EQ(l.read().records.size(), 4u);
}

// Every line written follows agent_hooks/schema/lineage_record.schema.json; a line another writer
// put there that parses but does not follow it is kept (versions count it) and named.
TEST(Lineage, RecordsAreHeldToTheirSchema) {
  TempDir d;
  Lineage l(d / "l.jsonl");
  append_one(l, "a");
  EXPECT_TRUE(l.read().issues.empty());
  EXPECT_THROW(l.append([](const LineageContents&, int version) {
    Record r = test::scored(version, 1.0);
    r.type = "guess";  // not evaluation, ask or commit
    return r;
  }), std::runtime_error);
  EXPECT_EQ(raw_lines(l.file()).size(), 1u);  // nothing was written
  {
    std::ofstream out(l.file(), std::ios::app);
    out << R"({"schema": "attngate.lineage/1", "type": "evaluation", "version": 2, "time": "yesterday", "questions": []})"
        << "\n";
  }
  auto c = l.read();
  ASSERT_EQ(c.records.size(), 2u);
  ASSERT_EQ(c.issues.size(), 1u);
  EXPECT_NE(c.issues[0].message.find("does not follow attngate.lineage/1: $.time"), std::string::npos) << c.issues[0].str();
  EXPECT_EQ(append_one(l, "b").version, 3);
}

TEST(Lineage, CorruptLineInTheMiddleIsSkipped) {
  TempDir d;
  Lineage l(d / "l.jsonl");
  append_one(l, "a");
  {
    std::ofstream out(l.file(), std::ios::app);
    out << "not json\n" << R"({"version": "three"})" << "\n";
  }
  append_one(l, "b");
  auto c = l.read();
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[1].version, 2);
  ASSERT_EQ(c.issues.size(), 2u);
  EXPECT_EQ(c.issues[0].line, 2u);
  EXPECT_EQ(c.issues[1].line, 3u);
}

void check_concurrent_result(const Lineage& l, int per_writer) {
  auto c = l.read();
  EXPECT_TRUE(c.issues.empty()) << c.issues.front().str();
  ASSERT_EQ(c.records.size(), static_cast<std::size_t>(2 * per_writer));
  std::vector<int> versions;
  int w0 = 0, w1 = 0;
  for (const auto& r : c.records) {
    versions.push_back(r.version);
    w0 += r.source == "w0";
    w1 += r.source == "w1";
  }
  EXPECT_EQ(w0, per_writer);
  EXPECT_EQ(w1, per_writer);
  // Read-count-append under one lock: versions are exactly 1..N in file order.
  for (std::size_t i = 0; i < versions.size(); ++i) EXPECT_EQ(versions[i], static_cast<int>(i + 1));
  EXPECT_EQ(raw_lines(l.file()).size(), static_cast<std::size_t>(2 * per_writer));
}

TEST(Lineage, TwoProcessesNeverInterleave) {
  TempDir d;
  const int per_writer = 150;
  Lineage l(d / "l.jsonl");
  pid_t pids[2];
  for (int w = 0; w < 2; ++w) {
    pids[w] = ::fork();
    ASSERT_GE(pids[w], 0);
    if (pids[w] == 0) {
      int rc = 0;
      try {
        Lineage mine(d / "l.jsonl");
        for (int i = 0; i < per_writer; ++i) append_one(mine, w == 0 ? "w0" : "w1", 6000);
      } catch (...) {
        rc = 1;
      }
      _exit(rc);
    }
  }
  for (pid_t p : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(p, &status, 0), p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  check_concurrent_result(l, per_writer);
}

TEST(Lineage, TwoThreadsWithSeparateDescriptorsNeverInterleave) {
  TempDir d;
  const int per_writer = 150;
  auto writer = [&](int w) {
    Lineage mine(d / "l.jsonl");
    for (int i = 0; i < per_writer; ++i) append_one(mine, w == 0 ? "w0" : "w1", 6000);
  };
  std::thread t0(writer, 0), t1(writer, 1);
  t0.join();
  t1.join();
  check_concurrent_result(Lineage(d / "l.jsonl"), per_writer);
}

TEST(Lineage, Iso8601RoundTrip) {
  auto t = parse_iso8601("2024-02-29T23:59:30Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, 1709251170);
  EXPECT_FALSE(parse_iso8601("2024-02-29 23:59:30"));
  EXPECT_TRUE(parse_iso8601(now_iso8601()));
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length no longer fits the first padding block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace attngate::hooks
