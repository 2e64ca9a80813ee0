// DebugInfoSource on crafted and corrupted DWARF: correct answers for a tiny well-formed unit,
// and for broken input a clear error or a plain "no answer" — never a crash or a hang.
#include <gtest/gtest.h>

#include <random>

#include "dwarf/debug_info_source.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf_builder.h"

namespace stacksym {
namespace {

using testing::BuildTinyDwarf;
using testing::TinyDwarf;

std::unique_ptr<dwarf::DebugInfoSource> Open(const dwarf::DwarfSections& s, bool inlines = true) {
  dwarf::DwarfOptions options;
  options.demangle = false;
  options.inlines = inlines;
  auto source = dwarf::DebugInfoSource::FromSections(s, options);
  if (!source) return nullptr;
  return std::move(*source);
}

class TinyDwarfTest : public ::testing::TestWithParam<int> {};

TEST_P(TinyDwarfTest, InlineChainMatchesTheDies) {
  TinyDwarf t = BuildTinyDwarf(GetParam());
  auto source = Open(t.sections());
  ASSERT_NE(source, nullptr);
  std::vector<SourceFrame> frames;
  ASSERT_TRUE(source->Lookup(0x1015, &frames));
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].function, "leaf");
  EXPECT_EQ(frames[0].file, "/src/inc/tiny.h");  // the row at 0x1014
  EXPECT_EQ(frames[0].line, 30u);
  EXPECT_TRUE(frames[0].inlined);
  EXPECT_EQ(frames[1].function, "helper");
  EXPECT_EQ(frames[1].file, "/src/tiny.c");  // leaf's call site
  EXPECT_EQ(frames[1].line, 42u);
  EXPECT_EQ(frames[1].column, 9u);
  EXPECT_TRUE(frames[1].inlined);
  EXPECT_EQ(frames[2].function, "main");
  EXPECT_EQ(frames[2].line, 7u);  // helper's call site
  EXPECT_EQ(frames[2].column, 3u);
  EXPECT_FALSE(frames[2].inlined);

  ASSERT_TRUE(source->Lookup(0x1011, &frames));
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].function, "helper");
  EXPECT_EQ(frames[0].line, 20u);

  ASSERT_TRUE(source->Lookup(0x10ff, &frames));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "main");
  EXPECT_EQ(frames[0].line, 30u);

  EXPECT_FALSE(source->Lookup(0xfff, &frames));
  EXPECT_FALSE(source->Lookup(0x1100, &frames));
  EXPECT_TRUE(frames.empty());
  EXPECT_EQ(source->units().parsed_unit_count(), 1u);
}

TEST_P(TinyDwarfTest, WithoutInlinesOnlyTheOutOfLineFrame) {
  TinyDwarf t = BuildTinyDwarf(GetParam());
  auto source = Open(t.sections(), /*inlines=*/false);
  ASSERT_NE(source, nullptr);
  std::vector<SourceFrame> frames;
  ASSERT_TRUE(source->Lookup(0x1015, &frames));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "main");
  EXPECT_EQ(frames[0].line, 30u);  // the line of the address itself
}

// An inlined subroutine right under the unit, no subprogram around it (LLVM's test
// invalid-inlined-subroutine.s): the chain ends at it, as LLVM's does, instead of naming a
// caller that does not exist ("??:0:0" after it).
TEST_P(TinyDwarfTest, InlinedSubroutineWithoutSubprogramEndsTheChain) {
  TinyDwarf t = BuildTinyDwarf(GetParam(), /*without_main=*/true);
  for (bool inlines : {true, false}) {
    auto source = Open(t.sections(), inlines);
    ASSERT_NE(source, nullptr);
    std::vector<SourceFrame> frames;
    ASSERT_TRUE(source->Lookup(0x1011, &frames));
    ASSERT_EQ(frames.size(), 1u) << "inlines " << inlines;
    EXPECT_EQ(frames[0].function, "helper");
    EXPECT_EQ(frames[0].line, 20u);  // the row at 0x1010
    EXPECT_FALSE(frames[0].inlined);
    ASSERT_TRUE(source->Lookup(0x1015, &frames));
    if (!inlines) {
      ASSERT_EQ(frames.size(), 1u);
      EXPECT_EQ(frames[0].function, "helper");  // the outermost of the chain
      EXPECT_EQ(frames[0].line, 30u);
      continue;
    }
    // leaf, inlined into helper, which is the last frame.
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].function, "leaf");
    EXPECT_EQ(frames[0].line, 30u);
    EXPECT_TRUE(frames[0].inlined);
    EXPECT_EQ(frames[1].function, "helper");
    EXPECT_EQ(frames[1].file, "/src/tiny.c");  // leaf's call site
    EXPECT_EQ(frames[1].line, 42u);
    EXPECT_FALSE(frames[1].inlined);
  }
}

INSTANTIATE_TEST_SUITE_P(Versions, TinyDwarfTest, ::testing::Values(2, 3, 4, 5));

TEST(BadDwarfTest, AbstractOriginCyclesTerminate) {
  TinyDwarf t = BuildTinyDwarf(4);
  // helper's concrete DIE points at itself: the name search must stop.
  size_t self = t.helper_origin_field - 1;  // the DIE starts at its abbreviation code
  for (int i = 0; i < 4; ++i)
    t.info[t.helper_origin_field + i] = static_cast<uint8_t>(self >> (8 * i));
  auto source = Open(t.sections());
  ASSERT_NE(source, nullptr);
  std::vector<SourceFrame> frames;
  ASSERT_TRUE(source->Lookup(0x1011, &frames));
  EXPECT_EQ(frames[0].function, "");  // no name anywhere on the (cyclic) chain
  EXPECT_EQ(frames[0].line, 20u);     // lines still answer
}

TEST(BadDwarfTest, ReferencesPastTheUnitAreIgnored) {
  TinyDwarf t = BuildTinyDwarf(4);
  for (int i = 0; i < 4; ++i) t.info[t.helper_origin_field + i] = 0xff;
  auto source = Open(t.sections());
  ASSERT_NE(source, nullptr);
  std::vector<SourceFrame> frames;
  ASSERT_TRUE(source->Lookup(0x1011, &frames));
  EXPECT_EQ(frames[0].function, "");
  EXPECT_EQ(frames[1].function, "main");
}

TEST(BadDwarfTest, BadAbbrevCodeIsAUnitErrorNotACrash) {
  TinyDwarf t = BuildTinyDwarf(4);
  t.info[t.helper_origin_field - 1] = 0x55;  // inlined DIE's abbreviation code → unknown
  auto source = Open(t.sections());
  ASSERT_NE(source, nullptr);
  std::vector<SourceFrame> frames;
  // The unit's functions are unusable; the line table still answers with an unnamed frame.
  ASSERT_TRUE(source->Lookup(0x1011, &frames));
  EXPECT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "");
  ASSERT_FALSE(source->units().unit_errors().empty());
  EXPECT_NE(source->units().unit_errors()[0].message.find("abbreviation code"), std::string::npos);
  EXPECT_EQ(source->units().unit_errors()[0].section, ".debug_info");
}

TEST(BadDwarfTest, OffsetsPastTheEnd) {
  TinyDwarf t = BuildTinyDwarf(4);
  // stmt_list is the last 4 bytes of the unit DIE (after "/src\0", low_pc, high_pc).
  size_t stmt_list = 11 + 1 + 7 + 5 + 8 + 4;
  for (int i = 0; i < 4; ++i) t.info[stmt_list + i] = 0x7f;
  auto source = Open(t.sections());
  ASSERT_NE(source, nullptr);
  std::vector<SourceFrame> frames;
  ASSERT_TRUE(source->Lookup(0x1011, &frames));  // functions without lines
  EXPECT_EQ(frames[0].function, "helper");
  EXPECT_EQ(frames[0].line, 0u);
  EXPECT_FALSE(source->units().unit_errors().empty());

  TinyDwarf u = BuildTinyDwarf(4);
  u.info[7] = 0x40;  // abbreviation offset far past the end
  auto broken = Open(u.sections());
  ASSERT_NE(broken, nullptr);
  EXPECT_FALSE(broken->Lookup(0x1011, &frames));
}

TEST(BadDwarfTest, AbsurdUnitLengths) {
  TinyDwarf t = BuildTinyDwarf(4);
  t.info[0] = 0xf5;  // reserved length values
  t.info[1] = t.info[2] = t.info[3] = 0xff;
  dwarf::DwarfOptions options;
  auto source = dwarf::DebugInfoSource::FromSections(t.sections(), options);
  ASSERT_FALSE(source);
  EXPECT_NE(source.error().message.find("reserved unit length"), std::string::npos);
}

TEST(BadDwarfTest, EveryTruncationIsSafe) {
  TinyDwarf t = BuildTinyDwarf(5);
  for (size_t n = 0; n <= t.info.size(); ++n) {
    TinyDwarf cut = t;
    cut.info.resize(n);
    dwarf::DwarfOptions options;
    auto source = dwarf::DebugInfoSource::FromSections(cut.sections(), options);
    if (!source || !*source) continue;
    std::vector<SourceFrame> frames;
    for (uint64_t a = 0xff0; a < 0x1110; a += 3) (*source)->Lookup(a, &frames);
  }
  for (size_t n = 0; n <= t.abbrev.size(); ++n) {
    TinyDwarf cut = t;
    cut.abbrev.resize(n);
    dwarf::DwarfOptions options;
    auto source = dwarf::DebugInfoSource::FromSections(cut.sections(), options);
    if (!source || !*source) continue;
    std::vector<SourceFrame> frames;
    for (uint64_t a = 0xff0; a < 0x1110; a += 3) (*source)->Lookup(a, &frames);
  }
}

TEST(BadDwarfTest, RandomCorruptionIsSafe) {
  std::mt19937 rng(12345);
  for (int iteration = 0; iteration < 3000; ++iteration) {
    TinyDwarf t = BuildTinyDwarf(iteration % 2 ? 5 : 4);
    std::vector<uint8_t>* targets[] = {&t.info, &t.abbrev, &t.line};
    for (int flips = 0; flips < 3; ++flips) {
      std::vector<uint8_t>* target = targets[rng() % 3];
      (*target)[rng() % target->size()] = static_cast<uint8_t>(rng());
    }
    dwarf::DwarfOptions options;
    auto source = dwarf::DebugInfoSource::FromSections(t.sections(), options);
    if (!source || !*source) continue;
    std::vector<SourceFrame> frames;
    for (uint64_t a = 0xff0; a < 0x1110; a += 5) (*source)->Lookup(a, &frames);
  }
}

TEST(BadDwarfTest, SkeletonUnitWithoutFilesAnswersFromItself) {
  // The tiny DWARF 5 unit turned into a skeleton (unit type 4 + a DWO id): its split unit
  // lives in a .dwo nobody can look for here, so the skeleton answers with what it holds
  // itself, as LLVM's does (clang's -fsplit-dwarf-inlining leaves an inline tree there), and
  // the unit reports why.
  TinyDwarf t = BuildTinyDwarf(5);
  t.info[6] = dwarf::DW_UT_skeleton;
  std::vector<uint8_t> dwo_id(8, 0x11);
  t.info.insert(t.info.begin() + 12, dwo_id.begin(), dwo_id.end());
  uint32_t length = static_cast<uint32_t>(t.info.size() - 4);
  for (int i = 0; i < 4; ++i) t.info[i] = static_cast<uint8_t>(length >> (8 * i));
  auto source = Open(t.sections());
  ASSERT_NE(source, nullptr);
  std::vector<SourceFrame> frames;
  ASSERT_TRUE(source->Lookup(0x1015, &frames));
  // (The DWO id moved the DIEs: the abstract origins now point between them, so the inlined
  // frames' names are not checked.)
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].line, 30u);
  EXPECT_TRUE(frames[0].inlined);
  EXPECT_EQ(frames[2].function, "main");
  EXPECT_FALSE(frames[2].inlined);
  ASSERT_FALSE(source->units().unit_errors().empty());
  EXPECT_NE(source->units().unit_errors()[0].message.find("split DWARF"), std::string::npos);
}

TEST(BadDwarfTest, DeepNestingIsBounded) {
  // A unit whose DIEs each open a new level (lexical blocks) 100000 deep.
  testing::ByteWriter ab;
  ab.Uleb(1).Uleb(dwarf::DW_TAG_compile_unit).U8(1).Uleb(0).Uleb(0);
  ab.Uleb(2).Uleb(dwarf::DW_TAG_lexical_block).U8(1).Uleb(0).Uleb(0).Uleb(0);
  testing::ByteWriter in;
  in.U32(0).U16(4).U32(0).U8(8).Uleb(1);
  for (int i = 0; i < 100000; ++i) in.Uleb(2);
  in.Patch32(0, static_cast<uint32_t>(in.size() - 4));
  dwarf::DwarfSections s;
  s.info = in.bytes();
  s.abbrev = ab.bytes();
  auto source = Open(s);
  ASSERT_NE(source, nullptr);
  std::vector<SourceFrame> frames;
  EXPECT_FALSE(source->Lookup(0x1000, &frames));  // no ranges at all
}

}  // namespace
}  // namespace stacksym
