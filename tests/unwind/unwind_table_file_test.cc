// Persisted unwind tables: the table loaded from the cache directory equals the one built
// from CFI, row for row (fixtures, libc, python3); a flipped, truncated, foreign-version or
// other-binary file is detected, reported once, rebuilt, and the table is still the built
// one; an unusable directory degrades to in-memory tables with one warning; the files are
// listed with their kind and pruned with the symbol indexes.
#include "unwind/unwind_table_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "../dwarf/real_test_util.h"
#include "../elf/tool_runner.h"
#include "stacksym/symbol_cache.h"
#include "stacksym/unwind.h"

namespace stacksym::testing {
namespace {

std::shared_ptr<ElfFile> Open(const std::string& path) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << path << ": " << (elf ? "" : elf.error().ToString());
  return elf ? *elf : nullptr;
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// Equal in everything the unwinders and the messages use.
void ExpectSameTable(const UnwindTable& a, const UnwindTable& b, const std::string& what) {
  EXPECT_EQ(a.base_pc(), b.base_pc()) << what;
  EXPECT_EQ(a.end_pc(), b.end_pc()) << what;
  ASSERT_EQ(a.rows().size(), b.rows().size()) << what;
  for (size_t i = 0; i < a.rows().size(); ++i) {
    ASSERT_EQ(a.rows()[i], b.rows()[i]) << what << ": row " << i;
  }
  EXPECT_TRUE(std::equal(a.build_id().begin(), a.build_id().end(), b.build_id().begin(),
                         b.build_id().end()))
      << what;
  const UnwindTableStats& s = a.stats();
  const UnwindTableStats& t = b.stats();
  EXPECT_EQ(s.cies, t.cies) << what;
  EXPECT_EQ(s.fdes, t.fdes) << what;
  EXPECT_EQ(s.fdes_skipped, t.fdes_skipped) << what;
  EXPECT_EQ(s.unsupported_rows, t.unsupported_rows) << what;
  EXPECT_EQ(s.fdes_overlapping, t.fdes_overlapping) << what;
  EXPECT_EQ(s.fdes_outside_code, t.fdes_outside_code) << what;
  EXPECT_EQ(s.eh_frame_hdr_fdes, t.eh_frame_hdr_fdes) << what;
  EXPECT_EQ(s.first_problem, t.first_problem) << what;
  EXPECT_EQ(s.eh_frame_hdr_problem, t.eh_frame_hdr_problem) << what;
}

const char* const kFixtures[] = {"unwind_gcc_o2",          "unwind_gcc_o0",   "unwind_clang_o2",
                                 "unwind_clang_o0",        "unwind_gxx_o2",   "unwind_clangxx_o2",
                                 "unwind_gcc_debug_frame", "unwind_gcc_split"};
const char* const kSystem[] = {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11",
                               "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"};

std::vector<std::string> AllBinaries() {
  std::vector<std::string> out;
  for (const char* f : kFixtures) out.push_back(Fixture(f));
  for (const char* f : kSystem) {
    if (::access(f, R_OK) == 0) out.push_back(f);
  }
  return out;
}

// Every binary through a cold directory (built and stored), then through a new cache on the
// same directory (loaded): both equal to UnwindTable::Build, every row.
// (A directory per binary: unwind_gcc_split is unwind_gcc_debug_frame stripped, the same build
// ID, and a build ID names one table, whichever of the two stored it.)
TEST(UnwindTableFile, LoadedTableEqualsBuiltTable) {
  size_t system = 0;
  for (const std::string& path : AllBinaries()) {
    RealTempDir dir;
    std::shared_ptr<ElfFile> elf = Open(path);
    ASSERT_TRUE(elf);
    auto built = UnwindTable::Build(*elf);
    ASSERT_TRUE(built) << built.error().ToString();
    EXPECT_FALSE((*built)->empty()) << path;

    auto parsed = unwind::Parse(unwind::Serialize(**built, unwind::IdentityOf(*elf)));
    ASSERT_TRUE(parsed) << path << ": " << parsed.error().ToString();
    ExpectSameTable(**built, *parsed->table, path + " (parsed)");
    EXPECT_EQ(parsed->identity, unwind::IdentityOf(*elf));

    UnwindTableCache cold({.dir = dir.path()});
    ExpectSameTable(**built, *cold.Get(*elf), path + " (cold)");
    EXPECT_EQ(cold.dir_stores(), 1u) << path;
    EXPECT_EQ(cold.dir_loads(), 0u) << path;
    UnwindTableCache warm({.dir = dir.path()});
    ExpectSameTable(**built, *warm.Get(*elf), path + " (warm)");
    EXPECT_EQ(warm.dir_loads(), 1u) << path;
    EXPECT_EQ(warm.dir_stores(), 0u) << path;
    if (path.starts_with("/usr/")) ++system;
  }
  if (system == 0) GTEST_SKIP() << "no system binary (libc, python3.11) to compare";
}

// A table built with a separate debug file's .debug_frame is not persisted (its file name
// would need the debug file's identity too): it is built in memory, the same as before.
TEST(UnwindTableFile, TablesWithADebugFileStayInMemory) {
  RealTempDir dir;
  std::shared_ptr<ElfFile> elf = Open(Fixture("unwind_gcc_split"));
  std::shared_ptr<ElfFile> debug = Open(Fixture("unwind_gcc_split.debug"));
  ASSERT_TRUE(elf && debug);
  UnwindTableCache cache({.dir = dir.path()});
  auto built = UnwindTable::Build(*elf, debug.get());
  ASSERT_TRUE(built);
  ExpectSameTable(**built, *cache.Get(*elf, debug.get()), "with debug file");
  EXPECT_EQ(cache.dir_stores(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

class UnwindTableFileDamage : public ::testing::Test {
 protected:
  void SetUp() override {
    elf_ = Open("/usr/lib/x86_64-linux-gnu/libc.so.6");
    if (!elf_) elf_ = Open(Fixture("unwind_gxx_o2"));
    ASSERT_TRUE(elf_);
    auto built = UnwindTable::Build(*elf_);
    ASSERT_TRUE(built);
    built_ = *built;
    file_ = dir_.path() + "/" + unwind::FileName(*elf_);
    UnwindTableCache cache({.dir = dir_.path()});
    cache.Get(*elf_);
    good_ = ReadBytes(file_);
    ASSERT_GT(good_.size(), unwind::kHeaderSize);
  }

  // Puts `bytes` in place, gets the table through a new cache: the built table, one warning
  // (when `warns`), and an intact file afterwards.
  void ExpectRebuilt(const std::vector<uint8_t>& bytes, const std::string& what,
                     bool warns = true) {
    WriteBytes(file_, bytes);
    ::testing::internal::CaptureStderr();
    UnwindTableCache cache({.dir = dir_.path()});
    std::shared_ptr<const UnwindTable> got = cache.Get(*elf_);
    cache.Get(*elf_);  // remembered: no second message
    std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_NE(got, nullptr) << what;
    ExpectSameTable(*built_, *got, what);
    EXPECT_EQ(cache.dir_loads(), 0u) << what;
    EXPECT_EQ(cache.dir_stores(), 1u) << what;
    size_t warnings = 0;
    for (size_t p = err.find("warning"); p != std::string::npos; p = err.find("warning", p + 1)) {
      ++warnings;
    }
    EXPECT_EQ(warnings, warns ? 1u : 0u) << what << ": " << err;
    EXPECT_EQ(ReadBytes(file_), good_) << what << ": the file was not rebuilt";
  }

  RealTempDir dir_;
  std::shared_ptr<ElfFile> elf_;
  std::shared_ptr<const UnwindTable> built_;
  std::string file_;
  std::vector<uint8_t> good_;
};

TEST_F(UnwindTableFileDamage, FlippedBytesAreDetectedAndRebuilt) {
  // Every byte of the header and meta section, then bytes spread over the rows.
  std::vector<size_t> offsets;
  const size_t rows_at = good_.size() - built_->rows().size_bytes();
  for (size_t i = 0; i < rows_at; ++i) offsets.push_back(i);
  for (size_t i = rows_at; i < good_.size();
       i += std::max<size_t>(1, (good_.size() - rows_at) / 97)) {
    offsets.push_back(i);
  }
  offsets.push_back(good_.size() - 1);
  for (size_t off : offsets) {
    std::vector<uint8_t> bad = good_;
    bad[off] ^= 0x20;
    ExpectRebuilt(bad, "byte " + std::to_string(off) + " flipped");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_F(UnwindTableFileDamage, TruncationAtManyOffsetsIsDetectedAndRebuilt) {
  std::vector<size_t> sizes = {0, 1, 7, 8, 63, 64, 65, good_.size() - 1, good_.size() - 16};
  for (size_t n = 100; n < good_.size(); n += good_.size() / 61 + 1) sizes.push_back(n);
  for (size_t n : sizes) {
    std::vector<uint8_t> bad(good_.begin(), good_.begin() + static_cast<ptrdiff_t>(n));
    ExpectRebuilt(bad, "truncated to " + std::to_string(n));
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::vector<uint8_t> longer = good_;
  longer.push_back(0);
  ExpectRebuilt(longer, "one byte appended");
}

TEST_F(UnwindTableFileDamage, OtherBuildIdIsDetectedAndRebuilt) {
  std::shared_ptr<ElfFile> other = Open(Fixture("unwind_clang_o2"));
  ASSERT_TRUE(other);
  auto table = UnwindTable::Build(*other);
  ASSERT_TRUE(table);
  ExpectRebuilt(unwind::Serialize(**table, unwind::IdentityOf(*other)), "another binary's table");
}

TEST_F(UnwindTableFileDamage, OldVersionIsDetectedAndRebuilt) {
  std::vector<uint8_t> old = good_;
  const uint32_t version = unwind::kVersion - 1;
  std::memcpy(old.data() + 8, &version, sizeof(version));  // the header CRC still fails
  ExpectRebuilt(old, "version field changed");
  // A well-formed file of another version (its own CRC right) is refused by version.
  auto parsed = unwind::Parse(good_);
  ASSERT_TRUE(parsed);
  std::vector<uint8_t> future = good_;
  const uint32_t next = unwind::kVersion + 1;
  std::memcpy(future.data() + 8, &next, sizeof(next));
  auto r = unwind::Parse(future);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("version"), std::string::npos) << r.error().ToString();
  ExpectRebuilt(future, "newer version");
}

TEST_F(UnwindTableFileDamage, ListShowsKindAndDamage) {
  auto listed = ListUnwindTableCache(dir_.path());
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].kind, "unwind");
  EXPECT_EQ((*listed)[0].path, file_);
  EXPECT_EQ((*listed)[0].build_id, elf_->build_id_hex());
  EXPECT_EQ((*listed)[0].binary, elf_->path());
  EXPECT_EQ((*listed)[0].problem, "");
  std::vector<uint8_t> bad = good_;
  bad.back() ^= 1;
  WriteBytes(file_, bad);
  listed = ListUnwindTableCache(dir_.path());
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_NE((*listed)[0].problem.find("checksum"), std::string::npos) << (*listed)[0].problem;
  // The symbol indexes' listing does not include it; pruning does.
  auto indexes = ListSymbolCache(dir_.path());
  ASSERT_TRUE(indexes);
  EXPECT_TRUE(indexes->empty());
  auto pruned = PruneSymbolCache(dir_.path(), 0);
  ASSERT_TRUE(pruned);
  EXPECT_EQ(pruned->removed_files, 1u);
  EXPECT_FALSE(std::filesystem::exists(file_));
}

TEST(UnwindTableFile, UnusableDirectoryWarnsOnceAndKeepsTablesInMemory) {
  RealTempDir dir;
  std::string not_a_dir = dir.path() + "/file";
  WriteBytes(not_a_dir, {1, 2, 3});
  UnwindTableCache cache({.dir = not_a_dir + "/cache"});
  ::testing::internal::CaptureStderr();
  std::vector<std::shared_ptr<const UnwindTable>> got;
  std::vector<std::string> paths = {Fixture("unwind_gcc_o2"), Fixture("unwind_clang_o2"),
                                    Fixture("unwind_gxx_o2")};
  for (const std::string& p : paths) got.push_back(cache.Get(*Open(p)));
  std::string err = ::testing::internal::GetCapturedStderr();
  for (size_t i = 0; i < paths.size(); ++i) {
    auto built = UnwindTable::Build(*Open(paths[i]));
    ASSERT_TRUE(built);
    ExpectSameTable(**built, *got[i], paths[i]);
  }
  EXPECT_EQ(cache.dir_stores(), 0u);
  size_t warnings = 0;
  for (size_t p = err.find("warning"); p != std::string::npos; p = err.find("warning", p + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 1u) << err;
}

// A binary without a build ID: keyed by file identity; a changed file is another file name,
// never the old table.
TEST(UnwindTableFile, BinaryWithoutBuildIdIsKeyedByIdentity) {
  RealTempDir dir;
  std::string copy = dir.path() + "/noid";
  int status = -1;
  RealRun("objcopy --remove-section .note.gnu.build-id " + Fixture("unwind_gcc_o2") + " " + copy,
          "", &status);
  ASSERT_EQ(status, 0);
  std::string cache_dir = dir.path() + "/cache";
  std::shared_ptr<ElfFile> elf = Open(copy);
  ASSERT_TRUE(elf);
  ASSERT_TRUE(elf->build_id().empty());
  EXPECT_TRUE(unwind::FileName(*elf).starts_with("noid-")) << unwind::FileName(*elf);
  auto built = UnwindTable::Build(*elf);
  ASSERT_TRUE(built);
  UnwindTableCache({.dir = cache_dir}).Get(*elf);
  UnwindTableCache warm({.dir = cache_dir});
  ExpectSameTable(**built, *warm.Get(*elf), "noid warm");
  EXPECT_EQ(warm.dir_loads(), 1u);
  // Another file's table under this file's name: refused by identity.
  std::string mine = cache_dir + "/" + unwind::FileName(*elf);
  std::vector<uint8_t> foreign = unwind::Serialize(**built, "binary /elsewhere\nnoid 1 2 3 4\n");
  WriteBytes(mine, foreign);
  auto loaded = unwind::Load(mine, *elf);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("another file"), std::string::npos);
}

// Several recorders storing the same table at once (each its own cache, as separate
// processes): all succeed, all get the built table, one intact file and no temporary left.
TEST(UnwindTableFile, ConcurrentStoresOfOneTableAllSucceed) {
  RealTempDir dir;
  std::shared_ptr<ElfFile> elf = Open(Fixture("unwind_gxx_o2"));
  ASSERT_TRUE(elf);
  auto built = UnwindTable::Build(*elf);
  ASSERT_TRUE(built);
  std::vector<std::shared_ptr<const UnwindTable>> got(6);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] { got[i] = UnwindTableCache({.dir = dir.path()}).Get(*elf); });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& t : got) ExpectSameTable(**built, *t, "concurrent");
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_TRUE(e.path().string().ends_with(".unwtab")) << e.path();
  }
  EXPECT_EQ(files, 1u);
  auto loaded = unwind::Load(dir.path() + "/" + unwind::FileName(*elf), *elf);
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  ExpectSameTable(**built, **loaded, "after concurrent stores");
}

TEST(UnwindTableFile, BuildUnwindTableFileDescribesIt) {
  RealTempDir dir;
  auto entry = BuildUnwindTableFile(Fixture("unwind_gxx_o2"), dir.path());
  ASSERT_TRUE(entry) << entry.error().ToString();
  EXPECT_EQ(entry->kind, "unwind");
  EXPECT_EQ(entry->problem, "");
  EXPECT_GT(entry->bytes, unwind::kHeaderSize);
  auto again = BuildUnwindTableFile(Fixture("unwind_gxx_o2"), dir.path());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->path, entry->path);
  EXPECT_FALSE(BuildUnwindTableFile("/nonexistent", dir.path()));
}

}  // namespace
}  // namespace stacksym::testing
