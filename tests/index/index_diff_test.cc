// The index answers exactly what the direct path (ElfSymbolizer over the ELF file and its
// DWARF) answers: every byte of every fixture's code, with the default options, without
// demangling and without inlines, cold (index just built) and warm (read back); and dense
// address sets over libc.so.6 (libc6-dbg) and python3.11d (python3.11-dbg).
#include <dirent.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "index/symbol_index.h"
#include "index_test_util.h"
#include "real_test_util.h"
#include "stacksym/symbolize.h"

namespace stacksym {
namespace {

using testing::Answers;
using testing::FirstDifferences;
using testing::RealTempDir;

struct Variant {
  const char* name;
  bool demangle;
  bool inlines;
  bool linkage_names = true;
};
// Without linkage names (what `symbolize elf` asks unless it prints JSON) the index reads the
// demangled names alone, or with --no-demangle the linkage names as the functions' names.
constexpr Variant kVariants[] = {{"default", true, true},
                                 {"no-demangle", false, true},
                                 {"no-inlines", true, false},
                                 {"no-linkage-names", true, true, false},
                                 {"no-demangle-no-linkage-names", false, true, false}};

// Direct answers vs index answers for every variant; the first variant builds the index.
void ExpectSameAnswers(const std::string& path, const std::vector<uint64_t>& addresses,
                       const std::string& cache_dir, SymbolizeOptions base = {}) {
  for (const Variant& v : kVariants) {
    SymbolizeOptions direct = base;
    direct.demangle = v.demangle;
    direct.inlines = v.inlines;
    direct.linkage_names = v.linkage_names;
    SymbolizeOptions cached = direct;
    cached.cache_dir = cache_dir;
    std::vector<std::string> expected = Answers(path, addresses, direct);
    ASSERT_EQ(expected.size(), addresses.size()) << path;
    std::vector<std::string> first = Answers(path, addresses, cached);
    EXPECT_EQ(FirstDifferences(addresses, expected, first), "") << path << " " << v.name;
    std::vector<std::string> again = Answers(path, addresses, cached);
    EXPECT_EQ(FirstDifferences(addresses, expected, again), "")
        << path << " " << v.name << " (warm)";
  }
  EXPECT_EQ(access(testing::IndexPathFor(path, cache_dir, base).c_str(), R_OK), 0)
      << "no index was written for " << path;
}

std::vector<std::string> FixtureBinaries() {
  std::vector<std::string> out;
  DIR* d = opendir(STACKSYM_FIXTURE_DIR);
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind("dwarf_", 0) != 0 && name.rfind("real_", 0) != 0) continue;
    std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/" + name;
    auto elf = ElfFile::Open(path);
    if (!elf) continue;
    bool code = false;
    for (const ElfSegment& s : (*elf)->segments()) code |= s.type == PT_LOAD && (s.flags & PF_X);
    if (code) out.push_back(path);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// In shards, one fixture in kFixtureShards to each, so that ctest spreads the work (minutes
// under ASan) over the cores.
constexpr int kFixtureShards = 4;
// Every address; under ASan (which runs shard 0 alone: 136 s at every address) every 7th.
#ifdef STACKSYM_SANITIZED_BUILD
constexpr uint64_t kFixtureStride = 7;
#else
constexpr uint64_t kFixtureStride = 1;
#endif
class EveryFixtureAddress : public ::testing::TestWithParam<int> {};

TEST_P(EveryFixtureAddress, IndexAnswersAsTheDirectPath) {
  RealTempDir cache;
  std::vector<std::string> binaries = FixtureBinaries();
  ASSERT_GE(binaries.size(), 30u) << "fixtures missing in " << STACKSYM_FIXTURE_DIR;
  size_t compared = 0, fixtures = 0;
  for (size_t i = GetParam(); i < binaries.size(); i += kFixtureShards) {
    const std::string& path = binaries[i];
    auto elf = ElfFile::Open(path);
    ASSERT_TRUE(elf);
    std::vector<uint64_t> addresses = testing::SegmentAddresses(**elf, kFixtureStride);
    // One cache directory per fixture: several are one link's code with its DWARF packed
    // differently (dwz, a supplementary file), under one build ID, and would share an index;
    // their function starts differ (a DW_AT_decl_line behind DW_FORM_GNU_ref_alt is not
    // followed, as in LLVM).
    std::string dir = cache.path() + "/" + path.substr(path.rfind('/') + 1);
    ASSERT_EQ(mkdir(dir.c_str(), 0700), 0) << dir;
    ExpectSameAnswers(path, addresses, dir);
    compared += addresses.size();
    ++fixtures;
  }
  std::printf("%zu fixtures, %zu addresses each in %zu variants\n", fixtures, compared,
              std::size(kVariants));
}
INSTANTIATE_TEST_SUITE_P(IndexDiffTest, EveryFixtureAddress, ::testing::Range(0, kFixtureShards));

// A sound index answers every address itself: Answer() fails only on a record it finds
// inconsistent, and the symbolizer then answers from DWARF without a word, so a check that
// wrongly took good records for damage would pass every differential test unseen.
TEST(IndexDiffTest, SoundIndexAnswersEveryAddressItself) {
  size_t answered = 0;
  for (const std::string& path : FixtureBinaries()) {
    auto elf = ElfFile::Open(path);
    ASSERT_TRUE(elf);
    std::vector<uint64_t> addresses = testing::SegmentAddresses(**elf, 5);
    RealTempDir cache;
    SymbolizeOptions build;
    build.cache_dir = cache.path();
    ASSERT_EQ(Answers(path, addresses, build).size(), addresses.size());
    auto index = index::SymbolIndex::Open(testing::IndexPathFor(path, cache.path(), build));
    ASSERT_TRUE(index) << path << ": " << index.error().ToString();
    for (const Variant& v : kVariants) {
      index::AnswerOptions options;
      options.demangle = v.demangle;
      options.inlines = v.inlines;
      options.linkage_names = v.linkage_names;
      for (uint64_t a : addresses) {
        SymbolizedAddress out;
        out.vaddr = a;
        ASSERT_TRUE((*index)->Answer(a, options, out))
            << path << " " << v.name << ": 0x" << std::hex << a << " taken for damage";
        answered += !out.frames.empty();
      }
    }
  }
  EXPECT_GT(answered, 1000u);
}

TEST(IndexDiffTest, FileOffsetsOfAFixture) {
  RealTempDir cache;
  std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_gcc_cxx_o2_d5";
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> offsets;
  for (uint64_t o = 0; o < (*elf)->bytes().size() + 16; o += 3) offsets.push_back(o);
  SymbolizeOptions direct, cached;
  cached.cache_dir = cache.path();
  std::vector<std::string> expected = Answers(path, offsets, direct, AddressKind::kFileOffset);
  std::vector<std::string> actual = Answers(path, offsets, cached, AddressKind::kFileOffset);
  EXPECT_EQ(FirstDifferences(offsets, expected, actual), "");
}

TEST(IndexDiffTest, OneAddressAtATime) {
  RealTempDir cache;
  std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_clang_cxx_o3_d5";
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> addresses = testing::SegmentAddresses(**elf, 3);
  SymbolizeOptions direct, cached;
  cached.cache_dir = cache.path();
  auto a = ElfSymbolizer::Open(path, direct);
  auto b = ElfSymbolizer::Open(path, cached);
  ASSERT_TRUE(a && b);
  for (uint64_t address : addresses) {
    ASSERT_EQ(testing::Describe((*a)->Symbolize(address, AddressKind::kVirtual)),
              testing::Describe((*b)->Symbolize(address, AddressKind::kVirtual)));
  }
  EXPECT_EQ((*a)->debug_file(), (*b)->debug_file());
}

// SymbolizeEachConcurrently on 4 threads answers every address once, on worker numbers below
// the bound, with the direct path's answers (each thread reads the index through a Reader of
// its own: its own string blocks and zstd context).
TEST(IndexDiffTest, ConcurrentStreamingAnswersAsTheDirectPath) {
  RealTempDir cache;
  std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_gcc_cxx_o2_d5";
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> addresses = testing::SegmentAddresses(**elf, 1);
  addresses.push_back(0);  // outside every segment: answered after the threads, by worker 0
  ASSERT_GT(addresses.size(), 3u * 512) << "too few addresses for 3 threads";
  SymbolizeOptions direct;
  std::vector<std::string> expected = Answers(path, addresses, direct);
  SymbolizeOptions cached = direct;
  cached.cache_dir = cache.path();
  cached.threads = 4;
  for (const char* run : {"cold", "warm"}) {
    auto symbolizer = ElfSymbolizer::Open(path, cached);
    ASSERT_TRUE(symbolizer);
    std::vector<std::string> actual(addresses.size());
    std::vector<int> times(addresses.size(), 0);
    std::atomic<bool> bad_worker{false};
    (*symbolizer)
        ->SymbolizeEachConcurrently(addresses, AddressKind::kVirtual, 3,
                                    [&](unsigned worker, size_t i, const SymbolizedAddress& a) {
                                      if (worker >= 3) bad_worker = true;
                                      actual[i] = testing::Describe(a);
                                      ++times[i];
                                    });
    EXPECT_FALSE(bad_worker) << run;
    EXPECT_EQ(std::count(times.begin(), times.end(), 1), static_cast<long>(addresses.size()))
        << run << ": every address answered exactly once";
    EXPECT_EQ(FirstDifferences(addresses, expected, actual), "") << run;
  }
}

// Without linkage names both paths leave every raw name empty, and still name functions
// (demangled, or with --no-demangle by the linkage name itself).
TEST(IndexDiffTest, WithoutLinkageNamesRawNamesStayEmpty) {
  RealTempDir cache;
  std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_gcc_cxx_o2_d5";
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> addresses = testing::SymbolAddresses(**elf);
  for (bool demangle : {true, false}) {
    for (bool indexed : {false, true, true}) {  // direct, cold, warm
      SymbolizeOptions options;
      options.demangle = demangle;
      options.linkage_names = false;
      if (indexed) options.cache_dir = cache.path();
      auto symbolizer = ElfSymbolizer::Open(path, options);
      ASSERT_TRUE(symbolizer);
      size_t named = 0, mangled = 0;
      for (const SymbolizedAddress& a :
           (*symbolizer)->SymbolizeBatch(addresses, AddressKind::kVirtual)) {
        EXPECT_EQ(a.raw_symbol, "");
        for (const SourceFrame& f : a.frames) {
          EXPECT_EQ(f.raw_function, "");
          named += !f.function.empty();
          mangled += f.function.rfind("_Z", 0) == 0;
        }
      }
      EXPECT_GT(named, addresses.size() / 2) << "demangle " << demangle << " index " << indexed;
      EXPECT_EQ(mangled > 0, !demangle) << "demangle " << demangle << " index " << indexed;
    }
  }
}

// `symbolizer`'s answers to one batch, described as Answers() describes them.
std::vector<std::string> BatchAnswers(ElfSymbolizer& symbolizer,
                                      const std::vector<uint64_t>& addresses) {
  std::vector<std::string> out;
  for (const SymbolizedAddress& a : symbolizer.SymbolizeBatch(addresses, AddressKind::kVirtual)) {
    out.push_back(testing::Describe(a));
  }
  return out;
}

// A cold build hands its DWARF to the symbolizer only when asked (the command line asks):
// the answers are the same either way, and only then does the symbolizer hold the DWARF.
TEST(IndexDiffTest, DwarfOfTheBuildIsKeptOnlyWhenAsked) {
  std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_gcc_cxx_o2_d5";
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> addresses = testing::SegmentAddresses(**elf, 1);
  std::vector<std::string> expected = Answers(path, addresses, SymbolizeOptions{});
  size_t memory[2] = {0, 0};
  for (bool keep : {false, true}) {
    RealTempDir cache;
    SymbolizeOptions options;
    options.cache_dir = cache.path();
    options.keep_dwarf_after_index_build = keep;
    auto symbolizer = ElfSymbolizer::Open(path, options);
    ASSERT_TRUE(symbolizer);
    EXPECT_EQ(FirstDifferences(addresses, expected, BatchAnswers(**symbolizer, addresses)), "")
        << "keep " << keep;
    memory[keep] = (*symbolizer)->memory_bytes();
  }
  EXPECT_GT(memory[1], memory[0] + 10000) << "the build's DWARF tables are not held";
}

// A build from a separate, compressed debug file gives its decompressed sections back once
// exported, so the DWARF the command line asks to keep is retired: the answers are the direct
// path's, and what needs DWARF afterwards (here frame locals) opens it anew.
TEST(IndexDiffTest, RetiredDwarfOfTheBuildIsNotAskedAgain) {
  std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_gcc_cxx_o2_dbglink";
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf);
  std::vector<uint64_t> addresses = testing::SegmentAddresses(**elf, 3);
  std::vector<std::string> expected = Answers(path, addresses, SymbolizeOptions{});
  auto direct = ElfSymbolizer::Open(path, SymbolizeOptions{});
  ASSERT_TRUE(direct);
  RealTempDir cache;
  SymbolizeOptions options;
  options.cache_dir = cache.path();
  options.keep_dwarf_after_index_build = true;
  auto symbolizer = ElfSymbolizer::Open(path, options);
  ASSERT_TRUE(symbolizer);
  EXPECT_EQ(FirstDifferences(addresses, expected, BatchAnswers(**symbolizer, addresses)), "");
  size_t locals = 0;
  for (uint64_t a : addresses) {
    std::vector<FrameLocal> want = (*direct)->FindFrameLocals(a);
    std::vector<FrameLocal> got = (*symbolizer)->FindFrameLocals(a);
    ASSERT_EQ(got.size(), want.size()) << std::hex << a;
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].function, want[k].function);
      EXPECT_EQ(got[k].name, want[k].name);
      EXPECT_EQ(got[k].decl_line, want[k].decl_line);
    }
    locals += got.size();
  }
  EXPECT_GT(locals, 0u) << "no frame locals: the DWARF was not read again";
}

void CompareRealBinary(const std::string& path, const char* package, uint64_t stride) {
#ifdef STACKSYM_SANITIZED_BUILD
  stride *= 8;
#endif
  auto elf = ElfFile::Open(path);
  if (!elf) GTEST_SKIP() << path << " missing: install " << package;
  std::string hex = (*elf)->build_id_hex();
  std::string debug =
      "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  bool has_dwarf = (*elf)->FindSection(".debug_info") != nullptr;  // python3.11d: in the binary
  if (!has_dwarf && access(debug.c_str(), R_OK) != 0) {
    GTEST_SKIP() << debug << " missing: install " << package;
  }
  std::vector<uint64_t> addresses = testing::SymbolAddresses(**elf);
  std::vector<uint64_t> dense = testing::SegmentAddresses(**elf, stride);
  addresses.insert(addresses.end(), dense.begin(), dense.end());
  RealTempDir cache;
  ExpectSameAnswers(path, addresses, cache.path());
  std::printf("%s: %zu addresses\n", path.c_str(), addresses.size());
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// An index is the same file however many threads build it: the units are exported in any
// order and the string dictionary is trained beside the merge (or after it, on one thread),
// but records, strings and dictionary come out in one order. libc (libc6-dbg): strings
// enough for a dictionary.
TEST(IndexDiffTest, IndexBytesDoNotDependOnTheThreadCount) {
  const std::string path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  auto elf = ElfFile::Open(path);
  if (!elf) GTEST_SKIP() << path << " missing: install libc6";
  std::string hex = (*elf)->build_id_hex();
  std::string debug =
      "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  if (access(debug.c_str(), R_OK) != 0) GTEST_SKIP() << debug << " missing: install libc6-dbg";
  std::vector<uint64_t> addresses = testing::SymbolAddresses(**elf);
  addresses.resize(std::min<size_t>(addresses.size(), 64));
  std::string first;
  for (unsigned threads : {1u, 2u, 4u, 2u}) {
    RealTempDir cache;
    SymbolizeOptions options;
    options.cache_dir = cache.path();
    options.threads = threads;
    ASSERT_EQ(Answers(path, addresses, options).size(), addresses.size());
    std::string bytes = FileBytes(testing::IndexPathFor(path, cache.path(), options));
    ASSERT_GT(bytes.size(), 100000u) << "no index built on " << threads << " threads";
    if (first.empty()) {
      first = bytes;
    } else {
      EXPECT_TRUE(bytes == first) << "the index built on " << threads
                                  << " threads differs from the one built on 1";
    }
  }
}

TEST(IndexDiffTest, LibcFromLibc6Dbg) {
  CompareRealBinary("/usr/lib/x86_64-linux-gnu/libc.so.6", "libc6-dbg", 7);
}

TEST(IndexDiffTest, Python311DebugBuild) {
  CompareRealBinary("/usr/bin/python3.11d", "python3.11-dbg", 13);
}

// A big C++ library (95 MB of zlib DWARF 5, 66 000 distinct function names, gcc's nested
// local classes and lambdas, COMDAT line sequences of other units' copies, code without a
// DIE): the library the index's speed is measured on.
TEST(IndexDiffTest, LibcephCommonFromLibrados2Dbg) {
  CompareRealBinary("/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2", "librados2-dbg", 97);
}

}  // namespace
}  // namespace stacksym
