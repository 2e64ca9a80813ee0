// The cache never gives a wrong answer: a corrupt, truncated, foreign-version, other-build-ID
// or stale index is detected and rebuilt, an unusable directory falls back to the direct
// path, and the answers are always those of the direct path.
#include "index/index_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "index/index_format.h"
#include "index/index_identity.h"
#include "index/symbol_index.h"
#include "index_test_util.h"
#include "real_test_util.h"
#include "stacksym/symbol_cache.h"
#include "symbolize/narrow_options.h"

namespace stacksym {
namespace {

using testing::Answers;
using testing::FirstDifferences;
using testing::ReadBytes;
using testing::RealTempDir;
using testing::WriteBytes;

std::string Fixture(const std::string& name) {
  return std::string(STACKSYM_FIXTURE_DIR) + "/" + name;
}

// The section table entry of `kind` in an index file's bytes (size 0: no such section).
index::SectionEntry SectionOf(const std::vector<uint8_t>& bytes, index::SectionKind kind) {
  index::FileHeader header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  for (uint32_t i = 0; i < header.section_count; ++i) {
    index::SectionEntry entry;
    std::memcpy(&entry, bytes.data() + sizeof(header) + i * sizeof(entry), sizeof(entry));
    if (entry.kind == static_cast<uint32_t>(kind)) return entry;
  }
  return {};
}

class IndexCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = Fixture(fixture_name_);
    auto elf = ElfFile::Open(path_);
    ASSERT_TRUE(elf);
    elf_ = *elf;
    addresses_ = testing::SegmentAddresses(*elf_, 3);
    expected_ = Answers(path_, addresses_, SymbolizeOptions{});
    ASSERT_EQ(expected_.size(), addresses_.size());
    cached_.cache_dir = cache_.path();
    index_path_ = testing::IndexPathFor(path_, cache_.path());
  }

  // Symbolizes through the cache and checks the answers and that a valid index is in place.
  void ExpectDirectAnswers(const std::string& what) {
    std::vector<std::string> actual = Answers(path_, addresses_, cached_);
    ASSERT_EQ(FirstDifferences(addresses_, expected_, actual), "") << what;
    auto index = index::OpenValidIndex(index_path_, *elf_, symbolize::ToIndexOptions(cached_));
    ASSERT_TRUE(index) << what << ": " << index.error().ToString();
  }

  std::string fixture_name_ = "dwarf_gcc_cxx_o2_d5";
  std::string path_;
  std::shared_ptr<ElfFile> elf_;
  std::vector<uint64_t> addresses_;
  std::vector<std::string> expected_;
  RealTempDir cache_;
  SymbolizeOptions cached_;
  std::string index_path_;
};

TEST_F(IndexCacheTest, FlippedBytesAreDetectedAndRebuilt) {
  ExpectDirectAnswers("first build");
  const std::vector<uint8_t> good = ReadBytes(index_path_);
  ASSERT_GT(good.size(), 1000u);
  std::vector<size_t> offsets;
  for (size_t o = 0; o < 512 && o < good.size(); o += 16) offsets.push_back(o);
  for (size_t o = 512; o < good.size(); o += good.size() / 47 + 1) offsets.push_back(o);
  offsets.push_back(good.size() - 1);
  size_t detected = 0;
  for (size_t o : offsets) {
    std::vector<uint8_t> bad = good;
    bad[o] ^= 0x5a;
    WriteBytes(index_path_, bad);
    ExpectDirectAnswers("byte " + std::to_string(o) + " flipped");
    detected += ReadBytes(index_path_) == good;  // rebuilt (or a padding byte, harmless)
  }
  EXPECT_GT(detected, offsets.size() * 9 / 10);
}

TEST_F(IndexCacheTest, TruncationIsDetectedAndRebuilt) {
  ExpectDirectAnswers("first build");
  const std::vector<uint8_t> good = ReadBytes(index_path_);
  for (size_t length = 0; length < good.size(); length += good.size() / 61 + 1) {
    WriteBytes(index_path_,
               std::vector<uint8_t>(good.begin(), good.begin() + static_cast<long>(length)));
    ExpectDirectAnswers("truncated to " + std::to_string(length));
    EXPECT_EQ(ReadBytes(index_path_), good) << "not rebuilt after truncation to " << length;
  }
}

TEST_F(IndexCacheTest, IndexOfAnotherBuildIdIsRebuilt) {
  SymbolizeOptions other = cached_;
  std::string other_path = Fixture("dwarf_clang_cxx_o2_d5");
  (void)Answers(other_path, {0x1000}, other);
  std::string other_index = testing::IndexPathFor(other_path, cache_.path());
  ASSERT_EQ(access(other_index.c_str(), R_OK), 0);
  WriteBytes(index_path_, ReadBytes(other_index));
  ExpectDirectAnswers("index of another binary");
}

// The -O0 fixture: names enough for a string dictionary (at -O2 they are too few to train one).
class IndexCacheDictionaryTest : public IndexCacheTest {
 protected:
  void SetUp() override {
    fixture_name_ = "dwarf_gcc_cxx_o0_d5";
    IndexCacheTest::SetUp();
  }
};

// The string blocks' zstd dictionary is read on open: a flipped byte in it is caught there
// (by its chunk checksum) and the index rebuilt, never used to decompress names.
TEST_F(IndexCacheDictionaryTest, DamagedStringDictionaryIsDetectedAndRebuilt) {
  ExpectDirectAnswers("first build");
  const std::vector<uint8_t> good = ReadBytes(index_path_);
  const index::SectionEntry dict = SectionOf(good, index::SectionKind::kStringDict);
  ASSERT_GT(dict.size, 0u) << "the fixture's strings got no dictionary";
  for (uint64_t o : {dict.offset, dict.offset + dict.size / 2, dict.offset + dict.size - 1}) {
    std::vector<uint8_t> bad = good;
    bad[o] ^= 0x5a;
    WriteBytes(index_path_, bad);
    EXPECT_FALSE(index::SymbolIndex::Open(index_path_)) << o;
    ExpectDirectAnswers("dictionary byte " + std::to_string(o) + " flipped");
    EXPECT_EQ(ReadBytes(index_path_), good) << "not rebuilt after byte " << o;
  }
}

TEST_F(IndexCacheTest, OtherVersionIsRebuilt) {
  ExpectDirectAnswers("first build");
  std::vector<uint8_t> bytes = ReadBytes(index_path_);
  uint32_t old_version = index::kVersion - 1;
  std::memcpy(bytes.data() + offsetof(index::FileHeader, version), &old_version, 4);
  WriteBytes(index_path_, bytes);
  auto rejected = index::SymbolIndex::Open(index_path_);
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().code, ErrorCode::kUnsupported);
  ExpectDirectAnswers("old version");
}

TEST(IndexStalenessTest, ChangedOrNewDebugFileRebuildsTheIndex) {
  RealTempDir dir;
  std::string binary = dir.Make("bin/real_dbg.stripped");
  std::string debug = dir.Make("bin/real_dbg.debug");
  ASSERT_TRUE(testing::RealCopy(Fixture("real_dbg.stripped"), binary));
  auto elf = ElfFile::Open(binary);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> addresses = testing::SegmentAddresses(**elf, 1);
  SymbolizeOptions direct;
  direct.debug_dirs = {dir.Make("debug")};
  SymbolizeOptions cached = direct;
  cached.cache_dir = dir.Make("cache");
  // No debug file yet: the index holds symbols only.
  std::vector<std::string> before = Answers(binary, addresses, direct);
  EXPECT_EQ(FirstDifferences(addresses, before, Answers(binary, addresses, cached)), "");
  // The debuglink target appears next to the binary: the index must not keep answering
  // without it.
  ASSERT_TRUE(testing::RealCopy(Fixture("real_dbg.debug"), debug));
  std::vector<std::string> with_debug = Answers(binary, addresses, direct);
  ASSERT_NE(before, with_debug) << "the fixture's debug file changes nothing";
  EXPECT_EQ(FirstDifferences(addresses, with_debug, Answers(binary, addresses, cached)), "");
  // The debug file is replaced by another one with the same name (touched): rebuilt again.
  std::string index_path = testing::IndexPathFor(binary, cached.cache_dir, direct);
  struct stat first;
  ASSERT_EQ(stat(index_path.c_str(), &first), 0);
  struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, debug.c_str(), times, 0), 0);
  EXPECT_EQ(FirstDifferences(addresses, with_debug, Answers(binary, addresses, cached)), "");
  struct stat second;
  ASSERT_EQ(stat(index_path.c_str(), &second), 0);
  EXPECT_NE(first.st_ino, second.st_ino) << "index not rebuilt after the debug file changed";
}

// The identity's build-ID paths are those of BuildIdPaths, which the finder tries: DWARF found
// under a debug dir written with a trailing slash is in place (no location line: the index
// stays valid wherever the binary is), and the paths said absent are the ones the finder
// would open.
TEST(IndexStalenessTest, BuildIdPathsOfADebugDirWithATrailingSlash) {
  auto elf = ElfFile::Open(Fixture("dwarf_gcc_cxx_o2_d5"));
  ASSERT_TRUE(elf);
  ASSERT_GE((*elf)->build_id().size(), 2u);
  dwarf::DebugFileSearch search;
  search.debug_dirs = {"/srv/debug/"};
  const std::string by_id =
      "/srv/debug/.build-id/" + (*elf)->build_id_hex().insert(2, "/") + ".debug";
  std::string found = index::DescribeSources(**elf, search, by_id, {{by_id, FileIdentity{}}});
  EXPECT_EQ(found.find("location "), std::string::npos) << found;
  std::string none = index::DescribeSources(**elf, search, "", {});
  EXPECT_NE(none.find("absent " + by_id + "\n"), std::string::npos) << none;
}

// With checksums not verified (as the fuzzer reads), corrupt records must still never make
// a lookup read out of bounds or loop: every index a lookup follows is checked.
TEST_F(IndexCacheTest, ReaderChecksEveryRecordWithoutChecksums) {
  ExpectDirectAnswers("first build");
  const std::vector<uint8_t> good = ReadBytes(index_path_);
  index::SymbolIndex::OpenOptions unchecked;
  unchecked.verify_checksums = false;
  uint64_t state = 0x9e3779b97f4a7c15;
  size_t opened = 0, inconsistent = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<uint8_t> bad = good;
    for (int k = 0; k < 1 + round % 4; ++k) {
      state = state * 6364136223846793005 + 1442695040888963407;
      bad[(state >> 17) % bad.size()] = static_cast<uint8_t>(state >> 56);
    }
    auto index = index::SymbolIndex::FromBytes(bad, unchecked);
    if (!index) continue;
    ++opened;
    for (size_t i = 0; i < addresses_.size(); i += 7) {
      for (bool inlines : {true, false}) {
        index::AnswerOptions options;
        options.inlines = inlines;
        SymbolizedAddress out;
        out.vaddr = addresses_[i];
        inconsistent += !(*index)->Answer(addresses_[i], options, out);
      }
    }
  }
  EXPECT_GT(opened, 100u);
  std::printf("%zu corrupt indexes opened, %zu lookups found an inconsistent record\n", opened,
              inconsistent);
}

// Chunks are checked when a lookup first reads them: a flipped byte anywhere a lookup reads
// makes that lookup (and every later one) return false before any answer comes from the
// damaged chunk, and the index says where; answers given before are the intact ones.
// An inlined node whose parent is itself or a later node (damage the checksums would catch,
// read here without them) is damage: the chain stops at once and the address is left to the
// direct path, instead of thousands of frames per lookup (which a fuzzer found: a mutated
// index took 12 s to answer a few hundred addresses). Parents are stored as distances back
// (at least 1), so the only such damage left is a distance reaching before the unit's first
// node: here every node's distance field set to all ones.
TEST_F(IndexCacheTest, InlineChainThatLoopsIsDamage) {
  ExpectDirectAnswers("first build");
  std::vector<uint8_t> bytes = ReadBytes(index_path_);
  const index::SectionEntry nodes_section = SectionOf(bytes, index::SectionKind::kNodes);
  const index::SectionEntry units_section = SectionOf(bytes, index::SectionKind::kUnits);
  ASSERT_GT(nodes_section.size, 0u);
  size_t damaged_nodes = 0;
  for (uint64_t at = units_section.offset;
       at + sizeof(index::UnitRecord) <= units_section.offset + units_section.size;
       at += sizeof(index::UnitRecord)) {
    index::UnitRecord unit;
    std::memcpy(&unit, bytes.data() + at, sizeof(unit));
    const index::NodeWidths widths = index::NodeWidths::Unpack(unit.node_widths);
    if (widths.parent == 0) continue;
    uint8_t* packed = bytes.data() + nodes_section.offset + unit.node_offset;
    const uint64_t all_ones = (uint64_t{1} << widths.parent) - 1;
    for (uint64_t n = 0; n < unit.node_count; ++n) {
      const uint64_t bit = n * widths.bits();
      if (n < all_ones) ++damaged_nodes;  // the distance now reaches before the first node
      index::PutBits(packed, bit, all_ones);
    }
  }
  ASSERT_GT(damaged_nodes, 10u) << "the fixture has nodes with parents";
  index::SymbolIndex::OpenOptions unchecked;
  unchecked.verify_checksums = false;
  auto index = index::SymbolIndex::FromBytes(bytes, unchecked);
  ASSERT_TRUE(index) << index.error().ToString();
  size_t damaged = 0, frames = 0;
  for (uint64_t a : addresses_) {
    SymbolizedAddress out;
    out.vaddr = a;
    damaged += !(*index)->Answer(a, index::AnswerOptions{}, out);
    frames += out.frames.size();
  }
  EXPECT_GT(damaged, 0u) << "no lookup met a parent before the unit's first node";
  EXPECT_LT(frames, addresses_.size() * 64) << "a damaged chain was followed";
}

// Function segment blocks whose bytes do not decode (a ULEB128 that never ends, damage the
// checksums would catch, read here without them) make the lookups that reach them report
// damage instead of answering from garbage or reading past the section.
TEST_F(IndexCacheTest, UndecodableFunctionSegmentBlocksAreDamage) {
  ExpectDirectAnswers("first build");
  std::vector<uint8_t> bytes = ReadBytes(index_path_);
  const index::SectionEntry segment_bytes =
      SectionOf(bytes, index::SectionKind::kFunctionSegmentBytes);
  ASSERT_GT(segment_bytes.size, 0u);
  std::memset(bytes.data() + segment_bytes.offset, 0xff, segment_bytes.size);
  index::SymbolIndex::OpenOptions unchecked;
  unchecked.verify_checksums = false;
  auto index = index::SymbolIndex::FromBytes(bytes, unchecked);
  ASSERT_TRUE(index) << index.error().ToString();
  size_t damaged = 0;
  for (uint64_t a : addresses_) {
    SymbolizedAddress out;
    out.vaddr = a;
    damaged += !(*index)->Answer(a, index::AnswerOptions{}, out);
  }
  EXPECT_GT(damaged, addresses_.size() / 2) << "lookups answered from undecodable segments";
  // With checksums verified, the chunks' sums find the same damage: on open (a chunk it shares
  // with a section checked then) or at the first lookup that reads it.
  auto checked = index::SymbolIndex::FromBytes(bytes, {});
  if (checked) {
    SymbolizedAddress out;
    for (uint64_t a : addresses_) (void)(*checked)->Answer(a, index::AnswerOptions{}, out);
    EXPECT_TRUE((*checked)->damaged());
  } else {
    EXPECT_NE(checked.error().ToString().find("checksum"), std::string::npos)
        << checked.error().ToString();
  }
}

TEST_F(IndexCacheTest, DamagedChunkIsDetectedBeforeItAnswers) {
  ExpectDirectAnswers("first build");
  const std::vector<uint8_t> good = ReadBytes(index_path_);
  auto intact = index::SymbolIndex::FromBytes(good, {});
  ASSERT_TRUE(intact);
  index::AnswerOptions options;
  std::vector<std::string> expected;
  for (uint64_t a : addresses_) {
    SymbolizedAddress out;
    out.vaddr = a;
    ASSERT_TRUE((*intact)->Answer(a, options, out));
    expected.push_back(testing::Describe(out));
  }
  size_t flips = 0, at_open = 0, in_lookup = 0;
  for (size_t o = 512; o < good.size(); o += good.size() / 97 + 1) {
    std::vector<uint8_t> bad = good;
    bad[o] ^= 0x21;
    ++flips;
    auto index = index::SymbolIndex::FromBytes(bad, {});
    if (!index) {
      ++at_open;
      continue;
    }
    bool refused = false;
    for (size_t i = 0; i < addresses_.size(); ++i) {
      SymbolizedAddress out;
      out.vaddr = addresses_[i];
      if (!(*index)->Answer(addresses_[i], options, out)) {
        refused = true;
        EXPECT_TRUE((*index)->damaged()) << "byte " << o;
        continue;
      }
      ASSERT_FALSE(refused) << "answered after damage was found, byte " << o;
      ASSERT_EQ(testing::Describe(out), expected[i]) << "byte " << o;
    }
    if (refused) {
      ++in_lookup;
      EXPECT_NE((*index)->damage().find("checksum mismatch in chunk"), std::string::npos);
    }
  }
  std::printf("%zu flips: %zu found on open, %zu by a lookup\n", flips, at_open, in_lookup);
  EXPECT_GT(in_lookup, 0u);
  EXPECT_GT(at_open + in_lookup, flips * 9 / 10);
}

// One build ID at two places, its .gnu_debuglink file next to only one of them: one index
// file, and each place still gets its own direct answers.
TEST(IndexStalenessTest, SameBuildIdElsewhereIsAnsweredForItsOwnPlace) {
  RealTempDir dir;
  std::string with = dir.Make("a/real_dbg.stripped");
  std::string without = dir.Make("b/real_dbg.stripped");
  ASSERT_TRUE(testing::RealCopy(Fixture("real_dbg.stripped"), with));
  ASSERT_TRUE(testing::RealCopy(Fixture("real_dbg.debug"), dir.Make("a/real_dbg.debug")));
  ASSERT_TRUE(testing::RealCopy(Fixture("real_dbg.stripped"), without));
  auto elf = ElfFile::Open(with);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> addresses = testing::SegmentAddresses(**elf, 1);
  SymbolizeOptions direct;
  direct.debug_dirs = {dir.Make("debug")};
  SymbolizeOptions cached = direct;
  cached.cache_dir = dir.Make("cache");
  std::vector<std::string> expected_with = Answers(with, addresses, direct);
  std::vector<std::string> expected_without = Answers(without, addresses, direct);
  ASSERT_NE(expected_with, expected_without);
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(FirstDifferences(addresses, expected_without, Answers(without, addresses, cached)),
              "");
    EXPECT_EQ(FirstDifferences(addresses, expected_with, Answers(with, addresses, cached)), "");
  }
}

TEST_F(IndexCacheTest, UnusableDirectoryFallsBackToTheDirectPath) {
  std::string blocker = cache_.Make("not-a-dir");
  ASSERT_TRUE(testing::RealWriteFile(blocker, "x"));
  SymbolizeOptions options;
  options.cache_dir = blocker + "/cache";
  EXPECT_EQ(FirstDifferences(addresses_, expected_, Answers(path_, addresses_, options)), "");
}

// Relative paths (llvm-symbolizer --relativenames) are not what an index holds: with them the
// cache is left alone and the answers are the direct path's, whether or not an index is
// already in place. (This fixture's sources are named by absolute paths, so its answers are
// the same either way; the drop-in's install tests compare relative ones with llvm-symbolizer.)
TEST_F(IndexCacheTest, RelativePathsAreAnsweredWithoutTheIndex) {
  SymbolizeOptions relative;
  relative.relative_paths = true;
  std::vector<std::string> expected = Answers(path_, addresses_, relative);
  relative.cache_dir = cache_.path();
  EXPECT_EQ(FirstDifferences(addresses_, expected, Answers(path_, addresses_, relative)), "");
  EXPECT_NE(access(index_path_.c_str(), F_OK), 0) << "no index built for relative paths";
  ExpectDirectAnswers("absolute paths through the cache");
  EXPECT_EQ(FirstDifferences(addresses_, expected, Answers(path_, addresses_, relative)), "");
}

// A split-DWARF package named by SymbolizeOptions::dwp_path (llvm-symbolizer --dwp) answers
// as the same package next to the binary does, where the binary alone answers less; an index
// holds what the usual search finds, so none is built or read with it.
TEST(IndexDwpPathTest, NamedPackageAnswersAsOneNextToTheBinaryWithoutAnIndex) {
  RealTempDir tmp;
  const std::string binary = tmp.path() + "/program";
  const std::string next_to_it = binary + ".dwp";
  const std::string elsewhere = tmp.Make("elsewhere/package");
  ASSERT_TRUE(testing::RealCopy(testing::RealFixture("real_dwp_gnu4"), binary));
  ASSERT_TRUE(testing::RealCopy(testing::RealFixture("real_dwp_gnu4.dwp"), next_to_it));
  auto elf = ElfFile::Open(binary);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> addresses = testing::SegmentAddresses(**elf, 1);
  std::vector<std::string> expected = Answers(binary, addresses, {});
  ASSERT_EQ(rename(next_to_it.c_str(), elsewhere.c_str()), 0);
  std::vector<std::string> alone = Answers(binary, addresses, {});
  EXPECT_NE(FirstDifferences(addresses, expected, alone), "")
      << "the package changes no answer: the test proves nothing";

  SymbolizeOptions named;
  named.dwp_path = elsewhere;
  named.cache_dir = tmp.path() + "/cache";
  ASSERT_EQ(mkdir(named.cache_dir.c_str(), 0700), 0);
  EXPECT_EQ(FirstDifferences(addresses, expected, Answers(binary, addresses, named)), "");
  EXPECT_NE(access(testing::IndexPathFor(binary, named.cache_dir, named).c_str(), F_OK), 0)
      << "an index was built with a named package";
  // A named package that is not there: the .dwo files, as without one (here: none).
  named.dwp_path = tmp.path() + "/missing.dwp";
  EXPECT_EQ(FirstDifferences(addresses, alone, Answers(binary, addresses, named)), "");
}

TEST_F(IndexCacheTest, ListDescribesIndexes) {
  auto entry = BuildSymbolIndex(path_, cached_);
  ASSERT_TRUE(entry) << entry.error().ToString();
  EXPECT_EQ(entry->build_id, elf_->build_id_hex());
  EXPECT_EQ(entry->binary, path_);
  EXPECT_EQ(entry->debug_file, path_);
  EXPECT_EQ(entry->problem, "");
  std::vector<uint8_t> bytes = ReadBytes(index_path_);
  bytes[bytes.size() / 2] ^= 1;
  WriteBytes(index_path_, bytes);
  auto listed = ListSymbolCache(cache_.path());
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_NE((*listed)[0].problem, "");
}

}  // namespace
}  // namespace stacksym
