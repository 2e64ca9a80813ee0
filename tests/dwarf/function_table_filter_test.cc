// FunctionTable built for a few wanted addresses (the batch path) against the full table of
// the same unit, on every function address of the C++ fixtures (gcc and clang, -O0 and -O2,
// lambdas and local classes whose member functions gcc nests inside the enclosing function):
//  - each wanted address gets exactly the full table's inline chain;
//  - every other address gets either the full table's chain or a MayBeIncomplete() answer,
//    never a wrong or too-short chain;
//  - the shallow walk suffices for most single addresses, the deep one is needed for some
//    (nested definitions, thunks), and both modes are seen.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dwarf/debug_info_source.h"
#include "dwarf/dwarf_file.h"
#include "dwarf/function_table.h"
#include "stacksym/elf.h"
#include "symbolizer_reference.h"

namespace stacksym::dwarf {
namespace {

// DIE offsets of the inline chain at `address`, innermost first, ending at the out-of-line
// function (what a lookup reports); empty when no function.
std::vector<uint64_t> Chain(const FunctionTable& table, uint64_t address) {
  std::vector<uint64_t> out;
  for (int32_t n = table.Find(address); n >= 0;) {
    const FunctionNode& node = table.nodes()[static_cast<size_t>(n)];
    out.push_back(node.die_offset);
    if (!node.inlined) break;
    n = node.parent;
  }
  return out;
}

class FunctionTableFilterTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FunctionTableFilterTest, WantedAddressesMatchTheFullTable) {
  std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/" + GetParam();
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf) << elf.error().ToString();
  Result<DwarfSections> sections = LoadDwarfSections(**elf);
  ASSERT_TRUE(sections) << sections.error().ToString();
  DwarfFile file(*sections);
  ASSERT_TRUE(file.ScanUnits());
  std::vector<uint64_t> addresses = testing::FunctionAddresses(path, 30000);
  ASSERT_GT(addresses.size(), 100u);

  size_t shallow = 0, deep = 0, checked_others = 0, incomplete_answers = 0;
  for (UnitInfo& unit : file.units()) {
    if (unit.is_type_unit()) continue;
    Result<FunctionTable> full = FunctionTable::Build(file, unit);
    ASSERT_TRUE(full) << full.error().ToString();
    std::vector<uint64_t> in_unit;
    for (uint64_t a : addresses) {
      if (full->Find(a) >= 0) in_unit.push_back(a);
    }
    // One wanted address at a time, sampled across the unit.
    size_t step = std::max<size_t>(1, in_unit.size() / 40);
    for (size_t i = 0; i < in_unit.size(); i += step) {
      uint64_t wanted = in_unit[i];
      Result<FunctionTable> part = FunctionTable::Build(file, unit, std::span(&wanted, 1));
      ASSERT_TRUE(part) << part.error().ToString();
      (part->coverage() == FunctionTable::Coverage::kDeep ? deep : shallow)++;
      ASSERT_EQ(Chain(*part, wanted), Chain(*full, wanted))
          << GetParam() << ": wanted 0x" << std::hex << wanted;
      for (size_t j = 0; j < in_unit.size(); j += 3) {
        uint64_t other = in_unit[j];
        int32_t id = part->Find(other);
        ++checked_others;
        if (part->MayBeIncomplete(id)) {
          ++incomplete_answers;
          continue;
        }
        ASSERT_EQ(Chain(*part, other), Chain(*full, other))
            << GetParam() << ": table for 0x" << std::hex << wanted << " answers 0x" << other
            << " wrongly";
      }
    }
  }
  std::printf(
      "%s: %zu shallow and %zu deep tables; %zu of %zu other addresses marked "
      "incomplete\n",
      GetParam(), shallow, deep, incomplete_answers, checked_others);
  EXPECT_GT(shallow, 0u);
  EXPECT_GT(incomplete_answers, 0u);  // the filter really skipped code
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FunctionTableFilterTest,
                         ::testing::Values("dwarf_gcc_cxx_o0_d4", "dwarf_gcc_cxx_o2_d5",
                                           "dwarf_gcc_cxx_o3_d5", "dwarf_clang_cxx_o0_d5",
                                           "dwarf_clang_cxx_o2_d4", "dwarf_clang_cxx_o2_d5_64"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// The nested definitions gcc emits (a local class's member function, a lambda's operator())
// are only reachable through the enclosing function's DIE: a table wanting just such an
// address must take the deep walk, and still find it.
TEST(FunctionTableFilter, NestedDefinitionsNeedTheDeepWalk) {
  std::string path = std::string(STACKSYM_FIXTURE_DIR) + "/dwarf_gcc_cxx_o0_d4";
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf) << elf.error().ToString();
  Result<DwarfSections> sections = LoadDwarfSections(**elf);
  ASSERT_TRUE(sections) << sections.error().ToString();
  DwarfFile file(*sections);
  ASSERT_TRUE(file.ScanUnits());
  size_t deep_found = 0;
  for (UnitInfo& unit : file.units()) {
    Result<FunctionTable> full = FunctionTable::Build(file, unit);
    ASSERT_TRUE(full);
    for (const AddressSegment& seg : full->segments()) {
      if (seg.id < 0) continue;
      uint64_t a = seg.start;
      Result<FunctionTable> part = FunctionTable::Build(file, unit, std::span(&a, 1));
      ASSERT_TRUE(part);
      if (part->coverage() != FunctionTable::Coverage::kDeep) continue;
      EXPECT_EQ(Chain(*part, a), Chain(*full, a));
      ++deep_found;
    }
  }
  EXPECT_GT(deep_found, 0u) << "no nested definition in the fixture needed the deep walk";
}

}  // namespace
}  // namespace stacksym::dwarf
