// Go pclntabs written byte by byte, one per header the reader knows: Go 1.2 (0xfffffffb),
// 1.16 (0xfffffffa), 1.18 (0xfffffff0) and 1.20 (0xfffffff1). Debian's Go 1.19 makes only the
// 1.18 layout (go_symbolize_test.cc reads real binaries); the others exist only here. Each
// table holds two functions with file:line tables, and (1.16 on, and 1.2-magic tables of Go
// 1.9–1.15 in each of their three inline layouts) an inline tree with a call inlined into the
// first function — two levels deep in the 1.2-magic ones. Then every truncation and many byte
// flips of each table: fewer answers, never a read outside it; and for the 1.2-magic layouts,
// the release named wrongly or not at all (no inline frames), damaged trees (a clear stop),
// and ELF files that name the release in .go.buildinfo or runtime.buildVersion.
#include "elf/go_pclntab.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "go_crafted.h"
#include "stacksym/elf.h"

namespace stacksym::elf {
namespace {

using namespace crafted;  // NOLINT: the crafted tables are this file's subject

struct Version {
  const char* name;
  Crafted (*build)();
  GoPclntabVersion version;
  bool inlines;
};

const Version kVersions[] = {
    {"1.2", [] { return Build12(); }, GoPclntabVersion::k1_2, false},
    {"1.2_go1.9", [] { return Build12(9); }, GoPclntabVersion::k1_2, true},
    {"1.2_go1.12", [] { return Build12(12); }, GoPclntabVersion::k1_2, true},
    {"1.2_go1.13", [] { return Build12(13); }, GoPclntabVersion::k1_2, true},
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

// A pc's frames as "function file:line" joined by " | ", an inlined frame marked "(i)".
std::string Chain(const GoPclntab& table, uint64_t pc) {
  std::vector<GoFrame> frames;
  GoFunction function;
  if (!table.Lookup(pc, true, &frames, &function)) return "-";
  std::string out;
  for (const GoFrame& f : frames) {
    if (!out.empty()) out += " | ";
    out += std::string(f.function) + " " + std::string(f.file) + ":" + std::to_string(f.line) +
           (f.inlined ? "(i)" : "");
  }
  return out;
}

// The releases whose 1.2-magic tables carry inline trees, each in its layout: Go's chain,
// innermost first, each caller at its call site (Go 1.9–1.11: the node's file:line; 1.12 on:
// the line at the node's parentPc).
class Crafted12 : public ::testing::TestWithParam<uint32_t> {};

TEST_P(Crafted12, InlineChainsAsGoPrintsThem) {
  const Crafted crafted = Build12(GetParam());  // (the table reads its bytes)
  std::unique_ptr<GoPclntab> table = crafted.Parse();
  ASSERT_TRUE(table);
  EXPECT_EQ(table->go_minor(), GetParam());
  EXPECT_EQ(Chain(*table, 0x1034),
            "main.deep /src/a.go:33(i) | main.inl /src/a.go:14(i) | main.a /src/a.go:10");
  EXPECT_EQ(Chain(*table, 0x1037),
            "main.deep /src/a.go:33(i) | main.inl /src/a.go:14(i) | main.a /src/a.go:10");
  EXPECT_EQ(Chain(*table, 0x1020), "main.inl /src/a.go:12(i) | main.a /src/a.go:10");
  EXPECT_EQ(Chain(*table, 0x102c), "main.inl /src/a.go:14(i) | main.a /src/a.go:10");
  EXPECT_EQ(Chain(*table, 0x1004), "main.a /src/a.go:10");
  EXPECT_EQ(Chain(*table, 0x1038), "main.a /src/a.go:12");
  EXPECT_EQ(Chain(*table, 0x1150), "main.b /src/a.go:20");
}

// A release that is unknown, has no inline trees (before 1.9), writes another magic (1.16+)
// or lays the record out otherwise: no inline frames, never a chain read in a wrong layout.
TEST_P(Crafted12, OtherOrUnknownReleasesGiveNoInlineFrames) {
  const Crafted crafted = Build12(GetParam());
  const bool go19 = GetParam() <= 11;
  for (uint32_t minor : {0u, 2u, 8u, 16u, 20u, 99u, go19 ? 12u : 11u, go19 ? 13u : 9u}) {
    std::unique_ptr<GoPclntab> table = crafted.ParseAs(minor);
    ASSERT_TRUE(table);
    EXPECT_EQ(Chain(*table, 0x1034), "main.a /src/a.go:33") << "as go1." << minor;
    EXPECT_EQ(Chain(*table, 0x1024), "main.a /src/a.go:12") << "as go1." << minor;
  }
  // A record whose unused bytes are set is not the release's layout: none for it. (Its tail:
  // after the entry and seven int32; main.a's record offset is the function table's second
  // word.)
  Crafted odd = crafted;
  uint64_t record = 0;
  std::memcpy(&record, odd.table.data() + 24, 8);
  odd.table[record + 8 + 7 * 4 + 1] = 1;
  std::unique_ptr<GoPclntab> table = odd.Parse();
  ASSERT_TRUE(table);
  EXPECT_EQ(Chain(*table, 0x1034), "main.a /src/a.go:33");
}

// Damaged trees stop the chain at the function, its place unknown; a missing node gives the
// function alone. Nothing else.
TEST_P(Crafted12, DamagedTreesStopClearly) {
  const Crafted whole = Build12(GetParam());
  const bool go19 = GetParam() <= 11;
  const size_t node = go19 ? 16 : 20;
  {  // node 1's parent is itself (a cycle) / its parentPc negative
    Crafted c = whole;
    if (go19) {
      c.tree[node] = 1;
    } else {
      for (size_t i = 0; i < 4; ++i) c.tree[node + 16 + i] = 0xff;
    }
    std::unique_ptr<GoPclntab> table = c.Parse();
    ASSERT_TRUE(table);
    EXPECT_EQ(Chain(*table, 0x1034), "main.deep /src/a.go:33(i) | main.a :0");
    EXPECT_EQ(Chain(*table, 0x1024), "main.inl /src/a.go:12(i) | main.a /src/a.go:10");
  }
  if (go19) {  // node 0's parent after it: the chain stops past main.inl
    Crafted c = whole;
    c.tree[0] = 1;
    c.tree[1] = c.tree[2] = c.tree[3] = 0;
    std::unique_ptr<GoPclntab> table = c.Parse();
    ASSERT_TRUE(table);
    EXPECT_EQ(Chain(*table, 0x1034),
              "main.deep /src/a.go:33(i) | main.inl /src/a.go:14(i) | main.a :0");
  }
  {  // the tree cut after node 0: no node 1
    Crafted c = whole;
    c.tree.resize(node);
    std::unique_ptr<GoPclntab> table = c.Parse();
    ASSERT_TRUE(table);
    EXPECT_EQ(Chain(*table, 0x1034), "main.a /src/a.go:33");
    EXPECT_EQ(Chain(*table, 0x1024), "main.inl /src/a.go:12(i) | main.a /src/a.go:10");
  }
  for (size_t size = 0; size < whole.tree.size(); ++size) {  // every cut: a chain or less
    Crafted c = whole;
    c.tree.resize(size);
    std::unique_ptr<GoPclntab> table = c.Parse();
    ASSERT_TRUE(table);
    const std::string chain = Chain(*table, 0x1034);
    EXPECT_TRUE(chain == "main.a /src/a.go:33" ||
                chain ==
                    "main.deep /src/a.go:33(i) | main.inl /src/a.go:14(i) | main.a /src/a.go:10")
        << size << ": " << chain;
  }
}

INSTANTIATE_TEST_SUITE_P(Releases, Crafted12, ::testing::Values(9u, 10u, 11u, 12u, 13u, 14u, 15u),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                           return "go1_" + std::to_string(info.param);
                         });

// FindGoPclntab names the release to the table: where the binary names one of the 1.2-magic
// layouts, the inline chain; where it names none, or a release that writes another magic,
// no inline frames.
TEST(GoRelease, FoundInTheBinaryDecidesTheInlineLayout) {
  struct Case {
    uint32_t table_minor;  // the layout the table is crafted in
    VersionIn where;
    std::string version;
    uint32_t expected_minor;
  };
  const std::string chain =
      "main.deep /src/a.go:33(i) | main.inl /src/a.go:14(i) | main.a /src/a.go:10";
  const std::string none = "main.a /src/a.go:33";
  for (const Case& c :
       {Case{13, VersionIn::kBuildInfoPointer, "go1.13.8", 13},
        Case{15, VersionIn::kBuildInfoPointer, "go1.15", 15},
        Case{12, VersionIn::kBuildInfoInline, "go1.12.17", 12},
        Case{10, VersionIn::kSymbol, "go1.10.8", 10}, Case{9, VersionIn::kSymbol, "go1.9rc2", 9},
        Case{13, VersionIn::kBuildInfoInline, "go1.19.5", 19},
        Case{13, VersionIn::kBuildInfoPointer, "devel +3dd3ab41 Tue", 0},
        Case{11, VersionIn::kSymbol, "go1.111", 111}, Case{11, VersionIn::kSymbol, "go1.", 0},
        Case{11, VersionIn::kNowhere, "go1.11", 0}}) {
    const Crafted crafted = Build12(c.table_minor);
    const std::vector<uint8_t> bytes = GoElf(crafted, c.where, c.version);
    auto elf = ElfFile::FromBytes(bytes, "go");
    ASSERT_TRUE(elf) << c.version;
    auto found = FindGoPclntab(**elf);
    ASSERT_TRUE(found && *found) << c.version;
    const GoPclntab& table = ***found;
    EXPECT_EQ(table.go_minor(), c.expected_minor) << c.version;
    const bool layout_known = c.expected_minor >= 9 && c.expected_minor <= 15;
    EXPECT_EQ(Chain(table, 0x1034), layout_known ? chain : none) << c.version;
  }
}

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
