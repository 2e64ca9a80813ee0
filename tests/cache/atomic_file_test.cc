// AtomicFile: what a reader can see of a file being written. The file appears only whole
// (pieces written in the background at their offset, the rest at Commit), replaces an older
// one in one step, and leaves nothing behind when it is not committed or a write fails.
#include "cache/atomic_file.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "real_test_util.h"

namespace stacksym::cache {
namespace {

using testing::RealTempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
  }
  return names;
}

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Pieces of different sizes, one over a megabyte (several writes' worth).
struct Pieces {
  std::vector<std::string> texts;
  std::vector<std::span<const uint8_t>> spans;
  std::string whole;
  Pieces() {
    texts = {"HEAD",  std::string(5, 'a'),   std::string(1 << 20, 'b') + "c", "",
             "tail!", std::string(4093, 'd')};
    for (const std::string& t : texts) {
      spans.push_back(Bytes(t));
      whole += t;
    }
  }
  uint64_t OffsetOf(size_t piece) const {
    uint64_t offset = 0;
    for (size_t i = 0; i < piece; ++i) offset += texts[i].size();
    return offset;
  }
};

TEST(AtomicFileTest, BackgroundAndCommittedPiecesMakeTheWholeFile) {
  RealTempDir dir;
  std::string path = dir.path() + "/out";
  Pieces p;
  {
    AtomicFile file(dir.path(), path);
    file.WriteInBackground(p.OffsetOf(1), {p.spans.begin() + 1, p.spans.begin() + 4});
    EXPECT_TRUE(::access(path.c_str(), F_OK) != 0) << "visible before Commit";
    ASSERT_TRUE(file.Commit(p.spans, 1, 4));
  }
  EXPECT_EQ(ReadAll(path), p.whole);
  EXPECT_EQ(Names(dir.path()), std::vector<std::string>{"out"}) << "a temporary was left";
}

// The temporary is `path.tmp.<pid>.<8 hex digits>`: the cache directory's listing and pruning
// know a writer's file by ".tmp.", and a dead writer's by its age.
TEST(AtomicFileTest, TemporaryIsNamedForThePathAndTheProcess) {
  RealTempDir dir;
  std::string path = dir.path() + "/out.symidx";
  AtomicFile file(dir.path(), path);
  std::vector<std::string> names = Names(dir.path());
  ASSERT_EQ(names.size(), 1u);
  const std::string prefix = "out.symidx.tmp." + std::to_string(::getpid()) + ".";
  ASSERT_EQ(names[0].rfind(prefix, 0), 0u) << names[0];
  const std::string random = names[0].substr(prefix.size());
  EXPECT_EQ(random.size(), 8u) << names[0];
  EXPECT_EQ(random.find_first_not_of("0123456789abcdef"), std::string::npos) << names[0];
}

TEST(AtomicFileTest, CommitAloneWritesEveryPieceAndReplacesTheOldFile) {
  RealTempDir dir;
  std::string path = dir.path() + "/out";
  std::ofstream(path) << "old contents";
  Pieces p;
  ASSERT_TRUE(AtomicFile(dir.path(), path).Commit(p.spans));
  EXPECT_EQ(ReadAll(path), p.whole);
  EXPECT_EQ(Names(dir.path()).size(), 1u);
}

TEST(AtomicFileTest, UncommittedFileLeavesNothing) {
  RealTempDir dir;
  std::string path = dir.path() + "/out";
  Pieces p;
  {
    AtomicFile file(dir.path(), path);
    file.WriteInBackground(0, p.spans);
  }
  EXPECT_TRUE(Names(dir.path()).empty());
}

TEST(AtomicFileTest, FailedBackgroundWriteFailsTheCommitAndLeavesNothing) {
  RealTempDir dir;
  std::string path = dir.path() + "/out";
  Pieces p;
  // A file-size limit below the big piece makes its write fail (EFBIG) like a full disk;
  // Commit's own piece (the head) fits: the failure it reports is the background one's.
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  Result<void> r = Result<void>();
  {
    AtomicFile file(dir.path(), path);
    file.WriteInBackground(p.OffsetOf(1), {p.spans.begin() + 1, p.spans.end()});
    r = file.Commit(p.spans, 1, p.spans.size());
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(r);
  EXPECT_TRUE(Names(dir.path()).empty()) << "a partial file was left";
}

TEST(AtomicFileTest, UncreatableTemporaryIsAnError) {
  RealTempDir dir;
  std::string missing = dir.path() + "/no/such/dir";
  Pieces p;
  AtomicFile file(missing, missing + "/out");
  file.WriteInBackground(0, p.spans);  // ignored: there is no file
  Result<void> r = file.Commit(p.spans);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().ToString().find("create"), std::string::npos) << r.error().ToString();
}

}  // namespace
}  // namespace stacksym::cache
