// Functions only DWARF names (issue 39, "DWARF-only names keep their offset"): a binary whose
// symbol tables are gone but whose DWARF stays (objcopy --strip-all --keep-section='.debug_*')
// gets, for each function, the start, size and +offset its symbol gave before it was stripped
// (dwarf::OutermostRun: the run of the function's code), on the direct path and from the
// persisted index alike.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "index_test_util.h"
#include "real_test_util.h"
#include "stacksym/elf.h"
#include "stacksym/symbolize.h"

namespace stacksym {
namespace {

using testing::RealTempDir;

std::vector<SymbolizedAddress> Batch(const std::string& path,
                                     const std::vector<uint64_t>& addresses,
                                     const SymbolizeOptions& options) {
  auto symbolizer = ElfSymbolizer::Open(path, options);
  if (!symbolizer) return {};
  return (*symbolizer)->SymbolizeBatch(addresses, AddressKind::kVirtual);
}

class DwarfOnlyNamesTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!testing::RealToolExists("objcopy")) GTEST_SKIP() << "needs objcopy (binutils)";
    binary_ = testing::RealFixture(GetParam());
    stripped_ = dir_.path() + "/" + GetParam() + ".dwarf-only";
    int exit_code = -1;
    testing::RealRun(
        "objcopy --strip-all --keep-section='.debug_*' '" + binary_ + "' '" + stripped_ + "'", "",
        &exit_code);
    ASSERT_EQ(exit_code, 0) << "objcopy failed on " << binary_;
    auto elf = ElfFile::Open(binary_);
    ASSERT_TRUE(elf) << elf.error().ToString();
    elf_ = std::move(*elf);
    addresses_ = testing::SegmentAddresses(*elf_, 3);
    for (uint64_t a : testing::SymbolAddresses(*elf_)) addresses_.push_back(a);
  }

  RealTempDir dir_;
  std::string binary_, stripped_;
  std::shared_ptr<ElfFile> elf_;
  std::vector<uint64_t> addresses_;
};

// Where the unstripped binary's sized function symbol covers an address that DWARF names, the
// stripped copy names it with that symbol's start, size and offset.
TEST_P(DwarfOnlyNamesTest, StartSizeAndOffsetAreTheStrippedSymbols) {
  SymbolizeOptions options;
  options.threads = 2;
  const std::vector<SymbolizedAddress> before = Batch(binary_, addresses_, options);
  const std::vector<SymbolizedAddress> after = Batch(stripped_, addresses_, options);
  ASSERT_EQ(before.size(), addresses_.size());
  ASSERT_EQ(after.size(), addresses_.size());
  size_t compared = 0, differ = 0, invented = 0;
  for (size_t i = 0; i < addresses_.size(); ++i) {
    const SymbolizedAddress& b = before[i];
    const SymbolizedAddress& a = after[i];
    if (a.frames.empty() || a.frames.back().function.empty()) {
      // Without a DWARF function (no frames, or a line row alone: padding between
      // functions) only what still names it in the copy (.dynsym, the PLT) does.
      invented += !a.symbol.empty() && a.symbol != b.symbol;
      continue;
    }
    EXPECT_FALSE(a.symbol.empty()) << "0x" << std::hex << addresses_[i] << " has frames, no name";
    if (b.symbol.empty() || b.symbol_size == 0 || b.frames.empty()) continue;
    ++compared;
    if (a.symbol_address != b.symbol_address || a.symbol_size != b.symbol_size ||
        a.offset != b.offset || a.symbol != a.frames.back().function) {
      if (++differ <= 5) {
        ADD_FAILURE() << "0x" << std::hex << addresses_[i] << ": symbol @0x" << b.symbol_address
                      << "+" << b.symbol_size << " off " << b.offset << ", DWARF-only @0x"
                      << a.symbol_address << "+" << a.symbol_size << " off " << a.offset << " "
                      << (a.symbol == a.frames.back().function ? "" : "named otherwise");
      }
    }
  }
  EXPECT_EQ(differ, 0u) << "of " << compared;
  EXPECT_EQ(invented, 0u);
  EXPECT_GT(compared, 500u);
}

// The index answers the same (its segments are the DWARF tables' copy), batched and one at a
// time, and every answer but the names' bytes is equal to the direct path's.
TEST_P(DwarfOnlyNamesTest, IndexAnswersAsTheDirectPath) {
  RealTempDir cache;
  SymbolizeOptions direct;
  direct.threads = 2;
  SymbolizeOptions cached = direct;
  cached.cache_dir = cache.path();
  const std::vector<std::string> expected = testing::Answers(stripped_, addresses_, direct);
  ASSERT_EQ(expected.size(), addresses_.size());
  EXPECT_EQ(testing::FirstDifferences(addresses_, expected,
                                      testing::Answers(stripped_, addresses_, cached)),
            "")
      << "the run that built the index";
  EXPECT_EQ(testing::FirstDifferences(addresses_, expected,
                                      testing::Answers(stripped_, addresses_, cached)),
            "")
      << "a run from the index";
  auto one = ElfSymbolizer::Open(stripped_, cached);
  ASSERT_TRUE(one);
  for (size_t i = 0; i < addresses_.size(); i += 17) {
    EXPECT_EQ(testing::Describe((*one)->Symbolize(addresses_[i], AddressKind::kVirtual)),
              expected[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DwarfOnlyNamesTest,
                         ::testing::Values("dwarf_gcc_cxx_o2_d5", "dwarf_clang_cxx_o2_d5",
                                           "dwarf_gcc_c_o2_d4"),
                         [](const auto& info) { return std::string(info.param).substr(6); });

}  // namespace
}  // namespace stacksym
