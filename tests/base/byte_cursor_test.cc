#include "base/byte_cursor.h"

#include <gtest/gtest.h>

#include <vector>

namespace stacksym {
namespace {

TEST(ByteCursor, FixedWidthLittleEndian) {
  const uint8_t data[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b};
  ByteCursor c(data, sizeof data);
  EXPECT_EQ(c.U8(), 0x01);
  EXPECT_EQ(c.U16(), 0x0302);
  EXPECT_EQ(c.U32(), 0x07060504u);
  EXPECT_EQ(c.U24(), 0x0a0908u);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.remaining(), 1u);
  EXPECT_EQ(c.U32(), 0u);  // past the end
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.U8(), 0u);  // sticky
}

TEST(ByteCursor, Leb128) {
  const uint8_t data[] = {0xe5, 0x8e, 0x26, 0x7f, 0x80, 0x7f, 0x02};
  ByteCursor c(data, sizeof data);
  EXPECT_EQ(c.Uleb128(), 624485u);
  EXPECT_EQ(c.Sleb128(), -1);
  EXPECT_EQ(c.Sleb128(), -128);
  EXPECT_EQ(c.Uleb128(), 2u);
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(c.at_end());
}

TEST(ByteCursor, Leb128MaxAndAbsurd) {
  std::vector<uint8_t> max(9, 0xff);
  max.push_back(0x01);
  ByteCursor ok(max.data(), max.size());
  EXPECT_EQ(ok.Uleb128(), ~uint64_t{0});
  EXPECT_TRUE(ok.ok());

  std::vector<uint8_t> absurd(20, 0x80);
  absurd.push_back(0x01);
  ByteCursor bad(absurd.data(), absurd.size());
  bad.Uleb128();
  EXPECT_FALSE(bad.ok());

  std::vector<uint8_t> unterminated(5, 0x80);
  ByteCursor bad2(unterminated.data(), unterminated.size());
  bad2.Sleb128();
  EXPECT_FALSE(bad2.ok());
}

TEST(ByteCursor, CStringsAndSubCursors) {
  const uint8_t data[] = {'a', 'b', 0, 'c', 1, 2, 3, 'x'};
  ByteCursor c(data, sizeof data);
  EXPECT_EQ(c.CStr(), "ab");
  EXPECT_EQ(c.U8(), 'c');
  ByteCursor sub = c.Sub(3);
  EXPECT_EQ(sub.U24(), 0x030201u);
  EXPECT_TRUE(sub.at_end());
  EXPECT_EQ(c.CStr(), "");  // 'x' has no terminator
  EXPECT_FALSE(c.ok());
  // A cursor over no bytes at all (a null pointer, as an empty span gives) fails the same way.
  ByteCursor empty(nullptr, 0);
  EXPECT_EQ(empty.CStr(), "");
  EXPECT_FALSE(empty.ok());
}

TEST(ByteCursor, SeekAndSkipBounds) {
  const uint8_t data[4] = {};
  ByteCursor c(data, 4);
  c.Seek(4);
  EXPECT_TRUE(c.ok());
  c.Skip(1);
  EXPECT_FALSE(c.ok());
  ByteCursor d(data, 4);
  d.Sub(5);
  EXPECT_FALSE(d.ok());
}

TEST(StringAt, Bounds) {
  const uint8_t table[] = {0, 'f', 'o', 'o', 0, 'x'};
  std::string_view s;
  ASSERT_TRUE(StringAt(table, 1, &s));
  EXPECT_EQ(s, "foo");
  EXPECT_FALSE(StringAt(table, 5, &s));  // unterminated
  EXPECT_FALSE(StringAt(table, 6, &s));  // past the end
}

}  // namespace
}  // namespace stacksym
