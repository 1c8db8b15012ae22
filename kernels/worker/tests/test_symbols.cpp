// The forbidden-symbol lists (symbols.hpp, cmake/symbols.cmake): the shipped workers define none,
// the interposer's list names what it interposes, and the reader refuses what it cannot read.
#include "attngate/worker/symbols.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using attngate::worker::ForbiddenSymbol;
using attngate::worker::read_forbidden_symbols;

std::string names(const std::vector<ForbiddenSymbol>& v) {
  std::string s;
  for (const auto& f : v) s += f.symbol + " (" + f.object + ": " + f.why + ")\n";
  return s;
}

const ForbiddenSymbol* find(const std::vector<ForbiddenSymbol>& v, const std::string& symbol) {
  const auto it = std::find_if(v.begin(), v.end(), [&](const ForbiddenSymbol& f) { return f.symbol == symbol; });
  return it == v.end() ? nullptr : &*it;
}

TEST(Symbols, ShippedWorkersDefineNothingForbidden) {
  for (const std::string worker : {ATTNGATE_WORKER_CANDIDATE, ATTNGATE_WORKER_INITIAL}) {
    SCOPED_TRACE(worker);
    const auto found = read_forbidden_symbols(worker);
    EXPECT_TRUE(found.empty()) << names(found);
  }
}

// Written by unit.worker.symbols.interposer (this test's fixture).
TEST(Symbols, InterposerIsListed) {
  const auto found = read_forbidden_symbols(ATTNGATE_INTERPOSER_BASE);
  for (const char* symbol : {"cudaEventElapsedTime", "cuptiActivityGetNextRecord", "_Znwm"}) {
    const ForbiddenSymbol* f = find(found, symbol);
    ASSERT_NE(f, nullptr) << symbol << " not in\n" << names(found);
    EXPECT_EQ(f->object, "interposer.cu.o");
    EXPECT_FALSE(f->why.empty());
  }
  EXPECT_NE(find(found, "_Znwm")->why.find("operator new"), std::string::npos);
  EXPECT_EQ(find(found, "_Z17interposer_launchPfP11CUstream_st"), nullptr) << names(found);
}

class SymbolsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = (std::filesystem::temp_directory_path() /
             ("attngate_symbols_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
  }
  void TearDown() override { std::filesystem::remove(base_ + ".symbols"); }
  void write(const std::string& text) { std::ofstream(base_ + ".symbols") << text; }
  std::string base_;
};

TEST_F(SymbolsFile, MissingFileThrowsNamingIt) {
  try {
    read_forbidden_symbols(base_);
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(base_ + ".symbols"), std::string::npos) << e.what();
  }
}

TEST_F(SymbolsFile, EmptyFileIsClean) {
  write("");
  EXPECT_TRUE(read_forbidden_symbols(base_).empty());
}

TEST_F(SymbolsFile, ReadsEveryField) {
  write("malloc\tcandidate.cu.o\talso defined by libc.so.6\n_Znwm\tcandidate.cu.o\ta; b\n");
  const auto found = read_forbidden_symbols(base_);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].symbol, "malloc");
  EXPECT_EQ(found[0].object, "candidate.cu.o");
  EXPECT_EQ(found[0].why, "also defined by libc.so.6");
  EXPECT_EQ(found[1].why, "a; b");
}

TEST_F(SymbolsFile, MalformedLineThrows) {
  write("malloc candidate.cu.o\n");
  EXPECT_THROW(read_forbidden_symbols(base_), std::runtime_error);
  write("\tcandidate.cu.o\twhy\n");
  EXPECT_THROW(read_forbidden_symbols(base_), std::runtime_error);
}

}  // namespace
