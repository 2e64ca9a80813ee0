// The drop-in's view of a symbol table (LlvmSymbolNames) on crafted ELF files: as
// llvm-symbolizer 16, ARM/AArch64 mapping symbols and ARM/RISC-V empty names never name an
// address, ARM functions' Thumb bit is not part of their address, and symbol addresses lose
// their top byte (memory tags) unless --no-untag-addresses
// (llvm/test/DebugInfo/Symbolize/ELF/{aarch64,arm}-mapping-symbol.s, riscv-empty-name-symbol.s).
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>

#include "../elf/elf_builder.h"
#include "llvm_symbolizer_names.h"
#include "stacksym/elf.h"

namespace stacksym::cli {
namespace {

using testing::ElfBuilder;
using testing::SymtabWriter;

struct Sym {
  std::string name;
  uint64_t value;
  uint8_t type;
  uint8_t bind;
};

std::shared_ptr<ElfFile> Build(uint16_t machine, bool is_64bit, const std::vector<Sym>& syms,
                               uint16_t elf_type = ET_REL) {
  ElfBuilder b(is_64bit);
  b.machine = machine;
  b.elf_type = elf_type;
  uint32_t text = b.AddSection(
      {.name = ".text", .flags = SHF_ALLOC | SHF_EXECINSTR, .data = std::vector<uint8_t>(16)});
  SymtabWriter writer(is_64bit);
  for (const Sym& s : syms)
    writer.Add(s.name, s.value, 0, s.type, s.bind, static_cast<uint16_t>(text));
  b.AddSection({.name = ".symtab",
                .type = SHT_SYMTAB,
                .data = writer.symbols(),
                .link = text + 2,
                .entsize = writer.entry_size()});
  b.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = writer.strings()});
  auto elf = ElfFile::FromBytes(b.Build(), "crafted.o");
  EXPECT_TRUE(elf.ok()) << elf.error().ToString();
  return elf.ok() ? *elf : nullptr;
}

std::string NameAt(const LlvmSymbolNames& names, uint64_t address) {
  std::optional<LlvmSymbolNames::Entry> e = names.Find(address);
  return e ? std::string(e->name) : "??";
}

TEST(LlvmSymbolNames, AArch64MappingSymbolsAreSkipped) {
  auto elf = Build(EM_AARCH64, true,
                   {{"$d.0", 0, STT_NOTYPE, STB_LOCAL},
                    {"$x.1", 4, STT_NOTYPE, STB_LOCAL},
                    {"$d.2", 0xc, STT_NOTYPE, STB_LOCAL},
                    {"foo", 0, STT_NOTYPE, STB_GLOBAL}});
  ASSERT_TRUE(elf);
  LlvmSymbolNames names(*elf);
  for (uint64_t a : {0, 4, 0xc}) EXPECT_EQ(NameAt(names, a), "foo") << a;
}

TEST(LlvmSymbolNames, ArmMappingSymbolsEmptyNamesAndThumbBit) {
  auto elf = Build(EM_ARM, false,
                   {{"$d.0", 0, STT_NOTYPE, STB_LOCAL},
                    {"$a.1", 4, STT_NOTYPE, STB_LOCAL},
                    {"$t.3", 6, STT_NOTYPE, STB_LOCAL},
                    {"", 7, STT_NOTYPE, STB_LOCAL},
                    {"$d.2", 8, STT_NOTYPE, STB_LOCAL},
                    {"foo", 0, STT_NOTYPE, STB_GLOBAL},
                    {"thumb_func", 0xb, STT_FUNC, STB_GLOBAL}});
  ASSERT_TRUE(elf);
  LlvmSymbolNames names(*elf);
  for (uint64_t a : {4, 6, 7, 8, 9}) EXPECT_EQ(NameAt(names, a), "foo") << a;
  EXPECT_EQ(NameAt(names, 0xa), "thumb_func");  // 0xb with its Thumb bit cleared
}

TEST(LlvmSymbolNames, RiscvEmptyNamesAreSkipped) {
  auto elf =
      Build(EM_RISCV, true, {{"", 4, STT_NOTYPE, STB_LOCAL}, {"foo", 0, STT_NOTYPE, STB_GLOBAL}});
  ASSERT_TRUE(elf);
  LlvmSymbolNames names(*elf);
  EXPECT_EQ(NameAt(names, 0), "foo");
  EXPECT_EQ(NameAt(names, 4), "foo");
}

TEST(LlvmSymbolNames, TaggedAddressesAreUntaggedByDefault) {
  // llvm/test/tools/llvm-symbolizer/untag-addresses.test: a symbol at 0x1100000000000000 is at
  // 0 (its top byte a memory tag) unless --no-untag-addresses; kernel addresses stay.
  auto elf = Build(EM_X86_64, true,
                   {{"tagged", 0x1100000000000000, STT_OBJECT, STB_GLOBAL},
                    {"kernel", 0xffffffff81000000, STT_FUNC, STB_GLOBAL}},
                   ET_DYN);  // (an object's addresses are offsets into its text sections)
  ASSERT_TRUE(elf);
  LlvmSymbolNames untagged(*elf);
  EXPECT_EQ(NameAt(untagged, 0), "tagged");
  EXPECT_EQ(NameAt(untagged, 0xffffffff81000000), "kernel");
  LlvmSymbolNames tagged(*elf, /*untag_addresses=*/false);
  EXPECT_EQ(NameAt(tagged, 0), "??");
  EXPECT_EQ(NameAt(tagged, 0x1100000000000000), "tagged");
}

TEST(LlvmSymbolNames, NamePastTheStringTableRefusesTheFile) {
  // llvm/test/DebugInfo/Symbolize/ELF/symtab-file2.yaml: LLVM 16 reads every symbol's name
  // and gives up on the file at the first one past the end of the string table.
  ElfBuilder b;
  uint32_t text = b.AddSection(
      {.name = ".text", .flags = SHF_ALLOC | SHF_EXECINSTR, .data = std::vector<uint8_t>(16)});
  SymtabWriter writer;
  writer.AddRaw(0xffff, 0, 0, STT_FILE, STB_LOCAL, SHN_ABS);
  writer.Add("local", 0, 0, STT_FUNC, STB_LOCAL, static_cast<uint16_t>(text));
  b.AddSection({.name = ".symtab",
                .type = SHT_SYMTAB,
                .data = writer.symbols(),
                .link = text + 2,
                .entsize = writer.entry_size()});
  b.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = writer.strings()});
  auto elf = ElfFile::FromBytes(b.Build(), "bad_name.so");
  ASSERT_TRUE(elf.ok()) << elf.error().ToString();
  LlvmSymbolNames names(**elf);
  char expected[100];
  std::snprintf(expected, sizeof expected,
                "st_name (0xffff) is past the end of the string table of size 0x%zx",
                writer.strings().size());
  EXPECT_EQ(names.error(), expected);
  EXPECT_FALSE(names.Find(0));

  auto good = Build(EM_X86_64, true, {{"foo", 0, STT_FUNC, STB_GLOBAL}});
  ASSERT_TRUE(good);
  EXPECT_EQ(LlvmSymbolNames(*good).error(), "");
}

TEST(LlvmSymbolNames, OtherMachinesKeepDollarNames) {
  // x86-64 has no mapping symbols: a "$x" name is a name (LLVM marks none there).
  auto elf = Build(EM_X86_64, true,
                   {{"foo", 0, STT_NOTYPE, STB_GLOBAL}, {"$x.1", 4, STT_NOTYPE, STB_LOCAL}});
  ASSERT_TRUE(elf);
  LlvmSymbolNames names(*elf);
  EXPECT_EQ(NameAt(names, 0), "foo");
  EXPECT_EQ(NameAt(names, 4), "$x.1");
}

// An object's offsets (elf/object_layout.h): a code offset a text section holds is looked up
// among that section's symbols; a DATA offset, or a code offset past every text section, names
// no section and is looked up as llvm-symbolizer does, among every section's symbols, each
// section at 0 (per offset the largest symbol; a sizeless one covering everything above it).
TEST(LlvmSymbolNames, ObjectOffsetsInNoSectionAreLookedUpInEverySection) {
  ElfBuilder b(true);
  b.machine = EM_X86_64;
  b.elf_type = ET_REL;
  uint32_t text = b.AddSection(
      {.name = ".text", .flags = SHF_ALLOC | SHF_EXECINSTR, .data = std::vector<uint8_t>(16)});
  uint32_t data = b.AddSection(
      {.name = ".data", .flags = SHF_ALLOC | SHF_WRITE, .data = std::vector<uint8_t>(16)});
  SymtabWriter writer(true);
  writer.Add("f", 0, 4, STT_FUNC, STB_GLOBAL, static_cast<uint16_t>(text));
  writer.Add("last", 12, 0, STT_NOTYPE, STB_LOCAL, static_cast<uint16_t>(text));
  writer.Add("d", 0, 8, STT_OBJECT, STB_GLOBAL, static_cast<uint16_t>(data));
  writer.Add("d2", 8, 4, STT_OBJECT, STB_GLOBAL, static_cast<uint16_t>(data));
  b.AddSection({.name = ".symtab",
                .type = SHT_SYMTAB,
                .data = writer.symbols(),
                .link = data + 2,
                .entsize = writer.entry_size()});
  b.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = writer.strings()});
  auto elf = ElfFile::FromBytes(b.Build(), "crafted.o");
  ASSERT_TRUE(elf.ok()) << elf.error().ToString();
  LlvmSymbolNames names(**elf);
  // Code in .text: its own symbols only (d, larger, at the same offset of .data is not asked).
  EXPECT_EQ(NameAt(names, 2), "f");
  EXPECT_EQ(NameAt(names, 5), "??");  // past f, before last
  EXPECT_EQ(NameAt(names, 14), "last");
  // Code past .text (16 bytes): every section's symbols; the sizeless last covers it.
  EXPECT_EQ(NameAt(names, 30), "last");
  // Data: every section's symbols, the largest at each offset.
  auto data_at = [&](uint64_t a) {
    std::optional<LlvmSymbolNames::Entry> e = names.FindData(a);
    return e ? std::string(e->name) + "@" + std::to_string(e->address) + "+" +
                   std::to_string(e->size)
             : std::string("??");
  };
  EXPECT_EQ(data_at(2), "d@0+8");
  EXPECT_EQ(data_at(10), "d2@8+4");
  EXPECT_EQ(data_at(12), "last@12+0");
}

}  // namespace
}  // namespace stacksym::cli
