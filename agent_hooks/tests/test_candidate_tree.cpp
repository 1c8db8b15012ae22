// The candidate tree hash (C++ and cmake/candidate_tree_hash.cmake agree), HMAC-SHA256 and the
// receipt a gate run signs.
#include <sys/stat.h>

#include <chrono>
#include <regex>

#include <gtest/gtest.h>

#include "attngate/gate/candidate_tree.hpp"
#include "attngate/hooks/receipt.hpp"
#include "attngate/gate/digest.hpp"
#include "test_util.hpp"

namespace attngate::hooks {
namespace {

namespace fs = std::filesystem;

// A candidate folder with a subfolder, a hidden file and an empty one.
void lay_out(const fs::path& dir) {
  test::write_file(dir / "candidate.cu", "#include \"sub/tile.cuh\"\n__global__ void k() {}\n");
  test::write_file(dir / "sub" / "tile.cuh", "// tiles\n");
  test::write_file(dir / "sub" / "deeper" / "params.h", "#define TILE 64\n");
  test::write_file(dir / ".clang-format", "BasedOnStyle: Google\n");
  test::write_file(dir / "empty.txt", "");
}

// The hash the cmake script writes into its header.
std::string cmake_tree_hash(const fs::path& dir, const fs::path& header) {
  auto r = run_process({ATTNGATE_CMAKE_COMMAND, "-DDIR=" + dir.string(), "-DOUT=" + header.string(), "-P",
                        ATTNGATE_TREE_HASH_SCRIPT});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::smatch m;
  const std::string text = test::slurp(header);
  static const std::regex define("#define ATTNGATE_KERNEL_TREE_SHA256 \"([0-9a-f]{64})\"\n");
  if (!std::regex_search(text, m, define)) {
    ADD_FAILURE() << "no definition in " << header << ":\n" << text;
    return {};
  }
  return m[1];
}

TEST(CandidateTree, IsTheSha256OfTheSortedSha256sumListing) {
  test::TempDir t;
  lay_out(t.path());
  const std::string listing = sha256_hex("BasedOnStyle: Google\n") + "  .clang-format\n" +
                              sha256_hex("#include \"sub/tile.cuh\"\n__global__ void k() {}\n") + "  candidate.cu\n" +
                              sha256_hex("") + "  empty.txt\n" + sha256_hex("#define TILE 64\n") +
                              "  sub/deeper/params.h\n" + sha256_hex("// tiles\n") + "  sub/tile.cuh\n";
  EXPECT_EQ(candidate_tree_sha256(t.path()), sha256_hex(listing));
  EXPECT_EQ(list_tree(t.path()).size(), 5u);
  EXPECT_THROW(list_tree(t / "missing"), std::runtime_error);
}

// The build embeds the hash the cmake script computes; attngate compares it with its own.
TEST(CandidateTree, TheCMakeScriptAgreesWithTheCpp) {
  test::TempDir t;
  const fs::path dir = t / "candidate", header = t / "gen" / "candidate_tree_sha256.hpp";
  lay_out(dir);
  fs::create_directories(t / "elsewhere");
  fs::create_directory_symlink(t / "elsewhere", dir / "linked");  // not entered by either
  EXPECT_EQ(cmake_tree_hash(dir, header), candidate_tree_sha256(dir));

  // An unchanged tree leaves the header alone (no rebuild); a change in a subfolder rewrites it.
  const auto old = fs::last_write_time(header) - std::chrono::hours(1);
  fs::last_write_time(header, old);
  EXPECT_EQ(cmake_tree_hash(dir, header), candidate_tree_sha256(dir));
  EXPECT_EQ(fs::last_write_time(header), old);
  test::write_file(dir / "sub" / "deeper" / "params.h", "#define TILE 128\n");
  EXPECT_EQ(cmake_tree_hash(dir, header), candidate_tree_sha256(dir));
  EXPECT_NE(fs::last_write_time(header), old);

  test::TempDir empty;
  EXPECT_EQ(cmake_tree_hash(empty.path(), t / "empty.hpp"), sha256_hex(""));
  EXPECT_EQ(candidate_tree_sha256(empty.path()), sha256_hex(""));
}

TEST(CandidateTree, FirstDifferenceNamesTheFile) {
  TreeListing a = {{"a.cu", "1"}, {"b.cuh", "2"}};
  EXPECT_EQ(first_tree_difference(a, a), "");
  EXPECT_EQ(first_tree_difference(a, {{"a.cu", "1"}, {"b.cuh", "3"}}), "b.cuh changed");
  EXPECT_EQ(first_tree_difference(a, {{"a.cu", "1"}}), "b.cuh removed");
  EXPECT_EQ(first_tree_difference(a, {{"0.h", "9"}, {"a.cu", "1"}, {"b.cuh", "2"}}), "0.h added");
}

// RFC 4231 test cases 1, 2 and 6 (a key longer than the block).
TEST(Hmac, Rfc4231Vectors) {
  EXPECT_EQ(hmac_sha256_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hmac_sha256_hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(Receipt, KeyIsCreatedOnceOutsideTheRepository) {
  test::TempDir state, repo;
  const fs::path key_file = state / "attngate" / "key";
  EXPECT_THROW(load_receipt_key(key_file, repo.path(), /*create=*/false), std::runtime_error);
  const std::string key = load_receipt_key(key_file, repo.path(), /*create=*/true);
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(load_receipt_key(key_file, repo.path(), true), key);
  struct stat st {};
  ASSERT_EQ(::stat(key_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // A key the agent's commits could carry is no secret.
  EXPECT_THROW(load_receipt_key(repo / "state" / "key", repo.path(), true), std::runtime_error);
  EXPECT_FALSE(fs::exists(repo / "state" / "key"));
}

TEST(Receipt, CoversWhatCommitReads) {
  Record r = test::scored(4, 1.2);
  r.source = "gate";
  r.candidate_tree_sha256 = std::string(64, 'a');
  r.git.commit = "0123";
  r.receipt = Receipt{"machine", "report", ""};
  const std::string key(32, 'k');
  r.receipt->hmac_sha256 = receipt_hmac(r, key);
  EXPECT_TRUE(receipt_valid(r, key));
  EXPECT_FALSE(receipt_valid(r, std::string(32, 'j')));
  for (auto edit : std::vector<std::function<void(Record&)>>{
           [](Record& x) { x.version = 5; }, [](Record& x) { x.source = "record"; },
           [](Record& x) { x.candidate_tree_sha256[0] = 'b'; }, [](Record& x) { x.git.commit = "4567"; },
           [](Record& x) { x.receipt->machine_id = "other"; }, [](Record& x) { x.receipt->report_sha256 = "x"; },
           [](Record& x) { x.verdict = "fail"; }, [](Record& x) { x.reasons.push_back({"IMPLAUSIBLE", {}, ""}); },
           [](Record& x) { x.signals.push_back({"suspicious", "step", ""}); },
           [](Record& x) { x.suspicious_confirmed = true; }, [](Record& x) { x.geomean.ci_low = 1.3; }}) {
    Record forged = r;
    edit(forged);
    EXPECT_FALSE(receipt_valid(forged, key)) << receipt_message(forged);
  }
  r.receipt.reset();
  EXPECT_FALSE(receipt_valid(r, key));
}

}  // namespace
}  // namespace attngate::hooks
