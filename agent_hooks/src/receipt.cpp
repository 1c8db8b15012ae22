#include "attngate/hooks/receipt.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "attngate/gate/digest.hpp"

namespace attngate::hooks {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kKeyBytes = 32;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string{};
}

bool is_within(const fs::path& file, const fs::path& dir) {
  std::error_code ec;
  fs::path f = fs::weakly_canonical(file, ec), d = fs::weakly_canonical(dir, ec);
  auto rel = f.lexically_relative(d);
  return !rel.empty() && *rel.begin() != "..";
}

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  FILE* f = std::fopen("/dev/urandom", "rb");
  bool ok = f && std::fread(out.data(), 1, n, f) == n;
  if (f) std::fclose(f);
  if (!ok) throw std::runtime_error("cannot read /dev/urandom");
  return out;
}

// Written under a temporary name and linked into place, so a concurrent reader never sees a
// partial key and a concurrent creator's link fails (EEXIST) and reads ours.
void create_key(const fs::path& file) {
  fs::create_directories(file.parent_path());
  ::chmod(file.parent_path().c_str(), 0700);
  fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + tmp.string() + ": " + std::strerror(errno));
  std::string key = random_bytes(kKeyBytes);
  bool ok = ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) && ::fsync(fd) == 0;
  ::close(fd);
  int linked = ok ? ::link(tmp.c_str(), file.c_str()) : -1;
  int err = errno;
  ::unlink(tmp.c_str());
  if (!ok || (linked != 0 && err != EEXIST))
    throw std::runtime_error("cannot create " + file.string() + ": " + std::strerror(err));
}

std::string num(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", *v);
  return buf;
}

}  // namespace

fs::path receipt_key_file() {
  if (auto s = env("ATTNGATE_STATE_HOME"); !s.empty()) return fs::path(s) / "key";
  if (auto s = env("XDG_STATE_HOME"); !s.empty()) return fs::path(s) / "attngate" / "key";
  return fs::path(env("HOME")) / ".local" / "state" / "attngate" / "key";
}

std::string load_receipt_key(const fs::path& file, const fs::path& repo, bool create) {
  if (is_within(file, repo))
    throw std::runtime_error("the receipt key " + file.string() + " lies inside the repository " + repo.string() +
                             " (set ATTNGATE_STATE_HOME to a folder outside it)");
  if (create && !fs::exists(file)) create_key(file);
  auto key = read_file(file);
  if (!key) throw std::runtime_error("cannot read the receipt key " + file.string());
  if (key->size() != kKeyBytes)
    throw std::runtime_error("the receipt key " + file.string() + " is not " + std::to_string(kKeyBytes) + " bytes");
  return *key;
}

std::string machine_id() {
  if (auto id = read_file("/etc/machine-id")) {
    while (!id->empty() && (id->back() == '\n' || id->back() == ' ')) id->pop_back();
    if (!id->empty()) return *id;
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

namespace {

// What the agent reads from a record besides the verdict: each scenario's figures and verdict, one
// line each, hashed into the receipt so that none can be edited after the gate signed it.
std::string scenarios_text(const Record& r) {
  std::string text;
  for (const auto& s : r.scenarios) {
    text += s.id + " " + num(s.speedup) + " " + num(s.ci_low) + " " + num(s.ci_high) + " " + num(s.tflops) + " " +
            (s.correct ? (*s.correct ? "correct" : "incorrect") : "-");
    for (const auto& f : s.flags) text += " " + f;
    text += "\n";
  }
  return text;
}

}  // namespace

std::string receipt_message(const Record& r) {
  std::string reasons, signals;
  for (const auto& x : r.reasons) reasons += (reasons.empty() ? "" : ",") + x.code;
  for (const auto& s : r.signals) signals += (signals.empty() ? "" : ",") + s.trigger + "/" + s.kind;
  const Receipt none;
  const Receipt& rc = r.receipt ? *r.receipt : none;
  return "attngate.receipt/2\nversion=" + std::to_string(r.version) + "\nsource=" + r.source +
         "\ndry_run=" + (r.dry_run ? "true" : "false") + "\nnote_sha256=" + sha256_hex(r.note) +
         "\nscenarios_sha256=" + sha256_hex(scenarios_text(r)) +
         "\ncandidate_tree_sha256=" + r.candidate_tree_sha256 + "\ngit_head=" + r.git.commit +
         "\nmachine_id=" + rc.machine_id + "\nreport_sha256=" + rc.report_sha256 + "\nverdict=" + r.verdict +
         "\nreasons=" + reasons + "\nsignals=" + signals + "\nsuspicious_confirmed=" +
         (r.suspicious_confirmed ? "true" : "false") + "\ngeomean=" + num(r.geomean.speedup) + " " +
         num(r.geomean.ci_low) + " " + num(r.geomean.ci_high) + "\nbaseline=" + r.target.baseline + "\n";
}

std::string receipt_hmac(const Record& r, const std::string& key) { return hmac_sha256_hex(key, receipt_message(r)); }

namespace {
// Constant time: the comparison does not leak how much matched.
bool same_hmac(const std::string& got, const std::string& expected) {
  if (got.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < got.size(); ++i) diff |= static_cast<unsigned char>(got[i] ^ expected[i]);
  return diff == 0;
}
}  // namespace

bool receipt_valid(const Record& r, const std::string& key) {
  return r.receipt && same_hmac(r.receipt->hmac_sha256, receipt_hmac(r, key));
}

// Its own first line, so neither kind of receipt can stand for the other.
std::string commit_receipt_message(const CommitTrailers& t) {
  return "attngate.commit_receipt/1\nversion=" + t.version + "\ngeomean=" + t.geomean + "\nci=" + t.ci +
         "\nbaseline=" + t.baseline + "\ncandidate_sha256=" + t.candidate_sha256 +
         "\ncandidate_tree_sha256=" + t.candidate_tree_sha256 + "\n";
}

std::string commit_receipt_hmac(const CommitTrailers& t, const std::string& key) {
  return hmac_sha256_hex(key, commit_receipt_message(t));
}

bool commit_receipt_valid(const CommitTrailers& t, const std::string& hmac, const std::string& key) {
  return !key.empty() && same_hmac(hmac, commit_receipt_hmac(t, key));
}

}  // namespace attngate::hooks
