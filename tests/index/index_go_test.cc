// The Go pclntab's answers in the symbol index (format 16), on Go programs built at test time
// with Debian's golang-go (tests/symbolize/go_builds.h): stripped as services ship, stripped
// with cgo (linked by ld), and unstripped (DWARF and .symtab, which answer first).
//   - Every answer from the index equals the direct path's (no cache directory), inline
//     chains included, with and without inlines and linkage names, batched and streamed, at
//     both ends of every piece of the table's answers (GoPclntab::LookupBounds) and at every
//     11th byte of the code.
//   - The index answers those addresses itself: SymbolIndex::AnswerGo equals the table's own
//     Lookup at each of them, so the direct path is not what a cached run asks.
//   - Damaged Go records (the first and last byte of each Go section) are found by their
//     checksums and the index rebuilt.
//   - Crafted ELF files around Go 1.2-magic tables with inline trees in the layouts of Go 1.9,
//     1.12 and 1.13 (tests/elf/go_crafted.h; no installed Go writes them): the index answers
//     every pc as the direct path and the table do, inline chains included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "../symbolize/go_builds.h"
#include "elf/go_pclntab.h"
#include "go_crafted.h"
#include "index/index_format.h"
#include "index/symbol_index.h"
#include "index_test_util.h"
#include "real_test_util.h"
#include "stacksym/elf.h"
#include "stacksym/symbolize.h"

namespace stacksym {
namespace {

using testing::Answers;
using testing::FirstDifferences;
using testing::RealTempDir;

std::string BuildVariant(const std::string& variant) {
  testing::GoBuilds& go = testing::GoBuilds::Get();
  if (variant == "plain") return go.Build(variant, "CGO_ENABLED=0", "");
  if (variant == "stripped") return go.Build(variant, "CGO_ENABLED=0", "-ldflags='-s -w'");
  if (variant == "cgo_stripped") {
    return go.Build(variant, "CGO_ENABLED=1", "-tags stacksym_cgo -ldflags='-s -w'");
  }
  return "";
}

std::unique_ptr<elf::GoPclntab> TableOf(const ElfFile& elf) {
  auto table = elf::FindGoPclntab(elf);
  if (!table || !*table) return nullptr;
  return std::move(**table);
}

// Both ends of every piece of the table's answers, and every 11th byte of the code (with
// the bytes at and past each executable segment's end).
std::vector<uint64_t> AddressesOf(const ElfFile& elf, const elf::GoPclntab& table) {
  std::vector<uint64_t> addresses = testing::SegmentAddresses(elf, 11);
  for (uint64_t bound : table.LookupBounds()) {
    addresses.push_back(bound);
    if (bound > 0) addresses.push_back(bound - 1);
  }
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
#ifdef STACKSYM_SANITIZED_BUILD
  // Under ASan (about 10x slower) every 8th of them: the whole set is `make test`'s.
  std::vector<uint64_t> sparse;
  for (size_t i = 0; i < addresses.size(); i += 8) sparse.push_back(addresses[i]);
  addresses = std::move(sparse);
#endif
  return addresses;
}

// Every answer of SymbolizeEachConcurrently (the streamed path `symbolize elf` takes), by
// position.
std::vector<std::string> StreamedAnswers(const std::string& path,
                                         const std::vector<uint64_t>& addresses,
                                         const SymbolizeOptions& options) {
  std::vector<std::string> out(addresses.size());
  auto symbolizer = ElfSymbolizer::Open(path, options);
  if (!symbolizer) return {};
  (*symbolizer)
      ->SymbolizeEachConcurrently(addresses, AddressKind::kVirtual, 2,
                                  [&](unsigned, size_t i, const SymbolizedAddress& answer) {
                                    out[i] = testing::Describe(answer);
                                  });
  return out;
}

std::string Describe(const elf::GoFunction& function, const std::vector<elf::GoFrame>& frames) {
  std::ostringstream out;
  out << std::hex << function.name << " [0x" << function.entry << ", 0x" << function.end << ")"
      << std::dec;
  for (const elf::GoFrame& f : frames) {
    out << " | " << (f.inlined ? "inlined " : "") << f.function << " " << f.file << ":" << f.line;
  }
  return out.str();
}

class IndexGoTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!testing::GoBuilds::Get().have_go()) GTEST_SKIP() << "needs Go (Debian package golang-go)";
    path_ = BuildVariant(GetParam());
    ASSERT_FALSE(path_.empty()) << testing::GoBuilds::Get().error();
    auto elf = ElfFile::Open(path_);
    ASSERT_TRUE(elf) << elf.error().ToString();
    elf_ = std::move(*elf);
    table_ = TableOf(*elf_);
    ASSERT_NE(table_, nullptr) << path_ << ": no pclntab";
    addresses_ = AddressesOf(*elf_, *table_);
    ASSERT_GT(addresses_.size(), 1000u);
  }

  std::string path_;
  std::shared_ptr<ElfFile> elf_;
  std::unique_ptr<elf::GoPclntab> table_;
  std::vector<uint64_t> addresses_;
};

TEST_P(IndexGoTest, IndexedAnswersEqualDirectOnes) {
  struct Variant {
    const char* name;
    bool inlines, linkage_names;
  };
  RealTempDir cache;  // one index serves every variant
  bool built = false;
  for (Variant v : {Variant{"default", true, true}, Variant{"no inlines", false, true},
                    Variant{"no linkage names", true, false}}) {
    SCOPED_TRACE(v.name);
    SymbolizeOptions direct;
    direct.inlines = v.inlines;
    direct.linkage_names = v.linkage_names;
    direct.threads = 2;
    SymbolizeOptions cached = direct;
    cached.cache_dir = cache.path();
    const std::vector<std::string> expected = Answers(path_, addresses_, direct);
    ASSERT_EQ(expected.size(), addresses_.size());
    if (!built) {
      EXPECT_EQ(FirstDifferences(addresses_, expected, Answers(path_, addresses_, cached)), "")
          << "the run that built the index";
      built = true;
    }
    EXPECT_EQ(FirstDifferences(addresses_, expected, Answers(path_, addresses_, cached)), "")
        << "a run from the index";
    EXPECT_EQ(FirstDifferences(addresses_, expected, StreamedAnswers(path_, addresses_, cached)),
              "")
        << "a streamed run from the index";
  }
}

TEST_P(IndexGoTest, IndexAnswersTheTablesAddressesItself) {
  RealTempDir cache;
  SymbolizeOptions options;
  options.cache_dir = cache.path();
  ASSERT_EQ(Answers(path_, {addresses_.front()}, options).size(), 1u);  // builds the index
  auto index = index::SymbolIndex::Open(testing::IndexPathFor(path_, cache.path(), options));
  ASSERT_TRUE(index) << index.error().ToString();
  ASSERT_TRUE((*index)->has_go_answers());
  auto reader = (*index)->NewReader();
  ASSERT_NE(reader, nullptr);
  size_t found = 0, inlined = 0, differ = 0;
  index::GoAnswer answer;
  std::vector<elf::GoFrame> frames, stored_frames;
  elf::GoFunction function, stored_function;
  for (bool inlines : {true, false}) {
    for (uint64_t a : addresses_) {
      ASSERT_TRUE((*index)->AnswerGo(a, inlines, &answer, reader.get()))
          << "0x" << std::hex << a << " taken for damage";
      const bool expected =
          table_->Lookup(a, inlines, &frames, &function) && !function.name.empty();
      ASSERT_EQ(answer.found, expected) << "0x" << std::hex << a;
      if (!expected) continue;
      ++found;
      inlined += frames.size() > 1;
      answer.Views(&stored_function, &stored_frames);
      const std::string want = Describe(function, frames);
      const std::string got = Describe(stored_function, stored_frames);
      if (want != got && ++differ <= 5) {
        ADD_FAILURE() << "0x" << std::hex << a << "\n  table: " << want << "\n  index: " << got;
      }
    }
  }
  EXPECT_EQ(differ, 0u);
  EXPECT_GT(found, addresses_.size());  // most addresses, twice
  EXPECT_GT(inlined * 20, addresses_.size()) << "no inline chains compared";
}

// (Not the unstripped build: its DWARF answers first, and most of its Go records are never
// read.)
using IndexGoDamageTest = IndexGoTest;

// Bytes flipped in the Go records (each found by its chunk's checksum when a lookup reads
// it): the answers stay the direct path's, and the index is rebuilt as it was.
TEST_P(IndexGoDamageTest, DamagedGoRecordsAreFoundAndRebuilt) {
  RealTempDir cache;
  SymbolizeOptions direct, cached;
  direct.threads = cached.threads = 2;
  cached.cache_dir = cache.path();
  const std::vector<std::string> expected = Answers(path_, addresses_, direct);
  ASSERT_EQ(FirstDifferences(addresses_, expected, Answers(path_, addresses_, cached)), "");
  const std::string index_path = testing::IndexPathFor(path_, cache.path(), cached);
  const std::vector<uint8_t> good = testing::ReadBytes(index_path);
  ASSERT_GT(good.size(), sizeof(index::FileHeader));
  index::FileHeader header;
  std::memcpy(&header, good.data(), sizeof(header));
  size_t flipped = 0;
  for (uint32_t s = 0; s < header.section_count; ++s) {
    index::SectionEntry entry;
    std::memcpy(&entry, good.data() + sizeof(header) + s * sizeof(entry), sizeof(entry));
    const auto kind = static_cast<index::SectionKind>(entry.kind);
    if ((kind != index::SectionKind::kGoContexts && kind != index::SectionKind::kGoFunctions &&
         kind != index::SectionKind::kGoFrames && kind != index::SectionKind::kGoUnit) ||
        entry.size == 0) {
      continue;
    }
    for (uint64_t at : {entry.offset, entry.offset + entry.size - 1}) {
      std::vector<uint8_t> bad = good;
      bad[at] ^= 0x5a;
      testing::WriteBytes(index_path, bad);
      EXPECT_EQ(FirstDifferences(addresses_, expected, Answers(path_, addresses_, cached)), "")
          << "byte " << at << " of section " << entry.kind << " flipped";
      EXPECT_EQ(testing::ReadBytes(index_path), good) << "not rebuilt after byte " << at;
      ++flipped;
    }
  }
  EXPECT_EQ(flipped, 8u) << "the four Go sections not all found";
}

// The release named three ways (the runtime.buildVersion symbol, .go.buildinfo's pointer and
// inline string), each with the table of its layout.
TEST(IndexGoCrafted, Go12TablesInlineChainsAreIndexed) {
  using elf::crafted::VersionIn;
  struct Case {
    uint32_t minor;
    VersionIn where;
  };
  for (Case c : {Case{9, VersionIn::kSymbol}, Case{12, VersionIn::kBuildInfoInline},
                 Case{13, VersionIn::kBuildInfoPointer}}) {
    SCOPED_TRACE("go1." + std::to_string(c.minor));
    RealTempDir dir;
    const elf::crafted::Crafted crafted = elf::crafted::Build12(c.minor);
    const std::string path = dir.path() + "/prog";
    testing::WriteBytes(path, GoElf(crafted, c.where, "go1." + std::to_string(c.minor) + ".3"));
    std::vector<uint64_t> addresses;
    for (uint64_t pc = 0xff0; pc < 0x1210; ++pc) addresses.push_back(pc);
    SymbolizeOptions direct, cached;
    cached.cache_dir = dir.path() + "/cache";
    const std::vector<std::string> expected = Answers(path, addresses, direct);
    ASSERT_EQ(expected.size(), addresses.size());
    const std::string& deep = expected[0x1034 - 0xff0];
    EXPECT_NE(deep.find("main.deep"), std::string::npos) << deep;
    EXPECT_NE(deep.find("main.inl"), std::string::npos) << deep;
    EXPECT_EQ(FirstDifferences(addresses, expected, Answers(path, addresses, cached)), "")
        << "the run that built the index";
    EXPECT_EQ(FirstDifferences(addresses, expected, Answers(path, addresses, cached)), "")
        << "a run from the index";
    // And the index's own Go answers are the table's.
    auto index = index::SymbolIndex::Open(testing::IndexPathFor(path, cached.cache_dir, cached));
    ASSERT_TRUE(index) << index.error().ToString();
    ASSERT_TRUE((*index)->has_go_answers());
    auto reader = (*index)->NewReader();
    auto file = ElfFile::Open(path);
    ASSERT_TRUE(file);
    std::unique_ptr<elf::GoPclntab> table = TableOf(**file);
    ASSERT_NE(table, nullptr);
    index::GoAnswer answer;
    std::vector<elf::GoFrame> frames, stored_frames;
    elf::GoFunction function, stored_function;
    for (uint64_t a : addresses) {
      ASSERT_TRUE((*index)->AnswerGo(a, true, &answer, reader.get()));
      const bool found = table->Lookup(a, true, &frames, &function) && !function.name.empty();
      ASSERT_EQ(answer.found, found) << "0x" << std::hex << a;
      if (!found) continue;
      answer.Views(&stored_function, &stored_frames);
      ASSERT_EQ(Describe(stored_function, stored_frames), Describe(function, frames))
          << "0x" << std::hex << a;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(GoBuilds, IndexGoTest,
                         ::testing::Values("stripped", "cgo_stripped", "plain"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });
INSTANTIATE_TEST_SUITE_P(GoBuilds, IndexGoDamageTest, ::testing::Values("stripped", "cgo_stripped"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace stacksym
