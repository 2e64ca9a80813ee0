// The command line with the symbol cache: --cache-dir / --no-cache / $XDG_CACHE_HOME give the
// same output as the direct path; a corrupt index is reported once and rebuilt (exit 0);
// several processes with one cold cache all succeed; a full file system degrades to the
// direct path; `stacksym cache list|build|prune`.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "index/index_cache.h"
#include "index/index_format.h"
#include "index_test_util.h"
#include "real_test_util.h"

namespace stacksym {
namespace {

using testing::RealRun;
using testing::RealTempDir;

const std::string kStacksym = std::string(STACKSYM_BINARY_DIR) + "/stacksym";
const std::string kFixture = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_gcc_cxx_o2_d5";

std::string AddressList() {
  auto elf = ElfFile::Open(kFixture);
  if (!elf) return {};
  std::string out;
  for (uint64_t a : testing::SegmentAddresses(**elf, 3)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%llx\n", static_cast<unsigned long long>(a));
    out += buf;
  }
  return out;
}

std::string RunCli(const std::string& args, int* status, const std::string& input = AddressList()) {
  return RealRun(args, input, status);
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  closedir(d);
  return out;
}

// The cache's files after a run that answered from a fresh index: the index and the memo of
// the names its answers demangled (the fixture is C++), each once, no temporary left.
void ExpectIndexAndNameMemo(const std::string& dir) {
  std::vector<std::string> files = FilesIn(dir);
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 2u) << "temporary files left behind?";
  EXPECT_TRUE(files[0].ends_with(".symidx")) << files[0];
  EXPECT_TRUE(files[1].ends_with(".symnames")) << files[1];
  EXPECT_EQ(files[0].substr(0, files[0].size() - 7), files[1].substr(0, files[1].size() - 9));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

size_t CountLines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

class IndexCliTest : public ::testing::Test {
 protected:
  std::string Symbolize(const std::string& cache_args, int* status,
                        const std::string& style = "llvm") {
    return RunCli(kStacksym + " symbolize elf --file " + kFixture + " --output-style=" + style +
                      " " + cache_args,
                  status);
  }
  std::string Direct(const std::string& style = "llvm") {
    int status = -1;
    std::string out = Symbolize("--no-cache", &status, style);
    EXPECT_EQ(status, 0);
    return out;
  }
  RealTempDir dir_;
};

TEST_F(IndexCliTest, CacheDirGivesTheDirectOutput) {
  std::string cache = dir_.Make("cache");
  for (const char* style : {"llvm", "json", "text"}) {
    int status = -1;
    std::string cold = Symbolize("--cache-dir " + cache, &status, style);
    EXPECT_EQ(status, 0);
    std::string warm = Symbolize("--cache-dir " + cache, &status, style);
    EXPECT_EQ(status, 0);
    std::string direct = Direct(style);
    ASSERT_GT(direct.size(), 1000u);
    EXPECT_EQ(cold, direct) << style;
    EXPECT_EQ(warm, direct) << style;
  }
  ExpectIndexAndNameMemo(cache);
  // Pruning counts and removes the memo like any other cache file.
  int status = -1;
  std::string pruned =
      RunCli(kStacksym + " cache prune --max-bytes 0 --cache-dir " + cache, &status, "");
  EXPECT_EQ(status, 0);
  EXPECT_NE(pruned.find("removed 2 files"), std::string::npos) << pruned;
  EXPECT_TRUE(FilesIn(cache).empty());
}

TEST_F(IndexCliTest, NoCacheWritesNothingAndXdgCacheHomeIsTheDefault) {
  std::string xdg = dir_.Make("xdg");
  int status = -1;
  RunCli("XDG_CACHE_HOME=" + xdg + " " + kStacksym + " symbolize elf --no-cache --file " + kFixture,
         &status);
  EXPECT_EQ(status, 0);
  EXPECT_TRUE(FilesIn(xdg + "/stacksym").empty());
  RunCli("XDG_CACHE_HOME=" + xdg + " " + kStacksym + " symbolize elf --file " + kFixture, &status);
  EXPECT_EQ(status, 0);
  ExpectIndexAndNameMemo(xdg + "/stacksym");
}

TEST_F(IndexCliTest, CorruptIndexIsReportedOnceAndRebuilt) {
  std::string cache = dir_.Make("cache");
  int status = -1;
  Symbolize("--cache-dir " + cache, &status);
  ASSERT_EQ(status, 0);
  std::string index = testing::IndexPathFor(kFixture, cache);
  std::string bytes = ReadFile(index);
  ASSERT_GT(bytes.size(), 1000u);
  bytes[offsetof(index::FileHeader, header_crc)] ^= 0x10;  // never a padding byte
  ASSERT_TRUE(testing::RealWriteFile(index, bytes));
  std::string err_path = dir_.Make("stderr");
  std::string out = Symbolize("--cache-dir " + cache + " 2>" + err_path, &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out, Direct());
  std::string err = ReadFile(err_path);
  EXPECT_EQ(CountLines(err, "warning"), 1u) << err;
  EXPECT_NE(err.find("checksum"), std::string::npos) << err;
  // Rebuilt: the next run is silent.
  Symbolize("--cache-dir " + cache + " 2>" + err_path, &status);
  EXPECT_EQ(ReadFile(err_path), "");
}

// The demangled-name memo likewise: a damaged one is said once, changes no answer, and the
// run replaces it (the next run is silent).
TEST_F(IndexCliTest, CorruptNameMemoIsReportedOnceAndReplaced) {
  std::string cache = dir_.Make("cache");
  int status = -1;
  Symbolize("--cache-dir " + cache, &status);
  ASSERT_EQ(status, 0);
  std::string memo = index::NameMemoPath(testing::IndexPathFor(kFixture, cache));
  const std::string good = ReadFile(memo);
  ASSERT_GT(good.size(), 1000u);
  std::string bad = good;
  bad[good.size() / 2] ^= 0x10;
  ASSERT_TRUE(testing::RealWriteFile(memo, bad));
  std::string list = kStacksym + " cache list --cache-dir " + cache;
  std::string listed = RunCli(list, &status, "");
  EXPECT_NE(listed.find("BROKEN: damaged name memo: body checksum\tnames\n"), std::string::npos)
      << listed;
  std::string err_path = dir_.Make("stderr");
  std::string out = Symbolize("--cache-dir " + cache + " 2>" + err_path, &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out, Direct());
  std::string err = ReadFile(err_path);
  EXPECT_EQ(CountLines(err, "warning"), 1u) << err;
  EXPECT_NE(err.find("name memo"), std::string::npos) << err;
  EXPECT_EQ(ReadFile(memo), good) << "not replaced by the same names";
  Symbolize("--cache-dir " + cache + " 2>" + err_path, &status);
  EXPECT_EQ(ReadFile(err_path), "");
  listed = RunCli(list + " --sections", &status, "");
  EXPECT_EQ(status, 0);
  EXPECT_EQ(listed.find("BROKEN"), std::string::npos) << listed;
  EXPECT_NE(listed.find("\tnames\n  header "), std::string::npos) << listed;
  // A memo is checked against the index beside it: without one it is listed as broken.
  ASSERT_EQ(unlink(testing::IndexPathFor(kFixture, cache).c_str()), 0);
  listed = RunCli(list, &status, "");
  EXPECT_NE(listed.find("BROKEN: no valid index beside it"), std::string::npos) << listed;
}

TEST_F(IndexCliTest, ConcurrentColdBuildersAllSucceed) {
  std::string cache = dir_.Make("cache");
  std::string addresses = dir_.Make("addresses");
  ASSERT_TRUE(testing::RealWriteFile(addresses, AddressList()));
  constexpr int kProcesses = 6;
  std::string script;
  for (int i = 0; i < kProcesses; ++i) {
    std::string n = std::to_string(i);
    script += "(" + kStacksym + " symbolize elf --output-style=llvm --cache-dir " + cache +
              " --file " + kFixture + " <" + addresses + " >" + dir_.path() + "/out." + n + " 2>" +
              dir_.path() + "/err." + n + "; echo $? >" + dir_.path() + "/rc." + n + ") & ";
  }
  script += "wait";
  int status = -1;
  RealRun(script, "", &status);
  ASSERT_EQ(status, 0);
  std::string direct = Direct();
  for (int i = 0; i < kProcesses; ++i) {
    std::string n = std::to_string(i);
    EXPECT_EQ(ReadFile(dir_.path() + "/rc." + n), "0\n") << i;
    EXPECT_EQ(ReadFile(dir_.path() + "/out." + n), direct) << i;
    EXPECT_EQ(ReadFile(dir_.path() + "/err." + n), "") << i;
  }
  ExpectIndexAndNameMemo(cache);
}

TEST_F(IndexCliTest, FullFileSystemFallsBackWithAWarning) {
  std::string cache = dir_.Make("cache");
  std::string err_path = dir_.Make("stderr");
  int status = -1;
  // A file-size limit of one block makes writing the index fail (EFBIG) like a full disk.
  std::string out = RunCli("trap '' XFSZ; ulimit -f 1; exec " + kStacksym +
                               " symbolize elf --output-style=llvm --cache-dir " + cache +
                               " --file " + kFixture + " 2>" + err_path,
                           &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out, Direct());
  std::string err = ReadFile(err_path);
  EXPECT_EQ(CountLines(err, "warning"), 1u) << err;
  EXPECT_TRUE(FilesIn(cache).empty()) << "a partial index or temporary file was left";
}

TEST_F(IndexCliTest, CacheBuildListPrune) {
  std::string cache = dir_.Make("cache");
  int status = -1;
  std::string built =
      RunCli(kStacksym + " cache build --cache-dir " + cache + " " + kFixture, &status, "");
  EXPECT_EQ(status, 0);
  EXPECT_NE(built.find(kFixture), std::string::npos) << built;
  std::string listed = RunCli(kStacksym + " cache list --cache-dir " + cache, &status, "");
  EXPECT_EQ(status, 0);
  EXPECT_EQ(listed, built);
  auto elf = ElfFile::Open(kFixture);
  ASSERT_TRUE(elf);
  EXPECT_NE(listed.find((*elf)->build_id_hex()), std::string::npos) << listed;
  EXPECT_NE(listed.find("\tindex\n"), std::string::npos) << listed;
  EXPECT_NE(listed.find(".unwtab\t"), std::string::npos) << listed;
  EXPECT_NE(listed.find("\tunwind\n"), std::string::npos) << listed;
  RunCli(kStacksym + " cache build --cache-dir " + cache + " /nonexistent", &status, "");
  EXPECT_EQ(status, 1);
  std::string pruned =
      RunCli(kStacksym + " cache prune --max-bytes 0 --cache-dir " + cache, &status, "");
  EXPECT_EQ(status, 0);
  // The index and the unwind table `cache build` stores next to it.
  EXPECT_NE(pruned.find("removed 2 files"), std::string::npos) << pruned;
  EXPECT_TRUE(FilesIn(cache).empty());
}

}  // namespace
}  // namespace stacksym
