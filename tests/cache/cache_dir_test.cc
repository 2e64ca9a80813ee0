// The cache directory: which files are its own (the three kinds and their temporaries), least
// recently used pruning over all kinds alike, the directory made on demand, whole-file stores,
// the name of a binary without a build ID and the default directory.
#include "cache/cache_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "base/hex.h"
#include "cache/checksum.h"
#include "real_test_util.h"
#include "stacksym/symbol_cache.h"

namespace stacksym::cache {
namespace {

using testing::RealTempDir;

class CacheDirTest : public ::testing::Test {
 protected:
  // A file of `bytes` bytes, last used `age` seconds ago.
  void Make(const std::string& name, size_t bytes, time_t age = 0) {
    std::string path = dir_.Make(name);
    ASSERT_TRUE(testing::RealWriteFile(path, std::string(bytes, 'x')));
    struct timespec times[2] = {{now_ - age, 0}, {now_ - age, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }
  bool Exists(const std::string& name) const {
    return ::access((dir_.path() + "/" + name).c_str(), F_OK) == 0;
  }
  std::vector<std::string> Names(std::initializer_list<const char*> suffixes) const {
    auto files = ListFiles(dir_.path(), suffixes);
    EXPECT_TRUE(files) << files.error().ToString();
    std::vector<std::string> names;
    if (!files) return names;
    for (const DirFile& f : *files) {
      names.push_back(f.path.substr(dir_.path().size() + 1) + (f.temporary ? " (tmp)" : ""));
    }
    return names;
  }

  RealTempDir dir_;
  time_t now_ = time(nullptr);
};

TEST_F(CacheDirTest, ListsItsKindsAndTheirTemporariesSortedByPath) {
  Make("b.unwtab", 3);
  Make("a.symidx", 5, 60);
  Make("a.symnames", 7);
  Make("c.symidx.tmp.12.0000abcd", 1);
  Make("notes.txt", 1);
  Make("dir.symidx/inside", 1);  // a directory with our suffix
  ASSERT_EQ(::symlink("a.symidx", (dir_.path() + "/link.symidx").c_str()), 0);
  EXPECT_EQ(Names({kIndexSuffix}),
            (std::vector<std::string>{"a.symidx", "c.symidx.tmp.12.0000abcd (tmp)"}));
  EXPECT_EQ(Names({kUnwindTableSuffix}), std::vector<std::string>{"b.unwtab"});
  EXPECT_EQ(Names({kIndexSuffix, kNameMemoSuffix, kUnwindTableSuffix}),
            (std::vector<std::string>{"a.symidx", "a.symnames", "b.unwtab",
                                      "c.symidx.tmp.12.0000abcd (tmp)"}));
  auto files = ListFiles(dir_.path(), {kIndexSuffix});
  ASSERT_TRUE(files);
  EXPECT_EQ((*files)[0].bytes, 5u);
  EXPECT_EQ((*files)[0].mtime_ns, int64_t{now_ - 60} * 1000000000);
  auto missing = ListFiles(dir_.path() + "/missing", {kIndexSuffix});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().ToString().find("open directory"), std::string::npos);
}

TEST_F(CacheDirTest, PruneDropsLeastRecentlyUsedFirstWhateverTheKind) {
  Make("a.symidx", 1000, 300);
  Make("b.unwtab", 1000, 250);
  Make("c.symnames", 1000, 100);
  Make("d.symidx", 1000, 200);
  Make("e.unwtab.tmp.1.0000000a", 10, 7200);  // left by a dead writer
  Make("f.symidx.tmp.2.0000000b", 10);        // being written now
  Make("other.txt", 5000, 9999);              // not ours
  auto result = PruneSymbolCache(dir_.path(), 2000);
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_EQ(result->kept_bytes, 2000u);
  EXPECT_EQ(result->removed_files, 3u);
  EXPECT_EQ(result->removed_bytes, 2010u);
  EXPECT_FALSE(Exists("a.symidx"));
  EXPECT_FALSE(Exists("b.unwtab"));
  EXPECT_TRUE(Exists("c.symnames"));
  EXPECT_TRUE(Exists("d.symidx"));
  EXPECT_FALSE(Exists("e.unwtab.tmp.1.0000000a"));
  EXPECT_TRUE(Exists("f.symidx.tmp.2.0000000b"));
  EXPECT_TRUE(Exists("other.txt"));
}

TEST_F(CacheDirTest, MarkUsedKeepsAFileFromPruning) {
  Make("old.symidx", 100, 500);
  Make("new.unwtab", 100, 10);
  MarkUsed(dir_.path() + "/old.symidx");
  auto result = PruneSymbolCache(dir_.path(), 150);
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_TRUE(Exists("old.symidx"));
  EXPECT_FALSE(Exists("new.unwtab"));
}

TEST_F(CacheDirTest, CheckWritableMakesTheDirectory) {
  const std::string nested = dir_.path() + "/a/b/c";
  ASSERT_TRUE(CheckWritable(nested));
  struct stat st;
  ASSERT_EQ(::stat(nested.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_TRUE(CheckWritable(nested)) << "an existing directory";
  Make("file", 1);
  Result<void> r = CheckWritable(dir_.path() + "/file");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().ToString().find("is not a directory"), std::string::npos)
      << r.error().ToString();
  EXPECT_FALSE(CheckWritable(dir_.path() + "/file/below"));
}

TEST_F(CacheDirTest, StoreAtomicallyLeavesTheWholeFileAndNoTemporary) {
  const std::string path = dir_.path() + "/x.unwtab";
  const std::vector<uint8_t> bytes = {1, 2, 3, 4, 5};
  ASSERT_TRUE(StoreAtomically(dir_.path(), path, bytes));
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(back, bytes);
  EXPECT_EQ(Names({kUnwindTableSuffix}), std::vector<std::string>{"x.unwtab"});
}

// The name is part of the files' names (index and unwind table of a binary without a build ID):
// changing it orphans every such file in every cache directory.
TEST(CacheNameTest, NoBuildIdNameIsTwoChecksumsOfTheIdentity) {
  const std::string identity = "2049 1234 5000 1700000000000000000";
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(identity.data()),
                                       identity.size());
  EXPECT_EQ(NoBuildIdName(identity),
            "noid-" + HexU32Padded(Crc32c(bytes)) + HexU32Padded(Crc32c(bytes, 0x5bd1e995)));
  EXPECT_EQ(NoBuildIdName(identity).size(), 21u);
  EXPECT_NE(NoBuildIdName(identity), NoBuildIdName(identity + "1"));
}

// XDG_CACHE_HOME when absolute, else ~/.cache, else none.
TEST(CacheNameTest, DefaultDirectory) {
  auto saved = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  std::optional<std::string> xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(DefaultSymbolCacheDir(), "/x/cache/stacksym");
  ::setenv("XDG_CACHE_HOME", "relative", 1);
  EXPECT_EQ(DefaultSymbolCacheDir(), "/home/u/.cache/stacksym");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(DefaultSymbolCacheDir(), "/home/u/.cache/stacksym");
  ::unsetenv("HOME");
  EXPECT_EQ(DefaultSymbolCacheDir(), "");
  xdg ? ::setenv("XDG_CACHE_HOME", xdg->c_str(), 1) : ::unsetenv("XDG_CACHE_HOME");
  home ? ::setenv("HOME", home->c_str(), 1) : ::unsetenv("HOME");
}

}  // namespace
}  // namespace stacksym::cache
