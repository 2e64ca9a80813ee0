// Relocatable objects written byte by byte (elf/relocate.h, elf/object_layout.h): the debug
// sections' RELA and REL relocations applied (absolute and pc-relative, section and function
// symbols, x86-64, i386 and AArch64), the allocated sections placed apart, and every damaged
// relocation — offset past the section, symbol index past the table, unknown type, a symbol
// table link that names no table, a bad entry size — an error naming the entry, never a crash.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "elf_builder.h"
#include "stacksym/elf.h"

namespace stacksym {
namespace {

using testing::Append32;
using testing::Append64;
using testing::BuilderSection;
using testing::ElfBuilder;
using testing::SymtabWriter;

void AppendRela64(std::vector<uint8_t>& b, uint64_t offset, uint32_t symbol, uint32_t type,
                  int64_t addend) {
  Append64(b, offset);
  Append64(b, ELF64_R_INFO(uint64_t{symbol}, type));
  Append64(b, static_cast<uint64_t>(addend));
}

uint64_t Read64(std::span<const uint8_t> bytes, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + at, 8);
  return v;
}

uint32_t Read32(std::span<const uint8_t> bytes, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, bytes.data() + at, 4);
  return v;
}

// An x86-64 object: .text (0x40 bytes), .text.hot (0x20 bytes, align 16), a symbol table with
// a function in each, and .debug_info of 32 bytes with the relocations in `rela`.
struct Object {
  ElfBuilder builder{true};
  uint32_t text = 0, text_hot = 0, debug = 0, symtab = 0, rela = 0;
  std::vector<uint8_t> relocations;
  uint32_t symtab_link_override = 0;  // 0: the symbol table
  uint64_t rela_entsize = sizeof(Elf64_Rela);
  uint16_t machine = EM_X86_64;
  uint16_t elf_type = ET_REL;

  std::vector<uint8_t> Build() {
    builder.elf_type = elf_type;
    builder.machine = machine;
    text = builder.AddSection({.name = ".text",
                               .flags = SHF_ALLOC | SHF_EXECINSTR,
                               .data = std::vector<uint8_t>(0x40, 0x90),
                               .addralign = 16});
    text_hot = builder.AddSection({.name = ".text.hot",
                                   .flags = SHF_ALLOC | SHF_EXECINSTR,
                                   .data = std::vector<uint8_t>(0x20, 0x90),
                                   .addralign = 16});
    debug = builder.AddSection({.name = ".debug_info", .data = std::vector<uint8_t>(32, 0)});
    SymtabWriter symbols;
    symbols.Add("", 0, 0, STT_SECTION, STB_LOCAL, static_cast<uint16_t>(text_hot));           // 1
    symbols.Add("cold_fn", 0x10, 0x30, STT_FUNC, STB_GLOBAL, static_cast<uint16_t>(text));    // 2
    symbols.Add("hot_fn", 0x4, 0x1c, STT_FUNC, STB_GLOBAL, static_cast<uint16_t>(text_hot));  // 3
    const uint32_t strtab =
        builder.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = symbols.strings()});
    symtab = builder.AddSection({.name = ".symtab",
                                 .type = SHT_SYMTAB,
                                 .data = symbols.symbols(),
                                 .link = strtab,
                                 .info = 1,
                                 .addralign = 8,
                                 .entsize = symbols.entry_size()});
    rela = builder.AddSection({.name = ".rela.debug_info",
                               .type = SHT_RELA,
                               .flags = SHF_INFO_LINK,
                               .data = relocations,
                               .link = symtab_link_override ? symtab_link_override : symtab,
                               .info = debug,
                               .addralign = 8,
                               .entsize = rela_entsize});
    return builder.Build();
  }
};

std::shared_ptr<ElfFile> Parse(const std::vector<uint8_t>& bytes) {
  auto elf = ElfFile::FromBytes(bytes, "object.o");
  EXPECT_TRUE(elf.ok()) << elf.error().ToString();
  return elf.ok() ? *elf : nullptr;
}

// The error reading .debug_info gives, or "" when it reads.
std::string DebugInfoError(Object& object) {
  std::shared_ptr<ElfFile> elf = Parse(object.Build());
  if (!elf) return "not parsed";
  auto data = elf->SectionData(".debug_info");
  return data.ok() ? "" : data.error().ToString();
}

TEST(RelocateTest, AllocatedSectionsArePlacedApartInHeaderOrder) {
  Object object;
  std::shared_ptr<ElfFile> elf = Parse(object.Build());
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->sections()[object.text].addr, 0u);
  EXPECT_EQ(elf->sections()[object.text_hot].addr, 0x40u);  // after .text, 16-aligned
  EXPECT_EQ(elf->sections()[object.debug].addr, 0u);        // not allocated: left at 0
  // The symbols are where their sections were placed.
  const ElfSymbol* hot = elf->symbols().Find(0x44);
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(hot->name, "hot_fn");
  EXPECT_EQ(hot->address, 0x44u);
  const ElfSymbol* cold = elf->symbols().Find(0x10);
  ASSERT_NE(cold, nullptr);
  EXPECT_EQ(cold->name, "cold_fn");
}

TEST(RelocateTest, RelaAbsoluteAndPcRelativeRelocationsAreApplied) {
  Object object;
  AppendRela64(object.relocations, 0, 1, R_X86_64_64, 8);       // .text.hot + 8
  AppendRela64(object.relocations, 8, 3, R_X86_64_64, 2);       // hot_fn + 2
  AppendRela64(object.relocations, 16, 2, R_X86_64_32, -0x10);  // cold_fn - 0x10
  AppendRela64(object.relocations, 20, 2, R_X86_64_PC32, 0);    // cold_fn - P (P = 20)
  AppendRela64(object.relocations, 24, 0, R_X86_64_NONE, 0);    // nothing
  std::shared_ptr<ElfFile> elf = Parse(object.Build());
  ASSERT_NE(elf, nullptr);
  auto data = elf->SectionData(".debug_info");
  ASSERT_TRUE(data.ok()) << data.error().ToString();
  ASSERT_EQ(data->size(), 32u);
  EXPECT_EQ(Read64(*data, 0), 0x48u);
  EXPECT_EQ(Read64(*data, 8), 0x46u);
  EXPECT_EQ(Read32(*data, 16), 0u);
  EXPECT_EQ(Read32(*data, 20), static_cast<uint32_t>(0x10 - 20));
  EXPECT_EQ(Read64(*data, 24), 0u);
  // Once: the same bytes again, and the file's own bytes untouched.
  auto again = elf->SectionData(".debug_info");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->data(), data->data());
}

TEST(RelocateTest, OffsetPastTheSectionIsAnErrorNamingTheEntry) {
  Object object;
  AppendRela64(object.relocations, 0, 1, R_X86_64_64, 0);
  AppendRela64(object.relocations, 28, 1, R_X86_64_64, 0);  // 8 bytes at 28 of 32
  std::string error = DebugInfoError(object);
  EXPECT_NE(error.find("relocation 1 "), std::string::npos) << error;
  EXPECT_NE(error.find("runs past the end of .debug_info"), std::string::npos) << error;
  EXPECT_NE(error.find(".rela.debug_info"), std::string::npos) << error;
  Object huge;
  AppendRela64(huge.relocations, UINT64_MAX - 2, 1, R_X86_64_32, 0);  // offset + 4 wraps
  error = DebugInfoError(huge);
  EXPECT_NE(error.find("runs past the end"), std::string::npos) << error;
}

TEST(RelocateTest, SymbolIndexPastTheTableIsAnError) {
  Object object;
  AppendRela64(object.relocations, 0, 4, R_X86_64_64, 0);  // symbols 0..3
  std::string error = DebugInfoError(object);
  EXPECT_NE(error.find("symbol index 4 is past the end of the symbol table"), std::string::npos)
      << error;
  Object far;
  AppendRela64(far.relocations, 0, 0xffffffffu, R_X86_64_64, 0);
  error = DebugInfoError(far);
  EXPECT_NE(error.find("past the end of the symbol table"), std::string::npos) << error;
}

TEST(RelocateTest, UnknownTypeIsUnsupportedNotIgnored) {
  Object object;
  AppendRela64(object.relocations, 0, 1, R_X86_64_GOTPCREL, 0);
  std::string error = DebugInfoError(object);
  EXPECT_NE(error.find("type not supported"), std::string::npos) << error;
  EXPECT_NE(error.find("(type 9,"), std::string::npos) << error;
  Object other_machine;
  other_machine.machine = EM_RISCV;
  AppendRela64(other_machine.relocations, 0, 1, 2 /* R_RISCV_64 */, 0);
  error = DebugInfoError(other_machine);
  EXPECT_NE(error.find("machine 243"), std::string::npos) << error;
}

TEST(RelocateTest, BadSymbolTableLinkAndEntrySizeAreErrors) {
  Object no_table;
  no_table.symtab_link_override = 3;  // .debug_info, not a symbol table
  AppendRela64(no_table.relocations, 0, 1, R_X86_64_64, 0);
  std::string error = DebugInfoError(no_table);
  EXPECT_NE(error.find("does not name a symbol table"), std::string::npos) << error;
  Object small_entries;
  small_entries.rela_entsize = 8;
  AppendRela64(small_entries.relocations, 0, 1, R_X86_64_64, 0);
  error = DebugInfoError(small_entries);
  EXPECT_NE(error.find("relocation entry size 8"), std::string::npos) << error;
  Object ragged;
  AppendRela64(ragged.relocations, 0, 1, R_X86_64_64, 0);
  ragged.relocations.resize(ragged.relocations.size() + 5);
  error = DebugInfoError(ragged);
  EXPECT_NE(error.find("not a multiple of the entry size"), std::string::npos) << error;
}

// i386 objects use REL: the addend is what the location holds.
TEST(RelocateTest, Rel32TakesTheAddendFromTheLocation) {
  ElfBuilder builder(false);
  builder.elf_type = ET_REL;
  builder.machine = EM_386;
  builder.AddSection({.name = ".text",
                      .flags = SHF_ALLOC | SHF_EXECINSTR,
                      .data = std::vector<uint8_t>(0x30, 0x90)});
  const uint32_t text2 = builder.AddSection({.name = ".text.b",
                                             .flags = SHF_ALLOC | SHF_EXECINSTR,
                                             .data = std::vector<uint8_t>(0x10, 0x90),
                                             .addralign = 16});
  std::vector<uint8_t> info(8, 0);
  info[0] = 0x05;  // implicit addend 5
  const uint32_t debug = builder.AddSection({.name = ".debug_info", .data = info});
  SymtabWriter symbols(false);
  symbols.Add("", 0, 0, STT_SECTION, STB_LOCAL, static_cast<uint16_t>(text2));
  const uint32_t strtab =
      builder.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = symbols.strings()});
  const uint32_t symtab = builder.AddSection({.name = ".symtab",
                                              .type = SHT_SYMTAB,
                                              .data = symbols.symbols(),
                                              .link = strtab,
                                              .info = 1,
                                              .entsize = symbols.entry_size()});
  std::vector<uint8_t> rel;
  Append32(rel, 0);
  Append32(rel, ELF32_R_INFO(1, R_386_32));
  Append32(rel, 4);
  Append32(rel, ELF32_R_INFO(1, R_386_PC32));
  builder.AddSection({.name = ".rel.debug_info",
                      .type = SHT_REL,
                      .data = rel,
                      .link = symtab,
                      .info = debug,
                      .entsize = sizeof(Elf32_Rel)});
  std::shared_ptr<ElfFile> elf = Parse(builder.Build());
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->sections()[text2].addr, 0x30u);
  auto data = elf->SectionData(".debug_info");
  ASSERT_TRUE(data.ok()) << data.error().ToString();
  EXPECT_EQ(Read32(*data, 0), 0x35u);
  EXPECT_EQ(Read32(*data, 4), 0x30u - 4u);
}

// A linked file's .rela.debug_* (ld --emit-relocs) are already applied: left alone.
TEST(RelocateTest, OnlyRelocatableFilesAreRelocated) {
  Object object;
  object.elf_type = ET_DYN;
  AppendRela64(object.relocations, 0, 1, R_X86_64_64, 8);
  std::shared_ptr<ElfFile> elf = Parse(object.Build());
  ASSERT_NE(elf, nullptr);
  auto data = elf->SectionData(".debug_info");
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(Read64(*data, 0), 0u);
  EXPECT_EQ(elf->sections()[object.text_hot].addr, 0u);
}

}  // namespace
}  // namespace stacksym
