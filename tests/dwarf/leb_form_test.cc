// LEB128 and DW_FORM_* reading/skipping on crafted bytes.
#include <gtest/gtest.h>

#include "base/byte_cursor.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf/dwarf_form.h"
#include "dwarf_builder.h"

namespace stacksym::dwarf {
namespace {

using testing::ByteWriter;

TEST(Leb128Test, RoundTripsEdgeValues) {
  const uint64_t values[] = {0, 1, 127, 128, 300, 0xffffffffull, ~uint64_t{0}};
  for (uint64_t v : values) {
    ByteWriter w;
    w.Uleb(v);
    ByteCursor c(w.bytes());
    EXPECT_EQ(c.Uleb128(), v);
    EXPECT_TRUE(c.ok());
    EXPECT_TRUE(c.at_end());
  }
  const int64_t signed_values[] = {0, -1, 63, -64, 64, -65, INT64_MIN, INT64_MAX};
  for (int64_t v : signed_values) {
    ByteWriter w;
    w.Sleb(v);
    ByteCursor c(w.bytes());
    EXPECT_EQ(c.Sleb128(), v);
    EXPECT_TRUE(c.ok());
  }
}

TEST(Leb128Test, AbsurdLebFailsTheCursor) {
  std::vector<uint8_t> bytes(20, 0xff);
  bytes.push_back(0x01);
  ByteCursor c(bytes);
  c.Uleb128();
  EXPECT_FALSE(c.ok());
  ByteCursor truncated(bytes.data(), 3);  // continuation bits but no end
  truncated.Uleb128();
  EXPECT_FALSE(truncated.ok());
}

struct FormCase {
  uint16_t form;
  std::vector<uint8_t> bytes;
  ValueKind kind;
  uint64_t value;
};

TEST(FormTest, ReadsEveryFormClass) {
  FormContext ctx{5, 8, 4};
  const std::vector<FormCase> cases = {
      {DW_FORM_addr, {1, 2, 3, 4, 5, 6, 7, 8}, ValueKind::kAddress, 0x0807060504030201ull},
      {DW_FORM_data1, {0x7f}, ValueKind::kUnsigned, 0x7f},
      {DW_FORM_data2, {0x34, 0x12}, ValueKind::kUnsigned, 0x1234},
      {DW_FORM_data4, {1, 0, 0, 0x80}, ValueKind::kUnsigned, 0x80000001},
      {DW_FORM_udata, {0xe5, 0x8e, 0x26}, ValueKind::kUnsigned, 624485},
      {DW_FORM_sdata, {0x7f}, ValueKind::kSigned, static_cast<uint64_t>(-1)},
      {DW_FORM_strp, {0x10, 0, 0, 0}, ValueKind::kStrOffset, 0x10},
      {DW_FORM_line_strp, {0x20, 0, 0, 0}, ValueKind::kLineStrOffset, 0x20},
      {DW_FORM_strx, {0x81, 0x01}, ValueKind::kStrIndex, 129},
      {DW_FORM_strx1, {5}, ValueKind::kStrIndex, 5},
      {DW_FORM_strx2, {5, 1}, ValueKind::kStrIndex, 0x105},
      {DW_FORM_strx3, {5, 1, 2}, ValueKind::kStrIndex, 0x20105},
      {DW_FORM_strx4, {5, 1, 2, 3}, ValueKind::kStrIndex, 0x3020105},
      {DW_FORM_addrx, {3}, ValueKind::kAddrIndex, 3},
      {DW_FORM_addrx1, {4}, ValueKind::kAddrIndex, 4},
      {DW_FORM_addrx2, {4, 1}, ValueKind::kAddrIndex, 0x104},
      {DW_FORM_addrx3, {4, 1, 1}, ValueKind::kAddrIndex, 0x10104},
      {DW_FORM_addrx4, {4, 0, 0, 1}, ValueKind::kAddrIndex, 0x1000004},
      {DW_FORM_ref4, {0x30, 0, 0, 0}, ValueKind::kUnitRef, 0x30},
      {DW_FORM_ref_udata, {0x30}, ValueKind::kUnitRef, 0x30},
      {DW_FORM_ref_addr, {0x40, 0, 0, 0}, ValueKind::kInfoRef, 0x40},
      {DW_FORM_GNU_ref_alt, {0x50, 0, 0, 0}, ValueKind::kAltRef, 0x50},
      {DW_FORM_ref_sup4, {0x51, 0, 0, 0}, ValueKind::kAltRef, 0x51},
      {DW_FORM_GNU_strp_alt, {0x60, 0, 0, 0}, ValueKind::kAltStrOffset, 0x60},
      {DW_FORM_strp_sup, {0x61, 0, 0, 0}, ValueKind::kAltStrOffset, 0x61},
      {DW_FORM_sec_offset, {0x70, 0, 0, 0}, ValueKind::kSecOffset, 0x70},
      {DW_FORM_rnglistx, {2}, ValueKind::kRnglistIndex, 2},
      {DW_FORM_loclistx, {2}, ValueKind::kLoclistIndex, 2},
      {DW_FORM_flag_present, {}, ValueKind::kUnsigned, 1},
      {DW_FORM_string, {'a', 'b', 0}, ValueKind::kInlineString, 2},
      {DW_FORM_block1, {2, 9, 9}, ValueKind::kBlock, 2},
      {DW_FORM_exprloc, {1, 9}, ValueKind::kBlock, 1},
      {DW_FORM_data16, std::vector<uint8_t>(16, 1), ValueKind::kBlock, 16},
      {DW_FORM_indirect, {DW_FORM_data1, 0x42}, ValueKind::kUnsigned, 0x42},
  };
  for (const FormCase& fc : cases) {
    SCOPED_TRACE(fc.form);
    ByteCursor c(fc.bytes);
    AttrValue v;
    ASSERT_TRUE(ReadAttrValue(c, fc.form, 0, ctx, &v));
    EXPECT_EQ(v.kind, fc.kind);
    EXPECT_EQ(v.value, fc.value);
    EXPECT_TRUE(c.at_end());
    // Skipping moves exactly as far as reading.
    ByteCursor s(fc.bytes);
    ASSERT_TRUE(SkipAttrValue(s, fc.form, ctx));
    EXPECT_TRUE(s.at_end());
    int fixed = FixedFormSize(fc.form, ctx);
    if (fixed >= 0) {
      EXPECT_EQ(static_cast<size_t>(fixed), fc.bytes.size());
    }
  }
}

TEST(FormTest, ImplicitConstComesFromTheAbbreviation) {
  ByteCursor c(nullptr, 0);
  AttrValue v;
  ASSERT_TRUE(ReadAttrValue(c, DW_FORM_implicit_const, -7, FormContext{}, &v));
  EXPECT_EQ(static_cast<int64_t>(v.value), -7);
}

TEST(FormTest, OffsetSizesFollowTheUnit) {
  std::vector<uint8_t> eight = {1, 0, 0, 0, 0, 0, 0, 1};
  FormContext dwarf64{5, 8, 8};
  ByteCursor c(eight);
  AttrValue v;
  ASSERT_TRUE(ReadAttrValue(c, DW_FORM_strp, 0, dwarf64, &v));
  EXPECT_EQ(v.value, 0x0100000000000001ull);
  // DWARF 2 ref_addr has the size of an address, later versions of an offset.
  FormContext v2{2, 4, 4};
  EXPECT_EQ(FixedFormSize(DW_FORM_ref_addr, v2), 4);
  FormContext v2_64addr{2, 8, 4};
  EXPECT_EQ(FixedFormSize(DW_FORM_ref_addr, v2_64addr), 8);
  EXPECT_EQ(FixedFormSize(DW_FORM_ref_addr, dwarf64), 8);
}

TEST(FormTest, UnknownAndTruncatedFormsFail) {
  std::vector<uint8_t> bytes = {1, 2};
  AttrValue v;
  ByteCursor c(bytes);
  EXPECT_FALSE(ReadAttrValue(c, 0x7777, 0, FormContext{}, &v));
  EXPECT_EQ(FixedFormSize(0x7777, FormContext{}), kUnknownForm);
  ByteCursor s(bytes);
  EXPECT_FALSE(SkipAttrValue(s, 0x7777, FormContext{}));
  ByteCursor t(bytes);
  EXPECT_FALSE(ReadAttrValue(t, DW_FORM_data4, 0, FormContext{}, &v));
  std::vector<uint8_t> block = {0x7f, 1};  // block1 claiming 127 bytes
  ByteCursor b(block);
  EXPECT_FALSE(ReadAttrValue(b, DW_FORM_block1, 0, FormContext{}, &v));
  ByteCursor bs(block);
  EXPECT_FALSE(SkipAttrValue(bs, DW_FORM_block1, FormContext{}));
}

TEST(FormTest, IndirectChainsAreBounded) {
  std::vector<uint8_t> loop(64, DW_FORM_indirect);
  AttrValue v;
  ByteCursor c(loop);
  EXPECT_FALSE(ReadAttrValue(c, DW_FORM_indirect, 0, FormContext{}, &v));
  ByteCursor s(loop);
  EXPECT_FALSE(SkipAttrValue(s, DW_FORM_indirect, FormContext{}));
  std::vector<uint8_t> implicit = {DW_FORM_implicit_const};
  ByteCursor i(implicit);
  EXPECT_FALSE(ReadAttrValue(i, DW_FORM_indirect, 0, FormContext{}, &v));
}

}  // namespace
}  // namespace stacksym::dwarf
