// Go pclntabs written byte by byte, one per header the reader knows: Go 1.2 (0xfffffffb),
// 1.16 (0xfffffffa), 1.18 (0xfffffff0) and 1.20 (0xfffffff1). Debian's Go 1.19 makes only the
// 1.18 layout (go_symbolize_test.cc reads real binaries); the others exist only here. Each
// table holds two functions with file:line tables, and (1.16 on) an inline tree with one call
// inlined into the first function. Then every truncation and many byte flips of each table:
// fewer answers, never a read outside it.
#include "elf/go_pclntab.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace stacksym::elf {
namespace {

constexpr uint64_t kTableVaddr = 0x10000;
constexpr uint64_t kTreeVaddr = 0x20000;    // the inline tree (1.18+: go:func.*, gofunc)
constexpr uint64_t kModuleVaddr = 0x30000;  // the moduledata (1.18+), writable
constexpr uint64_t kTextStart = 0x1000;
constexpr const char* kFile = "/src/a.go";

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
const std::initializer_list<uint8_t> kFileTable12 = {4, 0x80, 0x02, 0};  // file 1
const std::initializer_list<uint8_t> kFileTable = {2, 0x80, 0x02, 0};    // file 0 (cutab)
const std::initializer_list<uint8_t> kLinesA = {22, 0x10, 4, 0xf0, 0x01, 0};
const std::initializer_list<uint8_t> kLinesB = {42, 0x80, 0x02, 0};
const std::initializer_list<uint8_t> kInlineIndex = {0, 0x20, 2, 0x10, 1, 0xd0, 0x01, 0};

struct Crafted {
  std::vector<uint8_t> table;
  std::vector<uint8_t> tree;    // at kTreeVaddr
  std::vector<uint8_t> module;  // at kModuleVaddr
  std::unique_ptr<GoPclntab> Parse() const {
    std::vector<GoSegment> image = {
        {kTableVaddr, table, false}, {kTreeVaddr, tree, false}, {kModuleVaddr, module, true}};
    auto parsed = GoPclntab::Parse(table, kTableVaddr, image);
    return parsed ? std::move(*parsed) : nullptr;
  }
};

// Go 1.2–1.15: one table, offsets from its start, pointer-sized entries.
Crafted Build12() {
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
  size_t lines_a = put_table(kLinesA);
  size_t lines_b = put_table(kLinesB);
  auto put_func = [&](uint64_t entry, size_t name, size_t lines) {
    while (t.size() % 8 != 0) t.Put(0, 1);
    size_t at = t.size();
    t.Put(entry, 8);
    t.Put(name, 4);
    t.Put(0, 4 * 3);  // args, frame, pcsp
    t.Put(pcfile, 4);
    t.Put(lines, 4);
    t.Put(0, 4 * 2);  // npcdata, nfuncdata
    return at;
  };
  size_t func_a = put_func(0x1000, name_a, lines_a);
  size_t func_b = put_func(0x1100, name_b, lines_b);
  t.Set(functab, 0x1000, 8);
  t.Set(functab + 8, func_a, 8);
  t.Set(functab + 16, 0x1100, 8);
  t.Set(functab + 24, func_b, 8);
  t.Set(functab + 32, 0x1200, 8);
  t.Set(functab + 40, filetab, 4);
  return Crafted{t.v, {}, {}};
}

// Go 1.16 on: a header of sub-table offsets; 1.18 on, entries are uint32 offsets from the text
// start and funcdata uint32 offsets from the moduledata's gofunc.
Crafted BuildModern(uint32_t magic) {
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
  return Crafted{t.v, tree.v, module.v};
}

struct Version {
  const char* name;
  Crafted (*build)();
  GoPclntabVersion version;
  bool inlines;
};

const Version kVersions[] = {
    {"1.2", Build12, GoPclntabVersion::k1_2, false},
    {"1.16", [] { return BuildModern(0xfffffffa); }, GoPclntabVersion::k1_16, true},
    {"1.18", [] { return BuildModern(0xfffffff0); }, GoPclntabVersion::k1_18, true},
    {"1.20", [] { return BuildModern(0xfffffff1); }, GoPclntabVersion::k1_20, true},
};

class CraftedPclntab : public ::testing::TestWithParam<Version> {};

TEST_P(CraftedPclntab, NamesFilesLinesAndInlines) {
  Crafted crafted = GetParam().build();
  std::unique_ptr<GoPclntab> table = crafted.Parse();
  ASSERT_TRUE(table);
  EXPECT_EQ(table->version(), GetParam().version);
  EXPECT_EQ(table->function_count(), 2u);
  std::vector<GoFrame> frames;
  GoFunction function;

  ASSERT_TRUE(table->Lookup(0x1004, true, &frames, &function));
  EXPECT_EQ(function.name, "main.a");
  EXPECT_EQ(function.entry, 0x1000u);
  EXPECT_EQ(function.end, 0x1100u);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].file, kFile);
  EXPECT_EQ(frames[0].line, 10u);
  EXPECT_FALSE(frames[0].inlined);

  ASSERT_TRUE(table->Lookup(0x1050, true, &frames, &function));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].line, 12u);

  // Inside the inlined call: main.inl at the pc's line, main.a at its call site's.
  ASSERT_TRUE(table->Lookup(0x1024, true, &frames, &function));
  if (GetParam().inlines) {
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].function, "main.inl");
    EXPECT_TRUE(frames[0].inlined);
    EXPECT_EQ(frames[0].line, 12u);
    EXPECT_EQ(frames[1].function, "main.a");
    EXPECT_FALSE(frames[1].inlined);
    EXPECT_EQ(frames[1].line, 10u);
    EXPECT_EQ(frames[1].file, kFile);
  } else {
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].line, 12u);
  }
  // Without inlines: the function alone.
  ASSERT_TRUE(table->Lookup(0x1024, false, &frames, &function));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "main.a");

  ASSERT_TRUE(table->Lookup(0x11ff, true, &frames, &function));
  EXPECT_EQ(function.name, "main.b");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].line, 20u);
  EXPECT_EQ(frames[0].file, kFile);

  // Outside the table's functions.
  EXPECT_FALSE(table->Lookup(0xfff, true, &frames, &function));
  EXPECT_FALSE(table->Lookup(0x1200, true, &frames, &function));
}

// Every prefix of the table, and random byte flips: parsed or refused, lookups answer or not,
// nothing read outside the bytes (run under the sanitizer build, and by fuzz_gopclntab).
TEST_P(CraftedPclntab, DamagedTablesNeverReadOutside) {
  const Crafted whole = GetParam().build();
  std::vector<GoFrame> frames;
  GoFunction function;
  for (size_t size = 0; size < whole.table.size(); ++size) {
    Crafted cut = whole;
    cut.table.resize(size);
    if (std::unique_ptr<GoPclntab> table = cut.Parse()) {
      for (uint64_t pc : {0x1000, 0x1024, 0x1150}) table->Lookup(pc, true, &frames, &function);
    }
  }
  std::mt19937 random(GetParam().version == GoPclntabVersion::k1_2 ? 1 : 2);
  for (int round = 0; round < 2000; ++round) {
    Crafted flipped = whole;
    std::vector<uint8_t>& bytes = round % 3 == 0 && !flipped.tree.empty()     ? flipped.tree
                                  : round % 3 == 1 && !flipped.module.empty() ? flipped.module
                                                                              : flipped.table;
    for (int k = 0; k < 3; ++k) bytes[random() % bytes.size()] ^= 1u << (random() % 8);
    if (std::unique_ptr<GoPclntab> table = flipped.Parse()) {
      for (uint64_t pc : {0x1000, 0x1024, 0x1150}) table->Lookup(pc, true, &frames, &function);
      for (size_t i = 0; i < table->function_count() && i < 4; ++i) table->FunctionAt(i);
    }
  }
}

// One Lookup's whole answer, as text ("-": none).
std::string AnswerAt(const GoPclntab& table, uint64_t pc, GoPclntab::LookupMemo* memo) {
  std::vector<GoFrame> frames;
  GoFunction function;
  if (!table.Lookup(pc, true, &frames, &function, memo)) return "-";
  std::string out = std::to_string(function.entry) + "-" + std::to_string(function.end) + " " +
                    std::string(function.name);
  for (const GoFrame& f : frames) {
    out += " | " + std::string(f.function) + " " + std::string(f.file) + ":" +
           std::to_string(f.line) + (f.inlined ? " inlined" : "");
  }
  return out;
}

// What a symbol index relies on (src/index/): every pc answers as the start of the piece of
// LookupBounds() holding it, asked in ascending order through a LookupMemo as the index build
// asks — on the table, and on damaged ones (whose entries need not ascend).
void ExpectPiecesAnswerAlike(const GoPclntab& table, const std::string& what) {
  const std::vector<uint64_t> bounds = table.LookupBounds();
  ASSERT_TRUE(std::is_sorted(bounds.begin(), bounds.end())) << what;
  ASSERT_EQ(std::adjacent_find(bounds.begin(), bounds.end()), bounds.end()) << what;
  GoPclntab::LookupMemo memo;
  for (uint64_t pc = 0xf00; pc < 0x1300; ++pc) {
    auto after = std::upper_bound(bounds.begin(), bounds.end(), pc);
    const uint64_t start = after == bounds.begin() ? 0 : *(after - 1);
    const std::string expected = AnswerAt(table, start, nullptr);
    ASSERT_EQ(AnswerAt(table, pc, nullptr), expected) << what << " at 0x" << std::hex << pc;
    ASSERT_EQ(AnswerAt(table, pc, &memo), expected) << what << " at 0x" << std::hex << pc;
  }
}

TEST_P(CraftedPclntab, EveryPcAnswersAsItsPieceOfLookupBounds) {
  const Crafted whole = GetParam().build();
  std::unique_ptr<GoPclntab> table = whole.Parse();
  ASSERT_TRUE(table);
  // The entries and the end, a line change, and the inline run where there is a tree.
  EXPECT_GE(table->LookupBounds().size(), GetParam().inlines ? 5u : 4u);
  ExpectPiecesAnswerAlike(*table, "the table");
  std::mt19937 random(GetParam().version == GoPclntabVersion::k1_2 ? 3 : 4);
  for (int round = 0; round < 200; ++round) {
    Crafted flipped = whole;
    std::vector<uint8_t>& bytes =
        round % 3 == 0 && !flipped.tree.empty() ? flipped.tree : flipped.table;
    for (int k = 0; k < 2; ++k) bytes[random() % bytes.size()] ^= 1u << (random() % 8);
    if (std::unique_ptr<GoPclntab> damaged = flipped.Parse()) {
      ExpectPiecesAnswerAlike(*damaged, "round " + std::to_string(round));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Headers, CraftedPclntab, ::testing::ValuesIn(kVersions),
                         [](const ::testing::TestParamInfo<Version>& info) {
                           std::string name = std::string("go") + info.param.name;
                           for (char& c : name) c = c == '.' ? '_' : c;
                           return name;
                         });

TEST(CraftedPclntab, UnknownMagicAndBadHeaderFieldsAreRefused) {
  Crafted crafted = BuildModern(0xfffffff1);
  crafted.table[0] = 0xf5;
  EXPECT_FALSE(crafted.Parse());
  crafted = BuildModern(0xfffffff1);
  crafted.table[7] = 5;  // pointer size
  EXPECT_FALSE(crafted.Parse());
  crafted = BuildModern(0xfffffff1);
  crafted.table[6] = 3;  // pc quantum
  EXPECT_FALSE(crafted.Parse());
}

}  // namespace
}  // namespace stacksym::elf
