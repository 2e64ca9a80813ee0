// The PLT stubs' made-up symbols (ElfFile::plt_symbols): a differential check against the
// `<name@plt>` labels objdump -d prints, on a program calling libc through the PLT in every
// layout gcc 12 and ld give (IBT's .plt.sec or not, lazy or -z now, PIE's .plt.got or not);
// PLT0 named ".plt" as perf names it; a binary without PLT; and crafted broken PLTs and
// relocations, which give no name, never a crash.
#include <elf.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <regex>
#include <set>

#include "elf_builder.h"
#include "stacksym/elf.h"
#include "tool_runner.h"

namespace stacksym {
namespace {

using testing::Append32;
using testing::Append64;
using testing::BuilderSection;
using testing::ElfBuilder;
using testing::Fixture;
using testing::RunTool;
using testing::ShellQuote;
using testing::SplitLines;
using testing::SymtabWriter;

std::shared_ptr<ElfFile> OpenOrDie(const std::string& path) {
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << elf.error().ToString();
  return elf.ok() ? *elf : nullptr;
}

// One label objdump -d prints in a PLT section, and the address range up to the next label
// (or the section's end).
struct Label {
  std::string section;
  uint64_t start = 0;
  uint64_t end = 0;
  std::string name;
};

bool IsPltSectionName(const std::string& name) {
  return name == ".plt" || name == ".plt.sec" || name == ".plt.got";
}

// objdump -d, or llvm-objdump -d for AArch64 (binutils here disassembles x86 only).
std::vector<Label> ObjdumpPltLabels(const ElfFile& elf) {
  const std::string tool = elf.machine() == EM_AARCH64 ? "llvm-objdump" : "objdump";
  static const std::regex kSection("^Disassembly of section (\\S+):$");
  static const std::regex kLabel("^([0-9a-f]+) <(.+)>:$");
  std::vector<Label> labels;
  std::string section;
  for (const std::string& line : SplitLines(RunTool(tool + " -d " + ShellQuote(elf.path())))) {
    std::smatch m;
    if (std::regex_match(line, m, kSection)) {
      section = m[1];
      continue;
    }
    if (!IsPltSectionName(section) || !std::regex_match(line, m, kLabel)) continue;
    uint64_t start = std::stoull(m[1], nullptr, 16);
    if (!labels.empty() && labels.back().section == section) labels.back().end = start;
    const ElfSection* s = elf.FindSection(section);
    labels.push_back({section, start, s != nullptr ? s->addr + s->size : start, m[2]});
  }
  return labels;
}

class PltFixture : public ::testing::TestWithParam<const char*> {};

// Every address of every stub objdump labels "<name@plt>" is named name@plt; PLT0 (objdump's
// "<.plt>", or "<puts@plt-0x10>" relative to the first stub where no section symbol is kept)
// is ".plt", as perf names it.
TEST_P(PltFixture, NamesEveryStubAsObjdumpLabelsIt) {
  std::string name = GetParam();
  if (name.find("aarch64") != std::string::npos) {
#ifndef STACKSYM_ELF_HAVE_AARCH64_FIXTURE
    GTEST_SKIP() << "no AArch64 fixture: needs clang and ld.lld";
#endif
    if (!testing::ToolAvailable("llvm-objdump")) GTEST_SKIP() << "needs llvm-objdump";
  }
  if (!testing::ToolAvailable("objdump")) GTEST_SKIP() << "needs objdump";
  std::shared_ptr<ElfFile> elf = OpenOrDie(Fixture(GetParam()));
  ASSERT_NE(elf, nullptr);
  std::vector<Label> labels = ObjdumpPltLabels(*elf);
  const SymbolTable& plt = elf->plt_symbols();
  std::set<std::string> named;
  size_t checked = 0;
  for (const Label& label : labels) {
    std::string expected = label.name;
    if (label.name == ".plt" || label.name.find("@plt-0x") != std::string::npos) {
      expected = ".plt";
    } else if (label.name.starts_with("*ABS*+0x")) {
      // An ifunc's stub: named after the function at the resolver's address, as perf does.
      uint64_t resolver = std::stoull(label.name.substr(8), nullptr, 16);
      const ElfSymbol* s = elf->symbols().Find(resolver);
      if (s != nullptr && s->address == resolver) expected = std::string(s->name) + "@plt";
    } else {
      ASSERT_TRUE(label.name.ends_with("@plt")) << label.name;
    }
    for (uint64_t a = label.start; a < label.end; ++a) {
      const ElfSymbol* s = plt.Find(a);
      ASSERT_NE(s, nullptr) << label.section << " " << label.name << " at 0x" << std::hex << a;
      EXPECT_EQ(s->name, expected) << "at 0x" << std::hex << a;
      ++checked;
    }
    named.insert(expected);
  }
  if (name.starts_with("elf_plt_")) {
    for (const char* function : {"puts@plt", "strlen@plt", "memcpy@plt", "abs@plt", ".plt"}) {
      EXPECT_TRUE(named.count(function)) << function << " not labelled by objdump";
    }
    EXPECT_GE(checked, 5u * 16);
  } else {
    EXPECT_GE(named.size(), 2u);
  }
  // And nothing outside the PLT sections.
  for (const ElfSymbol& s : plt.symbols()) {
    const ElfSection& section = elf->sections().at(s.section);
    EXPECT_TRUE(IsPltSectionName(std::string(section.name))) << s.name;
    EXPECT_GE(s.address, section.addr);
    EXPECT_LE(s.address + s.size, section.addr + section.size) << s.name;
  }
}

// The fixtures are the layouts they are meant to be.
TEST_P(PltFixture, LayoutIsAsBuilt) {
  std::string name = GetParam();
#ifndef STACKSYM_ELF_HAVE_AARCH64_FIXTURE
  if (name.find("aarch64") != std::string::npos) GTEST_SKIP() << "needs clang and ld.lld";
#endif
  std::shared_ptr<ElfFile> elf = OpenOrDie(Fixture(GetParam()));
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->machine(), name.find("aarch64") != std::string::npos ? EM_AARCH64 : EM_X86_64);
  bool ibt = name.find("_ibt") != std::string::npos;
  EXPECT_NE(elf->FindSection(".plt"), nullptr);
  if (ibt) {
    EXPECT_NE(elf->FindSection(".plt.sec"), nullptr);
  }
  if (name.find("_plt_lazy") != std::string::npos || name.find("_plt_now") != std::string::npos) {
    EXPECT_EQ(elf->FindSection(".plt.sec"), nullptr);
  }
  if (name.find("nopie") == std::string::npos && name.find("aarch64") == std::string::npos) {
    EXPECT_NE(elf->FindSection(".plt.got"), nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, PltFixture,
                         ::testing::Values("elf_plt_cf", "elf_plt_ibt_lazy", "elf_plt_ibt_now",
                                           "elf_plt_ibt_nopie", "elf_plt_lazy", "elf_plt_now",
                                           "elf_plt_nopie", "elf_basic_pie", "elf_cxx",
                                           "elf_plt_aarch64", "elf_plt_aarch64_bti"));

TEST(Plt, BinaryWithoutPltHasNone) {
  std::shared_ptr<ElfFile> elf = OpenOrDie(Fixture("elf_no_plt"));
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->FindSection(".plt"), nullptr);
  EXPECT_TRUE(elf->plt_symbols().empty());
  EXPECT_NE(elf->symbols().FindByName("_start"), nullptr);
}

// A separate debug file keeps the PLT's header but not its bytes (SHT_NOBITS): no names.
TEST(Plt, DebugFileHasNone) {
  std::shared_ptr<ElfFile> elf = OpenOrDie(Fixture("elf_basic_debuglink.debug"));
  ASSERT_NE(elf, nullptr);
  EXPECT_TRUE(elf->plt_symbols().empty());
}

// A C++ stub's name is the mangled name with "@plt" (demangled by the symbolizer).
TEST(Plt, CxxStubKeepsTheLinkageName) {
  std::shared_ptr<ElfFile> elf = OpenOrDie(Fixture("elf_cxx"));
  ASSERT_NE(elf, nullptr);
  bool mangled = false;
  for (const ElfSymbol& s : elf->plt_symbols().symbols()) {
    mangled |= s.name.starts_with("_Z") && s.name.ends_with("@plt");
  }
  EXPECT_TRUE(mangled);
}

// A crafted x86-64 image: .plt at 0x1000 with PLT0 and one lazy stub jumping through the GOT
// slot 0x3000, which .rela.plt's JUMP_SLOT relocation gives to "puts".
struct CraftedPlt {
  ElfBuilder builder;
  std::vector<uint8_t> plt;
  std::vector<uint8_t> rela;
  SymtabWriter dynsym;
  uint32_t sym_index = 1;
  uint64_t plt_entsize = 16;
  uint64_t plt_addr = 0x1000;
  uint64_t slot = 0x3000;
  uint32_t reloc_type = R_X86_64_JUMP_SLOT;
  uint64_t rela_entsize = sizeof(Elf64_Rela);
  std::optional<uint64_t> plt_size_override, rela_size_override;

  CraftedPlt() {
    dynsym.Add("puts", 0, 0, STT_FUNC, STB_GLOBAL, SHN_UNDEF);
    // PLT0: push GOT+8(%rip); jmp *GOT+16(%rip); nop.
    plt = {0xff, 0x35, 0, 0, 0, 0, 0xff, 0x25, 0, 0, 0, 0, 0x0f, 0x1f, 0x40, 0x00};
    // Stub at 0x1010: jmp *disp(%rip) to 0x3000; push $0; jmp PLT0.
    uint32_t disp = 0x3000 - (0x1010 + 6);
    plt.insert(plt.end(), {0xff, 0x25});
    Append32(plt, disp);
    plt.insert(plt.end(), {0x68, 0, 0, 0, 0, 0xe9, 0xe0, 0xff, 0xff, 0xff});
  }
  std::shared_ptr<ElfFile> Build() {
    rela.clear();
    Append64(rela, slot);
    Append64(rela, (uint64_t{sym_index} << 32) | reloc_type);
    Append64(rela, 0);
    uint32_t dynstr = builder.AddSection(
        {.name = ".dynstr", .type = SHT_STRTAB, .flags = SHF_ALLOC, .data = dynsym.strings()});
    uint32_t syms = builder.AddSection({.name = ".dynsym",
                                        .type = SHT_DYNSYM,
                                        .flags = SHF_ALLOC,
                                        .data = dynsym.symbols(),
                                        .link = dynstr,
                                        .addralign = 8,
                                        .entsize = sizeof(Elf64_Sym)});
    builder.AddSection({.name = ".rela.plt",
                        .type = SHT_RELA,
                        .flags = SHF_ALLOC,
                        .data = rela,
                        .link = syms,
                        .addralign = 8,
                        .entsize = rela_entsize,
                        .size_override = rela_size_override});
    builder.AddSection({.name = ".plt",
                        .type = SHT_PROGBITS,
                        .flags = SHF_ALLOC | SHF_EXECINSTR,
                        .addr = plt_addr,
                        .data = plt,
                        .addralign = 16,
                        .entsize = plt_entsize,
                        .size_override = plt_size_override});
    auto elf = ElfFile::FromBytes(builder.Build(), "crafted-plt");
    EXPECT_TRUE(elf.ok()) << elf.error().ToString();
    return elf.ok() ? *elf : nullptr;
  }
};

// address → name of every made-up symbol.
std::map<uint64_t, std::string> Names(const ElfFile& elf) {
  std::map<uint64_t, std::string> names;
  for (const ElfSymbol& s : elf.plt_symbols().symbols()) names[s.address] = std::string(s.name);
  return names;
}

TEST(CraftedPlt, WellFormed) {
  CraftedPlt image;
  auto elf = image.Build();
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(Names(*elf), (std::map<uint64_t, std::string>{{0x1000, ".plt"}, {0x1010, "puts@plt"}}));
  const ElfSymbol* s = elf->plt_symbols().Find(0x101f);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "puts@plt");
  EXPECT_EQ(s->size, 16u);
  EXPECT_EQ(elf->plt_symbols().Find(0x1020), nullptr);
}

TEST(CraftedPlt, NoEntrySizeMeansSixteen) {
  CraftedPlt image;
  image.plt_entsize = 0;
  auto elf = image.Build();
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(Names(*elf).at(0x1010), "puts@plt");
}

TEST(CraftedPlt, RelocationSymbolOutOfRangeGivesNoName) {
  CraftedPlt image;
  image.sym_index = 99;
  auto elf = image.Build();
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(Names(*elf), (std::map<uint64_t, std::string>{{0x1000, ".plt"}}));
}

TEST(CraftedPlt, NameOutsideTheStringTableGivesNoName) {
  CraftedPlt image;
  image.dynsym = SymtabWriter();
  image.dynsym.AddRaw(5000, 0, 0, STT_FUNC, STB_GLOBAL, SHN_UNDEF);
  auto elf = image.Build();
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(Names(*elf), (std::map<uint64_t, std::string>{{0x1000, ".plt"}}));
}

TEST(CraftedPlt, TruncatedSectionsGiveNoName) {
  {
    CraftedPlt image;
    image.plt_size_override = 1 << 20;  // past the end of the file
    auto elf = image.Build();
    ASSERT_NE(elf, nullptr);
    EXPECT_TRUE(elf->plt_symbols().empty());
  }
  {
    CraftedPlt image;
    image.rela_size_override = 1 << 20;
    auto elf = image.Build();
    ASSERT_NE(elf, nullptr);
    EXPECT_EQ(Names(*elf), (std::map<uint64_t, std::string>{{0x1000, ".plt"}}));
  }
  {
    CraftedPlt image;
    image.plt.resize(16 + 8);  // the stub cut in half
    auto elf = image.Build();
    ASSERT_NE(elf, nullptr);
    EXPECT_EQ(Names(*elf), (std::map<uint64_t, std::string>{{0x1000, ".plt"}}));
  }
  {
    CraftedPlt image;
    image.rela_entsize = 8;  // smaller than a relocation
    auto elf = image.Build();
    ASSERT_NE(elf, nullptr);
    EXPECT_EQ(Names(*elf), (std::map<uint64_t, std::string>{{0x1000, ".plt"}}));
  }
}

// AArch64: PLT0 (32 bytes from `stp x16, x30, [sp, #-16]!`) at 0x10000, then one stub
// loading GOT slot 0x30010: adrp x16, 0x30000; ldr x17, [x16, #0x10]; add; br x17.
void MakeAarch64(CraftedPlt* image) {
  image->builder.machine = EM_AARCH64;
  image->plt_addr = 0x10000;
  image->slot = 0x30010;
  image->reloc_type = R_AARCH64_JUMP_SLOT;
  image->plt_entsize = 0;
  image->plt.clear();
  for (uint32_t insn : {0xa9bf7bf0u, 0x90000110u, 0xf9400211u, 0x91000210u, 0xd61f0220u,
                        0xd503201fu, 0xd503201fu, 0xd503201fu,  // PLT0
                        0x90000110u, 0xf9400a11u, 0x91004210u, 0xd61f0220u}) {
    Append32(image->plt, insn);
  }
}

TEST(CraftedPlt, Aarch64) {
  CraftedPlt image;
  MakeAarch64(&image);
  auto elf = image.Build();
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(Names(*elf),
            (std::map<uint64_t, std::string>{{0x10000, ".plt"}, {0x10020, "puts@plt"}}));
  const ElfSymbol* s = elf->plt_symbols().Find(0x1002f);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "puts@plt");
  EXPECT_EQ(s->size, 16u);
  EXPECT_EQ(elf->plt_symbols().Find(0x10030), nullptr);
}

TEST(CraftedPlt, Aarch64BrokenStubsGiveNoName) {
  {
    CraftedPlt image;
    MakeAarch64(&image);
    image.plt.resize(32 + 4);  // the stub cut after its adrp
    auto elf = image.Build();
    ASSERT_NE(elf, nullptr);
    EXPECT_EQ(Names(*elf), (std::map<uint64_t, std::string>{{0x10000, ".plt"}}));
  }
  {
    CraftedPlt image;
    MakeAarch64(&image);
    image.reloc_type = R_X86_64_JUMP_SLOT;  // another machine's type: no function relocation
    auto elf = image.Build();
    ASSERT_NE(elf, nullptr);
    EXPECT_EQ(Names(*elf), (std::map<uint64_t, std::string>{{0x10000, ".plt"}}));
  }
  {
    CraftedPlt image;
    MakeAarch64(&image);
    image.plt.resize(16);  // shorter than PLT0
    auto elf = image.Build();
    ASSERT_NE(elf, nullptr);
    EXPECT_TRUE(elf->plt_symbols().empty());
  }
}

TEST(CraftedPlt, OtherMachinesHaveNone) {
  CraftedPlt image;
  image.builder.machine = EM_RISCV;
  auto elf = image.Build();
  ASSERT_NE(elf, nullptr);
  EXPECT_TRUE(elf->plt_symbols().empty());
}

}  // namespace
}  // namespace stacksym
