// Well-formed ELF files written byte by byte: ELF32, extended numbering, SHN_XINDEX
// symbols, alias tie-breaks, 8-byte note alignment, debug links, and compressed sections made
// with zlib and zstd directly.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <functional>
#include <random>
#include <tuple>

#include "elf_builder.h"
#include "stacksym/elf.h"

namespace stacksym {
namespace {

using testing::Append32;
using testing::AppendChars;
using testing::BuilderSection;
using testing::BuilderSegment;
using testing::ElfBuilder;
using testing::MakeNote;
using testing::SymtabWriter;

std::shared_ptr<ElfFile> Parse(const std::vector<uint8_t>& bytes) {
  auto elf = ElfFile::FromBytes(bytes, "crafted");
  EXPECT_TRUE(elf.ok()) << elf.error().ToString();
  return elf.ok() ? *elf : nullptr;
}

std::vector<uint8_t> ToVector(std::span<const uint8_t> s) { return {s.begin(), s.end()}; }

std::vector<uint8_t> Id(size_t n, uint8_t start = 0xa0) {
  std::vector<uint8_t> id(n);
  for (size_t i = 0; i < n; ++i) id[i] = static_cast<uint8_t>(start + i);
  return id;
}

std::vector<uint8_t> BuildIdFromFd(const std::vector<uint8_t>& bytes) {
  std::string path = testing::WriteTempFile(bytes, "fd");
  int fd = open(path.c_str(), O_RDONLY);
  auto id = ReadBuildIdFromFd(fd);
  close(fd);
  std::remove(path.c_str());
  EXPECT_TRUE(id.ok()) << id.error().ToString();
  return id.ok() ? *id : std::vector<uint8_t>{0xde, 0xad};
}

// A small executable image: .text at 0x1000 with a symbol table, a build-ID note, PT_LOAD and
// PT_NOTE.
struct SmallImage {
  ElfBuilder builder;
  uint32_t text = 0;
  std::vector<uint8_t> build_id = Id(20);
  explicit SmallImage(bool is_64bit) : builder(is_64bit) {
    text = builder.AddSection({.name = ".text",
                               .flags = SHF_ALLOC | SHF_EXECINSTR,
                               .addr = 0x1000,
                               .data = std::vector<uint8_t>(0x100, 0x90),
                               .addralign = 16});
    SymtabWriter syms(is_64bit);
    syms.Add("first", 0x1000, 0x20, STT_FUNC, STB_GLOBAL, static_cast<uint16_t>(text));
    syms.Add("second", 0x1020, 0x30, STT_FUNC, STB_LOCAL, static_cast<uint16_t>(text));
    syms.Add("tail_sizeless", 0x10f0, 0, STT_FUNC, STB_GLOBAL, static_cast<uint16_t>(text));
    syms.Add("not_a_function", 0x1060, 4, STT_NOTYPE, STB_GLOBAL, static_cast<uint16_t>(text));
    syms.Add("undefined", 0, 0, STT_FUNC, STB_GLOBAL, SHN_UNDEF);
    uint32_t strtab = text + 2;  // added right after .symtab
    builder.AddSection({.name = ".symtab",
                        .type = SHT_SYMTAB,
                        .data = syms.symbols(),
                        .link = strtab,
                        .addralign = 8,
                        .entsize = syms.entry_size()});
    builder.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = syms.strings()});
    uint32_t note = builder.AddSection({.name = ".note.gnu.build-id",
                                        .type = SHT_NOTE,
                                        .flags = SHF_ALLOC,
                                        .data = MakeNote("GNU", NT_GNU_BUILD_ID, build_id),
                                        .addralign = 4});
    builder.AddSegment({.type = PT_LOAD,
                        .flags = PF_R | PF_X,
                        .section = static_cast<int>(text),
                        .vaddr = 0x1000,
                        .align = 0x1000});
    builder.AddSegment({.type = PT_NOTE, .section = static_cast<int>(note), .align = 4});
  }
};

void CheckSmallImage(const std::vector<uint8_t>& bytes, bool is_64bit) {
  auto elf = Parse(bytes);
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->is_64bit(), is_64bit);
  EXPECT_EQ(ToVector(elf->build_id()), Id(20));
  EXPECT_EQ(BuildIdFromFd(bytes), Id(20));
  ASSERT_EQ(elf->sections().size(), 6u);
  EXPECT_EQ(elf->sections()[1].name, ".text");
  EXPECT_EQ(elf->sections()[5].name, ".shstrtab");
  ASSERT_EQ(elf->segments().size(), 2u);

  const SymbolTable& table = elf->symbols();
  EXPECT_TRUE(table.problems().empty());
  // Undefined symbols are left out; an untyped one (assembly without .type) is kept, as
  // llvm-symbolizer and eu-addr2line use it.
  ASSERT_EQ(table.symbols().size(), 4u);
  ASSERT_NE(table.Find(0x1063), nullptr);
  EXPECT_EQ(table.Find(0x1063)->name, "not_a_function");
  EXPECT_EQ(table.Find(0x1064), nullptr);
  EXPECT_EQ(table.Find(0x1000)->name, "first");
  EXPECT_EQ(table.Find(0x101f)->name, "first");
  EXPECT_EQ(table.Find(0x1020)->name, "second");
  EXPECT_EQ(table.Find(0x1050), nullptr);  // between second's end and the next symbol
  EXPECT_EQ(table.Find(0x0fff), nullptr);
  const ElfSymbol* tail = table.Find(0x10ff);
  ASSERT_NE(tail, nullptr);
  EXPECT_EQ(tail->name, "tail_sizeless");
  EXPECT_EQ(tail->size, 0x10u);  // clamped to the end of .text
  EXPECT_EQ(table.Find(0x1100), nullptr);

  uint64_t text_offset = elf->sections()[1].offset;
  EXPECT_EQ(elf->VaddrToFileOffset(0x1010), text_offset + 0x10);
  EXPECT_EQ(elf->FileOffsetToVaddr(text_offset + 0x10), 0x1010u);
  EXPECT_EQ(elf->VaddrToFileOffset(0x1100), std::nullopt);
}

TEST(CraftedElfTest, Elf64SmallImage) {
  SmallImage image(true);
  CheckSmallImage(image.builder.Build(), true);
}

TEST(CraftedElfTest, Elf32SmallImage) {
  SmallImage image(false);
  CheckSmallImage(image.builder.Build(), false);
}

TEST(CraftedElfTest, ExtendedNumberingInSectionZero) {
  for (bool is_64bit : {true, false}) {
    SmallImage image(is_64bit);
    image.builder.extended_numbering = true;
    std::vector<uint8_t> bytes = image.builder.Build();
    auto elf = Parse(bytes);
    ASSERT_NE(elf, nullptr);
    EXPECT_EQ(elf->sections().size(), 6u);
    EXPECT_EQ(elf->sections()[5].name, ".shstrtab");
    EXPECT_EQ(elf->segments().size(), 2u);
    EXPECT_EQ(elf->symbols().symbols().size(), 4u);
    EXPECT_EQ(BuildIdFromFd(bytes), Id(20));
  }
}

TEST(CraftedElfTest, ManySectionsWithXindexSymbols) {
  // 70000 sections: past SHN_LORESERVE, so the count, the name-table index and the symbol's
  // section index all need their extended forms.
  ElfBuilder b;
  b.extended_numbering = true;
  for (int i = 0; i < 70000; ++i) b.AddSection({.name = "s", .type = SHT_PROGBITS});
  uint32_t text = b.AddSection({.name = ".text",
                                .flags = SHF_ALLOC | SHF_EXECINSTR,
                                .addr = 0x5000,
                                .data = std::vector<uint8_t>(64)});
  SymtabWriter syms;
  syms.Add("far_function", 0x5000, 16, STT_FUNC, STB_GLOBAL, SHN_XINDEX);
  syms.Add("far_sizeless", 0x5010, 0, STT_FUNC, STB_GLOBAL, SHN_XINDEX);
  uint32_t symtab = text + 1;
  b.AddSection({.name = ".symtab",
                .type = SHT_SYMTAB,
                .data = syms.symbols(),
                .link = symtab + 1,
                .entsize = syms.entry_size()});
  b.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = syms.strings()});
  std::vector<uint8_t> shndx;
  Append32(shndx, 0);
  Append32(shndx, text);
  Append32(shndx, text);
  b.AddSection({.name = ".symtab_shndx",
                .type = SHT_SYMTAB_SHNDX,
                .data = shndx,
                .link = symtab,
                .entsize = 4});
  auto elf = Parse(b.Build());
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->sections().size(), 70000u + 6);
  EXPECT_EQ(elf->sections().back().name, ".shstrtab");
  const ElfSymbol* s = elf->symbols().Find(0x5008);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "far_function");
  EXPECT_EQ(s->section, text);
  const ElfSymbol* tail = elf->symbols().Find(0x503f);
  ASSERT_NE(tail, nullptr);
  EXPECT_EQ(tail->name, "far_sizeless");
  EXPECT_EQ(tail->size, 0x30u);  // to the end of .text, found through the xindex table
}

// One symbol table with the given symbols in a 0x100-byte .text at 0x1000.
std::shared_ptr<ElfFile> WithSymbols(const std::function<void(SymtabWriter&, uint16_t)>& add) {
  ElfBuilder b;
  uint32_t text = b.AddSection({.name = ".text",
                                .flags = SHF_ALLOC | SHF_EXECINSTR,
                                .addr = 0x1000,
                                .data = std::vector<uint8_t>(0x100)});
  SymtabWriter syms;
  add(syms, static_cast<uint16_t>(text));
  b.AddSection({.name = ".symtab",
                .type = SHT_SYMTAB,
                .data = syms.symbols(),
                .link = text + 2,
                .entsize = syms.entry_size()});
  b.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = syms.strings()});
  return Parse(b.Build());
}

TEST(CraftedElfTest, AliasPreferenceGlobalWeakLocalThenName) {
  // Insertion order must not matter; several permutations give the same answer.
  auto pick = [](std::vector<std::tuple<std::string, uint8_t, uint64_t, uint8_t>> aliases) {
    auto elf = WithSymbols([&](SymtabWriter& w, uint16_t text) {
      for (auto& [name, bind, size, type] : aliases) w.Add(name, 0x1010, size, type, bind, text);
    });
    const ElfSymbol* s = elf->symbols().Find(0x1010);
    EXPECT_EQ(elf->symbols().symbols().size(), 1u);
    return s ? std::string(s->name) : std::string("<none>");
  };
  EXPECT_EQ(pick({{"l", STB_LOCAL, 8, STT_FUNC},
                  {"w", STB_WEAK, 8, STT_FUNC},
                  {"g", STB_GLOBAL, 8, STT_FUNC}}),
            "g");
  EXPECT_EQ(pick({{"g", STB_GLOBAL, 8, STT_FUNC},
                  {"w", STB_WEAK, 8, STT_FUNC},
                  {"l", STB_LOCAL, 8, STT_FUNC}}),
            "g");
  EXPECT_EQ(pick({{"l", STB_LOCAL, 8, STT_FUNC}, {"w", STB_WEAK, 8, STT_FUNC}}), "w");
  EXPECT_EQ(pick({{"zeta", STB_GLOBAL, 8, STT_FUNC}, {"alpha", STB_GLOBAL, 8, STT_FUNC}}), "alpha");
  EXPECT_EQ(pick({{"alpha", STB_GLOBAL, 8, STT_FUNC}, {"zeta", STB_GLOBAL, 8, STT_FUNC}}), "alpha");
  // Functions before objects, sized before sizeless (same binding).
  EXPECT_EQ(pick({{"a_object", STB_GLOBAL, 8, STT_OBJECT}, {"b_func", STB_GLOBAL, 8, STT_FUNC}}),
            "b_func");
  EXPECT_EQ(pick({{"a_sizeless", STB_GLOBAL, 0, STT_FUNC}, {"b_sized", STB_GLOBAL, 8, STT_FUNC}}),
            "b_sized");
}

TEST(CraftedElfTest, SizelessWinnerTakesAliasSize) {
  auto elf = WithSymbols([](SymtabWriter& w, uint16_t text) {
    w.Add("global_sizeless", 0x1010, 0, STT_FUNC, STB_GLOBAL, text);
    w.Add("local_sized", 0x1010, 0x20, STT_FUNC, STB_LOCAL, text);
    w.Add("later", 0x1080, 4, STT_FUNC, STB_GLOBAL, text);
  });
  const ElfSymbol* s = elf->symbols().Find(0x102f);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "global_sizeless");
  EXPECT_EQ(s->size, 0x20u);
  EXPECT_FALSE(s->sizeless);
  EXPECT_EQ(elf->symbols().Find(0x1030), nullptr);
}

TEST(CraftedElfTest, NestedAndOverlappingRanges) {
  auto elf = WithSymbols([](SymtabWriter& w, uint16_t text) {
    w.Add("outer", 0x1000, 0x100, STT_FUNC, STB_GLOBAL, text);
    w.Add("mid", 0x1010, 0x40, STT_FUNC, STB_GLOBAL, text);
    w.Add("inner", 0x1020, 0x8, STT_FUNC, STB_GLOBAL, text);
    w.Add("overlap", 0x1040, 0x30, STT_FUNC, STB_GLOBAL, text);  // starts in mid, ends after
  });
  const SymbolTable& t = elf->symbols();
  auto name = [&](uint64_t a) {
    const ElfSymbol* s = t.Find(a);
    return s ? std::string(s->name) : std::string("<none>");
  };
  EXPECT_EQ(name(0x1000), "outer");
  EXPECT_EQ(name(0x1010), "mid");
  EXPECT_EQ(name(0x1024), "inner");
  EXPECT_EQ(name(0x1028), "mid");
  EXPECT_EQ(name(0x1045), "overlap");  // both mid and overlap cover it: the later start wins
  EXPECT_EQ(name(0x1060), "overlap");
  EXPECT_EQ(name(0x1070), "outer");
  EXPECT_EQ(name(0x10ff), "outer");
  EXPECT_EQ(name(0x1100), "<none>");
}

// Random tables of nested, overlapping, adjacent and sizeless symbols: Find must return
// exactly the covering entry with the highest start, for every address.
TEST(CraftedElfTest, FindMatchesBruteForceOnRandomTables) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 40; ++round) {
    auto elf = WithSymbols([&](SymtabWriter& w, uint16_t text) {
      int n = 1 + static_cast<int>(rng() % 60);
      for (int k = 0; k < n; ++k) {
        uint64_t start = 0x1000 + rng() % 0x100;
        uint64_t size = rng() % 4 == 0 ? 0 : 1 + rng() % (rng() % 2 ? 8 : 0x80);
        w.Add("s" + std::to_string(k), start, size, STT_FUNC, static_cast<uint8_t>(rng() % 3),
              text);
      }
    });
    ASSERT_NE(elf, nullptr);
    const SymbolTable& t = elf->symbols();
    SymbolTable::AscendingFinder every_address(t), every_third(t);
    for (uint64_t addr = 0xff0; addr < 0x1200; ++addr) {
      const ElfSymbol* best = nullptr;
      for (const ElfSymbol& s : t.symbols()) {
        if (s.address <= addr && addr - s.address < s.size) best = &s;  // sorted: last wins
      }
      ASSERT_EQ(t.Find(addr), best) << "round " << round << " addr " << std::hex << addr;
      ASSERT_EQ(every_address.Find(addr), best)
          << "round " << round << " addr " << std::hex << addr;
      if (addr % 3 == 0) {
        ASSERT_EQ(every_third.Find(addr), best)
            << "round " << round << " addr " << std::hex << addr;
      }
    }
  }
}

// Thousands of ranges nested inside each other, each ending before the next query: Find
// answers from the resume points, not by walking the nesting.
TEST(CraftedElfTest, DeepNestingIsAnsweredExactly) {
  const int depth = 3000;
  ElfBuilder b;
  uint32_t text = b.AddSection({.name = ".text",
                                .flags = SHF_ALLOC | SHF_EXECINSTR,
                                .addr = 0x100000,
                                .data = std::vector<uint8_t>(4 * depth + 16)});
  SymtabWriter syms;
  // Range k: [base + k, base + 2*depth - k), so range k+1 sits inside range k.
  for (int k = 0; k < depth; ++k) {
    syms.Add("n" + std::to_string(k), 0x100000 + k, 2 * depth - 2 * k, STT_FUNC, STB_GLOBAL,
             static_cast<uint16_t>(text));
  }
  b.AddSection({.name = ".symtab",
                .type = SHT_SYMTAB,
                .data = syms.symbols(),
                .link = text + 2,
                .entsize = syms.entry_size()});
  b.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = syms.strings()});
  auto elf = Parse(b.Build());
  ASSERT_NE(elf, nullptr);
  const SymbolTable& t = elf->symbols();
  ASSERT_EQ(t.symbols().size(), static_cast<size_t>(depth));
  // Right of the middle, address base + 2*depth - k - 1 is the last byte of range k.
  SymbolTable::AscendingFinder ascending(t);
  for (int k = depth; k-- > 0;) {  // ascending addresses: the innermost range first
    const uint64_t addr = 0x100000 + 2 * depth - k - 1;
    const ElfSymbol* s = t.Find(addr);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->name, "n" + std::to_string(k));
    EXPECT_EQ(ascending.Find(addr), s);
  }
  EXPECT_EQ(t.Find(0x100000 + 2 * depth), nullptr);
}

TEST(CraftedElfTest, SizelessSymbolOutsideItsSectionClaimsNothing) {
  auto elf = WithSymbols([](SymtabWriter& w, uint16_t text) {
    w.Add("stray", 0x9000, 0, STT_FUNC, STB_GLOBAL, text);  // .text is 0x1000..0x1100
    w.Add("real", 0x1000, 4, STT_FUNC, STB_GLOBAL, text);
  });
  EXPECT_EQ(elf->symbols().Find(0x9000), nullptr);
  EXPECT_EQ(elf->symbols().Find(0x1002)->name, "real");
}

TEST(CraftedElfTest, NotesWithEightByteAlignment) {
  // A .note.gnu.property-style 8-aligned area: property note, then a 9-byte build ID whose
  // descriptor needs padding to 8.
  std::vector<uint8_t> area = MakeNote("GNU", NT_GNU_PROPERTY_TYPE_0, Id(12, 1), 8);
  std::vector<uint8_t> id = Id(9, 0x10);
  std::vector<uint8_t> id_note = MakeNote("GNU", NT_GNU_BUILD_ID, id, 8);
  area.insert(area.end(), id_note.begin(), id_note.end());
  ElfBuilder b;
  uint32_t note =
      b.AddSection({.name = ".note.gnu.property", .type = SHT_NOTE, .data = area, .addralign = 8});
  b.AddSegment({.type = PT_NOTE, .section = static_cast<int>(note), .align = 8});
  std::vector<uint8_t> bytes = b.Build();
  auto elf = Parse(bytes);
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(ToVector(elf->build_id()), id);
  EXPECT_EQ(BuildIdFromFd(bytes), id);
}

TEST(CraftedElfTest, BuildIdOfUnusualLengthAndOtherOwnersIgnored) {
  std::vector<uint8_t> area = MakeNote("NotGNU", NT_GNU_BUILD_ID, Id(20, 0));
  std::vector<uint8_t> real = MakeNote("GNU", NT_GNU_BUILD_ID, Id(3, 0x42));
  area.insert(area.end(), real.begin(), real.end());
  ElfBuilder b;
  b.AddSection({.name = ".notes", .type = SHT_NOTE, .data = area, .addralign = 4});
  auto elf = Parse(b.Build());
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->build_id_hex(), "424344");
}

TEST(CraftedElfTest, DebugLinksAreParsed) {
  std::vector<uint8_t> link;
  testing::AppendChars(link, "abcde.debug");  // 11 chars + NUL = 12: no padding needed
  link.push_back(0);
  Append32(link, 0x12345678);
  std::vector<uint8_t> padded;
  testing::AppendChars(padded, "x.dbg");  // 5 + NUL = 6: two bytes of padding
  padded.insert(padded.end(), {0, 0, 0});
  Append32(padded, 0xcafef00d);
  std::vector<uint8_t> alt;
  testing::AppendChars(alt, "/usr/lib/debug/.dwz/x.debug");
  alt.push_back(0);
  std::vector<uint8_t> alt_id = Id(20, 0x30);
  alt.insert(alt.end(), alt_id.begin(), alt_id.end());
  for (auto& [data, name, crc] :
       {std::tuple{link, "abcde.debug", 0x12345678u}, std::tuple{padded, "x.dbg", 0xcafef00du}}) {
    ElfBuilder b;
    b.AddSection({.name = ".gnu_debuglink", .data = data, .addralign = 4});
    b.AddSection({.name = ".gnu_debugaltlink", .data = alt});
    auto elf = Parse(b.Build());
    ASSERT_NE(elf, nullptr);
    ASSERT_TRUE(elf->debuglink().has_value());
    EXPECT_EQ(elf->debuglink()->name, name);
    EXPECT_EQ(elf->debuglink()->crc, crc);
    ASSERT_TRUE(elf->debugaltlink().has_value());
    EXPECT_EQ(elf->debugaltlink()->name, "/usr/lib/debug/.dwz/x.debug");
    EXPECT_EQ(elf->debugaltlink()->build_id, alt_id);
  }
}

TEST(CraftedElfTest, CorruptDebugLinkIsAProblemNotAFailure) {
  ElfBuilder b;
  b.AddSection({.name = ".gnu_debuglink", .data = {'a', 'b', 'c'}});  // no NUL, no CRC
  b.AddSection({.name = ".gnu_debugaltlink", .data = {'a', 0}});      // no build ID
  auto elf = Parse(b.Build());
  ASSERT_NE(elf, nullptr);
  EXPECT_FALSE(elf->debuglink().has_value());
  EXPECT_FALSE(elf->debugaltlink().has_value());
  ASSERT_EQ(elf->problems().size(), 2u);
  EXPECT_NE(elf->problems()[0].ToString().find(".gnu_debuglink"), std::string::npos);
  EXPECT_NE(elf->problems()[0].ToString().find("NUL"), std::string::npos);
  EXPECT_NE(elf->problems()[1].ToString().find("no build ID"), std::string::npos);
}

std::vector<uint8_t> Payload() {
  std::vector<uint8_t> p;
  for (int i = 0; i < 5000; ++i) p.push_back(static_cast<uint8_t>((i * 7) % 13 + 'a'));
  return p;
}

std::vector<uint8_t> ZlibCompress(const std::vector<uint8_t>& in) {
  uLongf n = compressBound(in.size());
  std::vector<uint8_t> out(n);
  EXPECT_EQ(compress2(out.data(), &n, in.data(), in.size(), 9), Z_OK);
  out.resize(n);
  return out;
}

std::vector<uint8_t> ZstdCompress(const std::vector<uint8_t>& in) {
  std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::vector<uint8_t> GabiSection(bool is_64bit, uint32_t type, uint64_t size,
                                 const std::vector<uint8_t>& stream) {
  std::vector<uint8_t> s;
  Append32(s, type);
  if (is_64bit) {
    Append32(s, 0);
    testing::Append64(s, size);
    testing::Append64(s, 1);
  } else {
    Append32(s, static_cast<uint32_t>(size));
    Append32(s, 1);
  }
  s.insert(s.end(), stream.begin(), stream.end());
  return s;
}

TEST(CraftedElfTest, CompressedSectionsBothClassesBothAlgorithms) {
  const std::vector<uint8_t> payload = Payload();
  for (bool is_64bit : {true, false}) {
    ElfBuilder b(is_64bit);
    b.AddSection(
        {.name = ".debug_info",
         .flags = SHF_COMPRESSED,
         .data = GabiSection(is_64bit, ELFCOMPRESS_ZLIB, payload.size(), ZlibCompress(payload)),
         .addralign = 8});
    b.AddSection({.name = ".debug_line",
                  .flags = SHF_COMPRESSED,
                  .data = GabiSection(is_64bit, 2 /* ELFCOMPRESS_ZSTD */, payload.size(),
                                      ZstdCompress(payload)),
                  .addralign = 8});
    std::vector<uint8_t> legacy{'Z', 'L', 'I', 'B', 0, 0, 0, 0, 0, 0};
    legacy.push_back(static_cast<uint8_t>(payload.size() >> 8));
    legacy.push_back(static_cast<uint8_t>(payload.size()));
    std::vector<uint8_t> z = ZlibCompress(payload);
    legacy.insert(legacy.end(), z.begin(), z.end());
    b.AddSection({.name = ".zdebug_str", .data = legacy});
    auto elf = Parse(b.Build());
    ASSERT_NE(elf, nullptr);
    for (const char* name : {".debug_info", ".debug_line", ".debug_str"}) {
      auto data = elf->SectionData(name);
      ASSERT_TRUE(data.ok()) << name << ": " << data.error().ToString();
      EXPECT_TRUE(std::equal(data->begin(), data->end(), payload.begin(), payload.end())) << name;
    }
  }
}

TEST(CraftedElfTest, NobitsAndMissingSectionsAreEmpty) {
  ElfBuilder b;
  b.AddSection(
      {.name = ".bss", .type = SHT_NOBITS, .addr = 0x4000, .size_override = uint64_t{1} << 40});
  auto elf = Parse(b.Build());
  ASSERT_NE(elf, nullptr);
  auto bss = elf->SectionData(".bss");
  ASSERT_TRUE(bss.ok());
  EXPECT_TRUE(bss->empty());
  auto missing = elf->SectionData(".debug_info");
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->empty());
  EXPECT_EQ(elf->FindSection(".nope"), nullptr);
  ElfSection foreign;
  foreign.index = 999;
  EXPECT_FALSE(elf->SectionData(foreign).ok());
}

}  // namespace
}  // namespace stacksym
