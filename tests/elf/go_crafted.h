// go_crafted.h — Go pclntabs written byte by byte for tests (no Go but Debian's 1.19 is at
// hand): one per header the reader knows — Go 1.2 (0xfffffffb; with an inline tree in each
// layout of Go 1.9–1.15), 1.16, 1.18 and 1.20 — and an ELF file around a 1.2-magic one that
// names its release in .go.buildinfo or runtime.buildVersion. go_pclntab_test.cc tests the
// reader on them; index_go_test.cc the symbol index.
#pragma once

#include <elf.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "elf/go_pclntab.h"
#include "elf_builder.h"

namespace stacksym::elf::crafted {

inline constexpr uint64_t kTableVaddr = 0x10000;
inline constexpr uint64_t kTreeVaddr = 0x20000;    // the inline tree (1.18+: go:func.*, gofunc)
inline constexpr uint64_t kModuleVaddr = 0x30000;  // the moduledata (1.18+), writable
inline constexpr uint64_t kTextStart = 0x1000;
inline constexpr const char* kFile = "/src/a.go";

struct Bytes {
  std::vector<uint8_t> v;
  size_t size() const { return v.size(); }
  // Little-endian, n bytes; past the 8th they are zero (a shift by 64 is undefined).
  static uint8_t ByteOf(uint64_t value, size_t i) {
    return i < 8 ? static_cast<uint8_t>(value >> (8 * i)) : 0;
  }
  void Put(uint64_t value, size_t n) {
    for (size_t i = 0; i < n; ++i) v.push_back(ByteOf(value, i));
  }
  void Set(size_t at, uint64_t value, size_t n) {
    for (size_t i = 0; i < n; ++i) v[at + i] = ByteOf(value, i);
  }
  void Str(const std::string& s) {
    v.insert(v.end(), s.begin(), s.end());
    v.push_back(0);
  }
  void Raw(std::initializer_list<uint8_t> bytes) { v.insert(v.end(), bytes); }
};

// Pc-value tables: (zig-zag value delta, pc delta) varint pairs from value -1 at the entry.
// main.a (0x1000..0x1100): line 10 before 0x1010, 12 after; main.inl inlined at
// [0x1020, 0x1030), called from the instruction at entry+8. main.b (0x1100..0x1200): line 20.
inline const std::initializer_list<uint8_t> kFileTable12 = {4, 0x80, 0x02, 0};  // file 1
inline const std::initializer_list<uint8_t> kFileTable = {2, 0x80, 0x02, 0};    // file 0 (cutab)
inline const std::initializer_list<uint8_t> kLinesA = {22, 0x10, 4, 0xf0, 0x01, 0};
inline const std::initializer_list<uint8_t> kLinesB = {42, 0x80, 0x02, 0};
inline const std::initializer_list<uint8_t> kInlineIndex = {0, 0x20, 2, 0x10, 1, 0xd0, 0x01, 0};

// The 1.2-magic tables with an inline tree (Go 1.9–1.15) add a second level: main.deep inlined
// into main.inl at [0x1030, 0x1038) (line 33), called from main.inl's line 14 at entry+0x28.
// Lines of main.a: 10, 12 from 0x1010, 14 from 0x1028, 33 from 0x1030, 12 from 0x1038.
inline const std::initializer_list<uint8_t> kLinesDeep = {22, 0x10, 4,  0x18, 4,    0x08,
                                                          38, 0x08, 41, 0xc8, 0x01, 0};
// Node -1 before 0x1020, 0 (main.inl) to 0x1030, 1 (main.deep) to 0x1038, then -1.
inline const std::initializer_list<uint8_t> kInlineIndexDeep = {0,    0x20, 2,    0x10, 2,
                                                                0x08, 3,    0xc8, 0x01, 0};

struct Crafted {
  std::vector<uint8_t> table;
  std::vector<uint8_t> tree;    // at kTreeVaddr
  std::vector<uint8_t> module;  // at kModuleVaddr
  uint32_t go_minor = 0;        // the release the binary would name
  std::unique_ptr<GoPclntab> Parse() const { return ParseAs(go_minor); }
  std::unique_ptr<GoPclntab> ParseAs(uint32_t minor) const {
    std::vector<GoSegment> image = {
        {kTableVaddr, table, false}, {kTreeVaddr, tree, false}, {kModuleVaddr, module, true}};
    auto parsed = GoPclntab::Parse(table, kTableVaddr, image, minor);
    return parsed ? std::move(*parsed) : nullptr;
  }
};

// The inline tree of a 1.2-magic table, in the layout of Go 1.`go_minor`: node 0 main.inl
// (called from main.a's line 10 at entry+8), node 1 main.deep (from main.inl's line 14 at
// entry+0x28).
inline std::vector<uint8_t> Tree12(uint32_t go_minor, uint64_t inl_name, uint64_t deep_name) {
  Bytes tree;
  struct Node {
    int32_t parent;
    uint64_t name;
    uint32_t line;
    uint32_t parent_pc;
  };
  for (const Node& n : {Node{-1, inl_name, 10, 0x8}, Node{0, deep_name, 14, 0x28}}) {
    if (go_minor <= 11) {
      tree.Put(static_cast<uint32_t>(n.parent), 4);
      tree.Put(1, 4);  // file
      tree.Put(n.line, 4);
      tree.Put(n.name, 4);
    } else {
      tree.Put(static_cast<uint16_t>(n.parent), 2);
      tree.Put(0, 2);  // funcID, padding
      tree.Put(1, 4);  // file
      tree.Put(n.line, 4);
      tree.Put(n.name, 4);
      tree.Put(n.parent_pc, 4);
    }
  }
  return tree.v;
}

// Go 1.2–1.15: one table, offsets from its start, pointer-sized entries. go_minor 0: no inline
// tree; 9–15: main.a has one in that release's layout (the top of go_pclntab.h).
inline Crafted Build12(uint32_t go_minor = 0) {
  const bool inlines = go_minor >= 9;
  Bytes t;
  t.Put(0xfffffffb, 4);
  t.Raw({0, 0, 1, 8});
  t.Put(2, 8);  // nfunc
  const size_t functab = t.size();
  t.Put(0, 8 * 5 + 4);  // two (entry, func offset) pairs, the end pc, the filetab offset
  auto put_string = [&](const std::string& s) {
    size_t at = t.size();
    t.Str(s);
    return at;
  };
  size_t name_a = put_string("main.a");
  size_t name_b = put_string("main.b");
  size_t name_inl = put_string("main.inl");
  size_t name_deep = put_string("main.deep");
  size_t file = put_string(kFile);
  size_t filetab = t.size();
  t.Put(2, 4);  // file numbers start at 1
  t.Put(file, 4);
  auto put_table = [&](std::initializer_list<uint8_t> bytes) {
    size_t at = t.size();
    t.Raw(bytes);
    return at;
  };
  size_t pcfile = put_table(kFileTable12);
  size_t lines_a = put_table(inlines ? kLinesDeep : kLinesA);
  size_t lines_b = put_table(kLinesB);
  size_t inline_index = put_table(kInlineIndexDeep);
  // PCDATA_InlTreeIndex and FUNCDATA_InlTree: 1 and 2 up to Go 1.12, 2 and 4 in 1.13–1.15.
  const uint32_t pcdata_index = go_minor >= 13 ? 2 : 1;
  const uint32_t funcdata_index = go_minor >= 13 ? 4 : 2;
  auto put_func = [&](uint64_t entry, size_t name, size_t lines, bool tree) {
    while (t.size() % 8 != 0) t.Put(0, 1);
    size_t at = t.size();
    t.Put(entry, 8);
    t.Put(name, 4);
    t.Put(0, 4 * 3);  // args, frame (deferreturn from 1.12), pcsp
    t.Put(pcfile, 4);
    t.Put(lines, 4);
    t.Put(tree ? pcdata_index + 1 : 0, 4);  // npcdata
    const uint8_t nfuncdata = tree ? static_cast<uint8_t>(funcdata_index + 1) : 0;
    if (go_minor >= 12) {
      t.Raw({0, 0, 0, nfuncdata});  // funcID, unused, nfuncdata uint8
    } else {
      t.Put(nfuncdata, 4);  // nfuncdata int32
    }
    if (!tree) return at;
    for (uint32_t i = 0; i < pcdata_index; ++i) t.Put(0, 4);
    t.Put(inline_index, 4);
    while ((kTableVaddr + t.size()) % 8 != 0) t.Put(0, 1);  // funcdata are pointer-aligned
    for (uint32_t i = 0; i < funcdata_index; ++i) t.Put(0, 8);
    t.Put(kTreeVaddr, 8);
    return at;
  };
  size_t func_a = put_func(0x1000, name_a, lines_a, inlines);
  size_t func_b = put_func(0x1100, name_b, lines_b, false);
  t.Set(functab, 0x1000, 8);
  t.Set(functab + 8, func_a, 8);
  t.Set(functab + 16, 0x1100, 8);
  t.Set(functab + 24, func_b, 8);
  t.Set(functab + 32, 0x1200, 8);
  t.Set(functab + 40, filetab, 4);
  return Crafted{
      t.v, inlines ? Tree12(go_minor, name_inl, name_deep) : std::vector<uint8_t>{}, {}, go_minor};
}

// Go 1.16 on: a header of sub-table offsets; 1.18 on, entries are uint32 offsets from the text
// start and funcdata uint32 offsets from the moduledata's gofunc.
inline Crafted BuildModern(uint32_t magic) {
  const bool v118 = magic == 0xfffffff0 || magic == 0xfffffff1;
  const bool v120 = magic == 0xfffffff1;
  Bytes t;
  t.Put(magic, 4);
  t.Raw({0, 0, 1, 8});
  t.Put(2, 8);  // nfunc
  t.Put(1, 8);  // nfiles
  if (v118) t.Put(kTextStart, 8);
  const size_t offsets = t.size();  // funcname, cu, filetab, pctab, functab
  t.Put(0, 8 * 5);
  auto set_offset = [&](int which) { t.Set(offsets + 8 * which, t.size(), 8); };
  set_offset(0);
  const size_t funcnametab = t.size();
  t.Str("main.a");
  t.Str("main.b");
  t.Str("main.inl");
  set_offset(1);
  t.Put(0, 4);  // cutab: compilation unit 0's file 0 is at filetab offset 0
  set_offset(2);
  t.Str(kFile);
  set_offset(3);
  const size_t pctab = t.size();
  t.Put(0, 1);  // offset 0 means "no table"
  auto put_table = [&](std::initializer_list<uint8_t> bytes) {
    size_t at = t.size() - pctab;
    t.Raw(bytes);
    return at;
  };
  size_t pcfile = put_table(kFileTable);
  size_t lines_a = put_table(kLinesA);
  size_t lines_b = put_table(kLinesB);
  size_t inline_index = put_table(kInlineIndex);
  while (t.size() % 8 != 0) t.Put(0, 1);
  set_offset(4);
  const size_t functab = t.size();
  const size_t word = v118 ? 4 : 8;
  t.Put(0, word * 5);  // two pairs and the end pc
  auto put_func = [&](uint64_t entry, size_t name, size_t lines, bool inlines) {
    while (t.size() % 8 != 0) t.Put(0, 1);
    size_t at = t.size() - functab;
    t.Put(v118 ? entry - kTextStart : entry, v118 ? 4 : 8);
    t.Put(name, 4);
    t.Put(0, 4 * 3);  // args, deferreturn, pcsp
    t.Put(pcfile, 4);
    t.Put(lines, 4);
    t.Put(inlines ? 3 : 0, 4);                                // npcdata
    t.Put(0, 4);                                              // cuOffset
    if (v120) t.Put(0, 4);                                    // startLine
    t.Raw({0, 0, 0, static_cast<uint8_t>(inlines ? 4 : 0)});  // funcID, flag, pad, nfuncdata
    if (!inlines) return at;
    t.Put(0, 4);  // PCDATA_UnsafePoint
    t.Put(0, 4);  // PCDATA_StackMapIndex
    t.Put(inline_index, 4);
    if (v118) {
      for (int i = 0; i < 3; ++i) t.Put(0xffffffff, 4);  // no funcdata 0..2
      t.Put(0, 4);                                       // FUNCDATA_InlTree: gofunc + 0
    } else {
      while ((kTableVaddr + t.size()) % 8 != 0) t.Put(0, 1);
      t.Put(0, 8 * 3);
      t.Put(kTreeVaddr, 8);
    }
    return at;
  };
  size_t func_a = put_func(0x1000, 0, lines_a, true);
  size_t func_b = put_func(0x1100, 7, lines_b, false);
  auto set_entry = [&](int i, uint64_t entry, uint64_t func) {
    t.Set(functab + 2 * word * i, v118 ? entry - kTextStart : entry, word);
    t.Set(functab + 2 * word * i + word, func, word);
  };
  set_entry(0, 0x1000, func_a);
  set_entry(1, 0x1100, func_b);
  t.Set(functab + 4 * word, v118 ? 0x1200 - kTextStart : 0x1200, word);

  Bytes tree;  // node 0: main.inl, called from entry+8
  if (v120) {
    tree.Put(0, 4);   // funcID, padding
    tree.Put(14, 4);  // nameOff of main.inl
    tree.Put(8, 4);   // parentPc
    tree.Put(0, 4);   // startLine
  } else {
    tree.Put(0xffff, 2);  // parent: none
    tree.Put(0, 2);       // funcID, padding
    tree.Put(0, 4);       // file
    tree.Put(0, 4);       // line
    tree.Put(14, 4);      // func_
    tree.Put(8, 4);       // parentPc
  }
  Bytes module;
  if (v118) {
    const size_t gofunc_word = v120 ? 40 : 38;
    module.Put(0, 8 * (gofunc_word + 4));
    module.Set(0, kTableVaddr, 8);
    module.Set(8, kTableVaddr + funcnametab, 8);
    module.Set(8 * 22, kTextStart, 8);
    module.Set(8 * gofunc_word, kTreeVaddr, 8);
  }
  return Crafted{t.v, tree.v, module.v, 0};
}

// An ELF file around a crafted 1.2-magic table: .text, .gopclntab, the inline tree and, as
// `version` says, the release named in .go.buildinfo (up to Go 1.17: a pointer to the
// runtime.buildVersion string; from 1.18 on: inline) or by the runtime.buildVersion symbol.
enum class VersionIn { kNowhere, kBuildInfoPointer, kBuildInfoInline, kSymbol };

inline std::vector<uint8_t> GoElf(const Crafted& crafted, VersionIn where,
                                  const std::string& version) {
  using testing::BuilderSection;
  testing::ElfBuilder b;
  b.elf_type = ET_EXEC;
  auto loaded = [&](BuilderSection section, uint32_t flags) {
    const uint64_t vaddr = section.addr;
    section.flags |= SHF_ALLOC;
    uint32_t index = b.AddSection(std::move(section));
    b.AddSegment({.type = PT_LOAD,
                  .flags = flags,
                  .section = static_cast<int>(index),
                  .vaddr = vaddr,
                  .align = 8});
    return index;
  };
  loaded({.name = ".text",
          .flags = SHF_EXECINSTR,
          .addr = 0x1000,
          .data = std::vector<uint8_t>(0x200, 0xcc)},
         PF_R | PF_X);
  loaded({.name = ".gopclntab", .addr = kTableVaddr, .data = crafted.table}, PF_R);
  loaded({.name = ".rodata", .addr = kTreeVaddr, .data = crafted.tree}, PF_R);
  // The version string's header {data, length} at 0x50000, its bytes at 0x50010.
  constexpr uint64_t kDataVaddr = 0x50000;
  Bytes data;
  data.Put(kDataVaddr + 16, 8);
  data.Put(version.size(), 8);
  data.v.insert(data.v.end(), version.begin(), version.end());
  uint32_t data_index = loaded(
      {.name = ".data", .flags = SHF_WRITE, .addr = kDataVaddr, .data = data.v}, PF_R | PF_W);
  if (where == VersionIn::kBuildInfoPointer || where == VersionIn::kBuildInfoInline) {
    Bytes info;
    info.v.assign({0xff, ' ', 'G', 'o', ' ', 'b', 'u', 'i', 'l', 'd', 'i', 'n', 'f', ':'});
    info.Raw({8, where == VersionIn::kBuildInfoInline ? uint8_t{2} : uint8_t{0}});
    if (where == VersionIn::kBuildInfoPointer) {
      info.Put(kDataVaddr, 8);  // runtime.buildVersion
      info.Put(0, 8);           // runtime.modinfo
    } else {
      info.Put(0, 16);
      info.Put(version.size(), 1);  // a one-byte varint
      info.v.insert(info.v.end(), version.begin(), version.end());
    }
    loaded({.name = ".go.buildinfo", .flags = SHF_WRITE, .addr = 0x60000, .data = info.v},
           PF_R | PF_W);
  }
  if (where == VersionIn::kSymbol) {
    testing::SymtabWriter symbols;
    symbols.Add("runtime.buildVersion", kDataVaddr, 16, STT_OBJECT, STB_LOCAL,
                static_cast<uint16_t>(data_index));
    // .text, .gopclntab, .rodata and .data are sections 1 to 4: .symtab 5, .strtab 6.
    b.AddSection({.name = ".symtab",
                  .type = SHT_SYMTAB,
                  .data = symbols.symbols(),
                  .link = 6,
                  .addralign = 8,
                  .entsize = symbols.entry_size()});
    b.AddSection({.name = ".strtab", .type = SHT_STRTAB, .data = symbols.strings()});
  }
  return b.Build();
}

}  // namespace stacksym::elf::crafted
