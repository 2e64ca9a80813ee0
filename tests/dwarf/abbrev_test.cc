// .debug_abbrev parsing: lookup by code, fixed sizes, sparse codes and errors.
#include <gtest/gtest.h>

#include "dwarf/abbrev_table.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf_builder.h"

namespace stacksym::dwarf {
namespace {

using testing::ByteWriter;

TEST(AbbrevTest, ParsesTagsChildrenAndFixedSizes) {
  ByteWriter w;
  w.Uleb(1).Uleb(DW_TAG_subprogram).U8(1);
  w.Uleb(DW_AT_low_pc).Uleb(DW_FORM_addr).Uleb(DW_AT_high_pc).Uleb(DW_FORM_data4);
  w.Uleb(DW_AT_call_line).Uleb(DW_FORM_implicit_const).Sleb(-3);
  w.Uleb(0).Uleb(0);
  w.Uleb(2).Uleb(DW_TAG_variable).U8(0);
  w.Uleb(DW_AT_name).Uleb(DW_FORM_string).Uleb(0).Uleb(0);
  w.Uleb(0);
  auto t = AbbrevTable::Parse(w.bytes(), 0, FormContext{4, 8, 4});
  ASSERT_TRUE(t) << t.error().ToString();
  const Abbrev* a = t->Find(1);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->tag, DW_TAG_subprogram);
  EXPECT_TRUE(a->has_children);
  EXPECT_EQ(a->fixed_size, 12);
  ASSERT_EQ(t->specs(*a).size(), 3u);
  EXPECT_EQ(t->specs(*a)[2].implicit_const, -3);
  const Abbrev* b = t->Find(2);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->fixed_size, -1);
  EXPECT_EQ(t->Find(3), nullptr);
  EXPECT_EQ(t->Find(0), nullptr);
  EXPECT_EQ(t->Find(~uint64_t{0}), nullptr);
}

TEST(AbbrevTest, HugeCodesUseTheSparsePath) {
  ByteWriter w;
  w.Uleb(1ull << 40).Uleb(DW_TAG_subprogram).U8(0).Uleb(0).Uleb(0);
  w.Uleb(5).Uleb(DW_TAG_variable).U8(0).Uleb(0).Uleb(0);
  w.Uleb(0);
  auto t = AbbrevTable::Parse(w.bytes(), 0, FormContext{});
  ASSERT_TRUE(t);
  ASSERT_NE(t->Find(1ull << 40), nullptr);
  EXPECT_EQ(t->Find(1ull << 40)->tag, DW_TAG_subprogram);
  ASSERT_NE(t->Find(5), nullptr);
  EXPECT_EQ(t->Find(5)->tag, DW_TAG_variable);
  EXPECT_LT(t->memory_bytes(), 4096u);
}

TEST(AbbrevTest, ErrorsNameTheProblem) {
  ByteWriter unknown;
  unknown.Uleb(1)
      .Uleb(DW_TAG_subprogram)
      .U8(0)
      .Uleb(DW_AT_name)
      .Uleb(0x7777)
      .Uleb(0)
      .Uleb(0)
      .Uleb(0);
  auto a = AbbrevTable::Parse(unknown.bytes(), 0, FormContext{});
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("unknown attribute form"), std::string::npos);
  EXPECT_EQ(a.error().section, ".debug_abbrev");

  ByteWriter truncated;
  truncated.Uleb(1).Uleb(DW_TAG_subprogram).U8(0).Uleb(DW_AT_name);
  EXPECT_FALSE(AbbrevTable::Parse(truncated.bytes(), 0, FormContext{}));
  EXPECT_FALSE(AbbrevTable::Parse(truncated.bytes(), 1000, FormContext{}));
}

}  // namespace
}  // namespace stacksym::dwarf
