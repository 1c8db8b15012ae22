#pragma once
// The start record (schema attngate.start_record/1): what a gate test that owes the gate a result
// (a verify batch, the bench's timed comparison) writes when it starts, so that the gate's report
// can tell a test that did not run from one that crashed or ran into its timeout without reading
// CTest's own files. `<dir>/<test>.json`, written through a rename; the test writes it again, with
// `skipped`, when it skips (no GPU). One typed definition for the writers (attngate_verify --batch,
// attngate_bench --compare) and the reader (agent_hooks/gate, inputs.hpp). Header only, no CUDA.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attngate/verify/json_document.hpp"  // std::optional <-> null, parse_document, write_file_atomically

namespace attngate::verify {

inline constexpr const char* kStartRecordSchema = "attngate.start_record/1";

struct StartRecord {
  std::string schema = kStartRecordSchema;
  std::string test;                  // the CTest test: the record's file is <test>.json
  int64_t pid = 0;                   // the process that started
  int64_t started_unix_ms = 0;       // when, by the system clock (ms since 1970)
  std::vector<std::string> writes;   // the files it owes the gate, by name (verify.<k>.<s>.json, performance.json)
  std::optional<std::string> skipped;  // why it skipped instead (no usable GPU); null: it did not skip
  // Why it stopped before it could list what it owes (its workers did not start); null: it did not.
  std::optional<std::string> failed;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StartRecord, schema, test, pid, started_unix_ms, writes, skipped,
                                                failed)

inline int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Where the gate's tests keep their start records: beside the verify results they owe.
inline std::filesystem::path start_records_dir(const std::filesystem::path& results_dir) {
  return results_dir / "started";
}

// The record of `test` in `dir`.
inline std::filesystem::path start_record_file(const std::filesystem::path& dir, const std::string& test) {
  return dir / (test + ".json");
}

// This process's record for the test that `file` is named after, started now.
inline StartRecord start_record_now(const std::filesystem::path& file, std::vector<std::string> writes) {
  StartRecord r;
  r.test = file.stem().string();
  r.pid = int64_t(::getpid());
  r.started_unix_ms = unix_ms_now();
  r.writes = std::move(writes);
  return r;
}

// Writes `r` to `file` (its folder created) through a rename. Throws std::runtime_error naming the file.
inline void write_start_record(const std::filesystem::path& file, const StartRecord& r) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) throw std::runtime_error("cannot create " + file.parent_path().string() + ": " + ec.message());
  write_file_atomically(file, nlohmann::json(r).dump(1) + "\n");
}

// The record of a test that failed before it knew what it owes (a verify batch whose workers did not
// start), so that the gate's report names the cause instead of "did not run".
inline void write_failed_start_record(const std::filesystem::path& file, const std::string& why) {
  StartRecord r = start_record_now(file, {});
  r.failed = why;
  write_start_record(file, r);
}

// What a test does with its record: writes it when it starts and again when it skips; nothing when
// no file was asked for (a run outside the gate).
class StartRecorder {
 public:
  StartRecorder(std::filesystem::path file, std::vector<std::string> writes) : file_(std::move(file)) {
    if (file_.empty()) return;
    record_ = start_record_now(file_, std::move(writes));
    write_start_record(file_, record_);
  }
  void skipped(const std::string& why) {
    if (file_.empty()) return;
    record_.skipped = why;
    write_start_record(file_, record_);
  }

 private:
  std::filesystem::path file_;
  StartRecord record_;
};

// The record in `j`; throws nlohmann::json::exception when it is not an attngate.start_record/1.
inline StartRecord parse_start_record(const nlohmann::json& j) {
  return parse_document<StartRecord>(j, kStartRecordSchema);
}

}  // namespace attngate::verify
