// Symbol-table symbolization, differentially against binutils' nm: for every function symbol
// of each fixture and for ≥1000 addresses inside the dynamic function symbols of
// /usr/bin/bash and libc.so.6, our (name, offset) must name a symbol nm says covers the
// address. Also demangling against `nm -C`, file-offset input, and the Reasons.
#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "stacksym/symbolize.h"
#include "test_util.h"

namespace stacksym {
namespace {

using testing::FixturePath;
using testing::NmSymbol;
using testing::RunNm;

bool IsFunctionType(char t) { return t == 'T' || t == 't' || t == 'W' || t == 'w' || t == 'i'; }

std::unique_ptr<ElfSymbolizer> OpenSymtabOnly(const std::string& path, bool demangle = false) {
  SymbolizeOptions options;
  options.use_debug_info = false;
  options.demangle = demangle;
  auto s = ElfSymbolizer::Open(path, options);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().ToString());
  return s.ok() ? std::move(*s) : nullptr;
}

// Checks that the symbolizer answers `address` with one of the nm symbols covering it.
// Returns false (and records a failure) otherwise.
bool CheckCovered(ElfSymbolizer& sym, const std::vector<NmSymbol>& nm, uint64_t address) {
  SymbolizedAddress got = sym.Symbolize(address, AddressKind::kVirtual);
  std::set<std::string> covering;
  for (const NmSymbol& s : nm) {
    if (IsFunctionType(s.type) && address >= s.address && address - s.address < s.size) {
      // nm -D appends symbol versions ("@GLIBC_2.2.5", "@@GLIBC_2.34").
      if (got.symbol_address == s.address) covering.insert(s.name.substr(0, s.name.find('@')));
    }
  }
  bool ok = !got.reason && covering.count(got.raw_symbol) == 1 &&
            got.offset == address - got.symbol_address;
  EXPECT_TRUE(ok) << std::hex << "address 0x" << address << ": got '" << got.raw_symbol << "' at 0x"
                  << got.symbol_address << " +0x" << got.offset
                  << (got.reason ? std::string(" reason ") + ReasonName(*got.reason) : "");
  return ok;
}

void CheckEveryFunctionSymbol(const std::string& path, const std::string& nm_flags) {
  auto sym = OpenSymtabOnly(path);
  ASSERT_NE(sym, nullptr);
  std::vector<NmSymbol> nm = RunNm(path, nm_flags);
  int checked = 0;
  for (const NmSymbol& s : nm) {
    if (!IsFunctionType(s.type) || s.size == 0) continue;
    for (uint64_t a : {s.address, s.address + s.size / 2, s.address + s.size - 1}) {
      if (!CheckCovered(*sym, nm, a)) return;
      ++checked;
    }
  }
  EXPECT_GT(checked, 30) << "too few function symbols in " << path;
}

TEST(SymtabSymbolizer, EveryFunctionOfPieFixture) {
  CheckEveryFunctionSymbol(FixturePath("symtab_cpp_pie"), "");
}
TEST(SymtabSymbolizer, EveryFunctionOfNonPieFixture) {
  CheckEveryFunctionSymbol(FixturePath("symtab_cpp_nopie"), "");
}
TEST(SymtabSymbolizer, EveryFunctionOfStrippedFixtureFromDynsym) {
  CheckEveryFunctionSymbol(FixturePath("symtab_cpp_stripped"), "-D");
}

void CheckSampleOfSystemBinary(const std::string& path) {
  if (access(path.c_str(), R_OK) != 0) GTEST_SKIP() << path << " is not present on this machine";
  auto sym = OpenSymtabOnly(path);
  ASSERT_NE(sym, nullptr);
  std::vector<NmSymbol> nm = RunNm(path, "-D");
  std::vector<const NmSymbol*> functions;
  for (const NmSymbol& s : nm) {
    if (IsFunctionType(s.type) && s.size > 0) functions.push_back(&s);
  }
  ASSERT_FALSE(functions.empty()) << "nm -D found no function symbols in " << path;
  std::mt19937_64 rng(12345);  // fixed seed: failures are reproducible
  int checked = 0, failed = 0;
  while (checked < 1200) {
    const NmSymbol& s = *functions[rng() % functions.size()];
    uint64_t a = s.address + rng() % s.size;
    if (!CheckCovered(*sym, nm, a) && ++failed > 20) break;
    ++checked;
  }
  EXPECT_EQ(failed, 0);
  EXPECT_GE(checked, 1000);
}

TEST(SymtabSymbolizer, SampleOfBashDynamicSymbols) { CheckSampleOfSystemBinary("/usr/bin/bash"); }
TEST(SymtabSymbolizer, SampleOfLibcDynamicSymbols) {
  CheckSampleOfSystemBinary("/usr/lib/x86_64-linux-gnu/libc.so.6");
}

TEST(SymtabSymbolizer, DemanglesLikeNm) {
  std::string path = FixturePath("symtab_cpp_pie");
  auto sym = OpenSymtabOnly(path, /*demangle=*/true);
  ASSERT_NE(sym, nullptr);
  // -p keeps the symbol-table order, so the raw and demangled listings line up.
  std::vector<NmSymbol> raw = RunNm(path, "-p");
  std::vector<NmSymbol> demangled = RunNm(path, "-p -C");
  ASSERT_EQ(raw.size(), demangled.size());
  int checked = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (!IsFunctionType(raw[i].type) || raw[i].size == 0 || raw[i].name.rfind("_Z", 0) != 0)
      continue;
    SymbolizedAddress got = sym->Symbolize(raw[i].address, AddressKind::kVirtual);
    if (got.raw_symbol != raw[i].name) continue;  // an alias won; checked elsewhere
    EXPECT_EQ(got.symbol, demangled[i].name) << raw[i].name;
    ++checked;
  }
  EXPECT_GT(checked, 5);
}

TEST(SymtabSymbolizer, RustNamesDemangled) {
  auto sym = OpenSymtabOnly(FixturePath("symtab_cpp_pie"), /*demangle=*/true);
  ASSERT_NE(sym, nullptr);
  std::map<std::string, std::string> expected = {
      {"_ZN7mycrate6module8function17h0123456789abcdefE", "mycrate::module::function"},
      {"_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar"},
      {"plain_c_function", "plain_c_function"},
  };
  for (const auto& [raw, pretty] : expected) {
    const ElfSymbol* s = sym->elf().symbols().FindByName(raw);
    ASSERT_NE(s, nullptr) << raw;
    SymbolizedAddress got = sym->Symbolize(s->address + 1, AddressKind::kVirtual);
    EXPECT_EQ(got.raw_symbol, raw);
    EXPECT_EQ(got.symbol, pretty);
    EXPECT_EQ(got.offset, 1u);
  }
}

TEST(SymtabSymbolizer, FileOffsetsGiveTheSameAnswer) {
  for (const char* name : {"symtab_cpp_pie", "symtab_cpp_nopie"}) {
    auto sym = OpenSymtabOnly(FixturePath(name), true);
    ASSERT_NE(sym, nullptr);
    const ElfSymbol* main_sym = sym->elf().symbols().FindByName("main");
    ASSERT_NE(main_sym, nullptr);
    std::optional<uint64_t> off = sym->elf().VaddrToFileOffset(main_sym->address + 4);
    ASSERT_TRUE(off.has_value());
    SymbolizedAddress by_offset = sym->Symbolize(*off, AddressKind::kFileOffset);
    SymbolizedAddress by_vaddr = sym->Symbolize(main_sym->address + 4, AddressKind::kVirtual);
    EXPECT_EQ(by_offset.symbol, "main");
    EXPECT_EQ(by_offset.vaddr, by_vaddr.vaddr);
    EXPECT_EQ(by_offset.offset, 4u);
    EXPECT_EQ(by_offset.input, *off);
  }
}

TEST(SymtabSymbolizer, Reasons) {
  auto sym = OpenSymtabOnly(FixturePath("symtab_cpp_pie"));
  ASSERT_NE(sym, nullptr);
  SymbolizedAddress far = sym->Symbolize(0x7fff00000000, AddressKind::kVirtual);
  ASSERT_TRUE(far.reason.has_value());
  EXPECT_EQ(*far.reason, Reason::kNotInSegment);
  // The ELF header is mapped by the first PT_LOAD but no symbol covers it.
  SymbolizedAddress header = sym->Symbolize(0x10, AddressKind::kVirtual);
  ASSERT_TRUE(header.reason.has_value());
  EXPECT_EQ(*header.reason, Reason::kNoSymbol);
  SymbolizedAddress bad_offset = sym->Symbolize(~uint64_t{0}, AddressKind::kFileOffset);
  ASSERT_TRUE(bad_offset.reason.has_value());
  EXPECT_EQ(*bad_offset.reason, Reason::kNotInSegment);

  auto nosyms = OpenSymtabOnly(FixturePath("nosyms"));
  ASSERT_NE(nosyms, nullptr);
  uint64_t entry = 0;
  for (const ElfSegment& s : nosyms->elf().segments()) {
    if (s.type == PT_LOAD && (s.flags & PF_X)) entry = s.vaddr + s.memsz / 2;
  }
  ASSERT_NE(entry, 0u);
  SymbolizedAddress none = nosyms->Symbolize(entry, AddressKind::kVirtual);
  ASSERT_TRUE(none.reason.has_value());
  EXPECT_EQ(*none.reason, Reason::kNoSymbols);
}

TEST(SymtabSymbolizer, BatchAnswersEveryAddress) {
  auto sym = OpenSymtabOnly(FixturePath("symtab_cpp_pie"));
  ASSERT_NE(sym, nullptr);
  const ElfSymbol* main_sym = sym->elf().symbols().FindByName("main");
  ASSERT_NE(main_sym, nullptr);
  std::vector<uint64_t> batch = {0, main_sym->address, ~uint64_t{0}, main_sym->address + 1};
  std::vector<SymbolizedAddress> out = sym->SymbolizeBatch(batch, AddressKind::kVirtual);
  ASSERT_EQ(out.size(), batch.size());
  EXPECT_TRUE(out[0].reason.has_value());
  EXPECT_EQ(out[1].symbol, "main");
  EXPECT_TRUE(out[2].reason.has_value());
  EXPECT_EQ(out[3].offset, 1u);
}

}  // namespace
}  // namespace stacksym

namespace stacksym {
namespace {

// A binary stripped of every symbol, its DWARF and .symtab kept in a .gnu_debuglink file: what
// neither its own tables nor DWARF name (_start, which has no DWARF) comes from the debug
// file's .symtab; functions with DWARF keep their names; llvm-symbolizer's way (the option off)
// leaves _start unnamed, as llvm-symbolizer does.
TEST(SymtabSymbolizer, StrippedBinaryNamesWhatDwarfDoesNotFromItsDebugFile) {
  std::string binary = FixturePath("real_dbg.symless");
  auto debug = ElfFile::Open(FixturePath("real_dbg.debug"));
  ASSERT_TRUE(debug) << debug.error().ToString();
  const ElfSymbol* start = (*debug)->symbols().FindByName("_start");
  const ElfSymbol* main_fn = (*debug)->symbols().FindByName("main");
  ASSERT_NE(start, nullptr);
  ASSERT_NE(main_fn, nullptr);
  auto own = ElfFile::Open(binary);
  ASSERT_TRUE(own);
  ASSERT_FALSE((*own)->symbols().has_symtab()) << "the fixture should be stripped of .symtab";

  SymbolizeOptions options;
  options.debug_dirs = {};
  auto symbolizer = ElfSymbolizer::Open(binary, options);
  ASSERT_TRUE(symbolizer);
  SymbolizedAddress a = (*symbolizer)->Symbolize(start->address + 1, AddressKind::kVirtual);
  EXPECT_FALSE(a.reason.has_value());
  EXPECT_EQ(a.symbol, "_start");
  EXPECT_EQ(a.offset, 1u);
  SymbolizedAddress m = (*symbolizer)->Symbolize(main_fn->address, AddressKind::kVirtual);
  ASSERT_FALSE(m.frames.empty()) << "main has DWARF";
  EXPECT_EQ(m.frames.back().function, "main");
  // A function DWARF names keeps DWARF's name (not renamed from the debug file's .symtab),
  // with the start and size of its code (dwarf/function_run.h), which are the symbol's.
  EXPECT_EQ(m.symbol, "main");
  EXPECT_EQ(m.symbol_address, main_fn->address);
  EXPECT_EQ(m.symbol_size, main_fn->size);
  EXPECT_EQ(m.offset, 0u);

  options.symbols_from_debug_file = false;
  auto llvm_like = ElfSymbolizer::Open(binary, options);
  ASSERT_TRUE(llvm_like);
  SymbolizedAddress b = (*llvm_like)->Symbolize(start->address + 1, AddressKind::kVirtual);
  EXPECT_EQ(b.symbol, "");
  EXPECT_TRUE(b.reason.has_value());
}

}  // namespace
}  // namespace stacksym
