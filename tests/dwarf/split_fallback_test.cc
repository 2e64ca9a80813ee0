// Split DWARF whose .dwo files are not found: the skeletons answer, as LLVM's do (its tests
// split-dwarf.test and fission-ranges.test), compared with llvm-symbolizer on every function's
// addresses. And where a .dwo is looked for: beside the binary too, unless
// SymbolizeOptions::dwo_beside_binary is off (llvm-symbolizer's search, its drop-in's).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "dwarf/debug_info_source.h"
#include "stacksym/elf.h"
#include "stacksym/symbolize.h"
#include "symbolizer_reference.h"

namespace stacksym {
namespace {

using testing::RefChain;

std::string Fixture(const std::string& name) {
  return std::string(STACKSYM_FIXTURE_DIR) + "/" + name;
}

SymbolizeOptions LlvmLikeOptions(bool dwo_beside_binary) {
  SymbolizeOptions options;
  options.demangle = false;
  options.symbols_from_debug_file = false;
  options.plt_names = false;
  options.dwo_beside_binary = dwo_beside_binary;
  return options;
}

// Our chain in llvm-symbolizer's terms: inlined frames named by DWARF, the outermost by the
// symbol table where a symbol covers the address.
RefChain ToRefChain(const SymbolizedAddress& a) {
  RefChain chain;
  for (const SourceFrame& f : a.frames) {
    testing::RefFrame r;
    r.function = f.inlined || a.raw_symbol.empty() ? f.raw_function : a.raw_symbol;
    if (r.function.empty()) r.function = "??";
    r.file = f.file.empty() ? "??" : f.file;
    r.line = f.line;
    r.column = f.column;
    chain.push_back(r);
  }
  if (chain.empty()) chain.push_back({a.raw_symbol.empty() ? "??" : a.raw_symbol, "??", 0, 0});
  return chain;
}

std::string Describe(const RefChain& chain) {
  std::string s;
  for (const testing::RefFrame& f : chain) {
    s += f.function + " " + f.file + ":" + std::to_string(f.line) + ":" + std::to_string(f.column) +
         " | ";
  }
  return s;
}

// Every address of every function of `path`, answered by us and by llvm-symbolizer: the same
// chains. Returns how many chains were longer than one frame, and how many had a file.
void ExpectLlvmAnswers(const std::string& path, const SymbolizeOptions& options,
                       size_t* inline_chains, size_t* with_file) {
  *inline_chains = *with_file = 0;
  auto symbolizer = ElfSymbolizer::Open(path, options);
  ASSERT_TRUE(symbolizer) << symbolizer.error().ToString();
  std::vector<uint64_t> addresses = testing::FunctionAddresses(path, 4000);
  ASSERT_GT(addresses.size(), 100u);
  std::vector<RefChain> llvm = testing::RunLlvmSymbolizer(path, addresses);
  ASSERT_EQ(llvm.size(), addresses.size()) << "could not run/parse llvm-symbolizer";
  std::vector<SymbolizedAddress> ours =
      (*symbolizer)->SymbolizeBatch(addresses, AddressKind::kVirtual);
  // Which of a symbol's aliases names the outermost frame is the symbol table's choice, not
  // the DWARF reader's: any alias at our symbol's address is llvm-symbolizer's answer too.
  std::multimap<uint64_t, std::string> nm = testing::NmSymbols(path);
  auto alias = [&](uint64_t address, const std::string& name) {
    auto [begin, end] = nm.equal_range(address);
    for (auto it = begin; it != end; ++it) {
      if (it->second == name) return true;
    }
    return false;
  };
  size_t differ = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    RefChain mine = ToRefChain(ours[i]);
    bool same = mine.size() == llvm[i].size();
    for (size_t k = 0; same && k < mine.size(); ++k) {
      bool outermost_symbol = k + 1 == mine.size() && !ours[i].raw_symbol.empty();
      same = (mine[k].function == llvm[i][k].function ||
              (outermost_symbol && alias(ours[i].symbol_address, llvm[i][k].function))) &&
             mine[k].file == llvm[i][k].file && mine[k].line == llvm[i][k].line &&
             mine[k].column == llvm[i][k].column;
    }
    if (!same && ++differ <= 10) {
      ADD_FAILURE() << std::hex << "0x" << addresses[i] << "\n  ours: " << Describe(mine)
                    << "\n  llvm: " << Describe(llvm[i]);
    }
    if (mine.size() > 1) ++*inline_chains;
    if (mine.front().file != "??") ++*with_file;
  }
  EXPECT_EQ(differ, 0u) << "of " << addresses.size();
}

TEST(SplitFallbackTest, GccSkeletonRangesAreSectionOffsets) {
  if (!testing::ToolExists("llvm-symbolizer")) GTEST_SKIP() << "llvm-symbolizer not installed";
  // Main's unit is the second: its skeleton's DW_AT_ranges must not be moved by its
  // DW_AT_GNU_ranges_base, or its addresses fall outside every unit (LLVM: fission-ranges).
  size_t inline_chains = 0, with_file = 0;
  ExpectLlvmAnswers(Fixture("dwarf_gcc_cxx_split4_nodwo"), LlvmLikeOptions(true), &inline_chains,
                    &with_file);
  EXPECT_GT(with_file, 100u);
  EXPECT_EQ(inline_chains, 0u);  // gcc's skeletons hold no functions

  // main itself is answered with a line (it lies in .text.startup: the unit's second range).
  auto elf = ElfFile::Open(Fixture("dwarf_gcc_cxx_split4_nodwo"));
  ASSERT_TRUE(elf);
  const ElfSymbol* main_symbol = nullptr;
  for (const ElfSymbol& s : (*elf)->symbols().symbols()) {
    if (s.name == "main") main_symbol = &s;
  }
  ASSERT_NE(main_symbol, nullptr);
  auto symbolizer = ElfSymbolizer::FromElf(*elf, LlvmLikeOptions(true));
  ASSERT_TRUE(symbolizer);
  SymbolizedAddress a = (*symbolizer)->Symbolize(main_symbol->address, AddressKind::kVirtual);
  ASSERT_FALSE(a.frames.empty());
  EXPECT_NE(a.frames.back().file.find("inline_main.cc"), std::string::npos);
  EXPECT_GT(a.frames.back().line, 0u);
}

TEST(SplitFallbackTest, ClangSkeletonInlineTreeAnswersWithoutTheDwo) {
  if (!testing::ToolExists("llvm-symbolizer")) GTEST_SKIP() << "llvm-symbolizer not installed";
  // The .dwo files lie beside the binary, not under its (mapped, missing) compilation
  // directory: not looked for there, the skeletons' inline trees answer (LLVM: split-dwarf).
  size_t inline_chains = 0, with_file = 0;
  ExpectLlvmAnswers(Fixture("dwarf_clang_cxx_split_inlining.split"), LlvmLikeOptions(false),
                    &inline_chains, &with_file);
  EXPECT_GT(inline_chains, 20u);
  EXPECT_GT(with_file, 100u);
}

TEST(SplitFallbackTest, DwoBesideTheBinaryOnlyWhenAsked) {
  const std::string path = Fixture("dwarf_clang_cxx_split_inlining.split");
  std::vector<uint64_t> addresses = testing::FunctionAddresses(path, 4000);
  ASSERT_GT(addresses.size(), 100u);
  // Inlined frames named by a linkage name: read from a .dwo (a skeleton has DW_AT_name only).
  auto linkage_named_inlines = [&](bool beside) {
    auto symbolizer = ElfSymbolizer::Open(path, LlvmLikeOptions(beside));
    EXPECT_TRUE(symbolizer);
    if (!symbolizer) return size_t{0};
    size_t count = 0;
    for (const SymbolizedAddress& a :
         (*symbolizer)->SymbolizeBatch(addresses, AddressKind::kVirtual)) {
      for (const SourceFrame& f : a.frames) count += f.inlined && f.raw_function.starts_with("_Z");
    }
    return count;
  };
  EXPECT_GT(linkage_named_inlines(true), 20u);
  EXPECT_EQ(linkage_named_inlines(false), 0u);
}

}  // namespace
}  // namespace stacksym
