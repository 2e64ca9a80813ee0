// Flattening of nested function ranges and of overlapping unit ranges.
#include "dwarf/address_range.h"

#include <gtest/gtest.h>

namespace stacksym::dwarf {
namespace {

TEST(AddressRangeTest, NestedRangesInnermostWins) {
  // f [0x100,0x200) contains g [0x120,0x140) contains h [0x130,0x138); f also has [0x300,0x310).
  std::vector<TreeRange> r = {
      {0x100, 0x200, 0, 0}, {0x300, 0x310, 0, 0}, {0x120, 0x140, 1, 1}, {0x130, 0x138, 2, 2}};
  auto s = FlattenNested(r);
  EXPECT_EQ(FindSegment(s, 0xff), kNoId);
  EXPECT_EQ(FindSegment(s, 0x100), 0);
  EXPECT_EQ(FindSegment(s, 0x11f), 0);
  EXPECT_EQ(FindSegment(s, 0x120), 1);
  EXPECT_EQ(FindSegment(s, 0x130), 2);
  EXPECT_EQ(FindSegment(s, 0x137), 2);
  EXPECT_EQ(FindSegment(s, 0x138), 1);
  EXPECT_EQ(FindSegment(s, 0x140), 0);
  EXPECT_EQ(FindSegment(s, 0x1ff), 0);
  EXPECT_EQ(FindSegment(s, 0x200), kNoId);
  EXPECT_EQ(FindSegment(s, 0x305), 0);
  EXPECT_EQ(FindSegment(s, 0x310), kNoId);
}

TEST(AddressRangeTest, SameRangeDeeperWinsAndEmptyRangesVanish) {
  std::vector<TreeRange> r = {{0x10, 0x20, 0, 0}, {0x10, 0x20, 1, 1}, {0x18, 0x18, 2, 2}};
  auto s = FlattenNested(r);
  EXPECT_EQ(FindSegment(s, 0x10), 1);
  EXPECT_EQ(FindSegment(s, 0x18), 1);
  EXPECT_EQ(FindSegment(s, 0x20), kNoId);
}

TEST(AddressRangeTest, SiblingsAndAdjacentRanges) {
  std::vector<TreeRange> r = {{0x0, 0x100, 0, 0}, {0x10, 0x20, 1, 1}, {0x20, 0x30, 2, 2}};
  auto s = FlattenNested(r);
  EXPECT_EQ(FindSegment(s, 0x1f), 1);
  EXPECT_EQ(FindSegment(s, 0x20), 2);
  EXPECT_EQ(FindSegment(s, 0x30), 0);
}

TEST(AddressRangeTest, OverlappingUnitsLowestIdWins) {
  std::vector<IdRange> r = {{0x100, 0x200, 3}, {0x150, 0x300, 1}, {0x400, 0x500, 2}};
  auto s = FlattenByLowestId(r);
  EXPECT_EQ(FindSegment(s, 0x100), 3);
  EXPECT_EQ(FindSegment(s, 0x150), 1);
  EXPECT_EQ(FindSegment(s, 0x250), 1);
  EXPECT_EQ(FindSegment(s, 0x300), kNoId);
  EXPECT_EQ(FindSegment(s, 0x450), 2);
  EXPECT_EQ(FindSegment(s, 0x500), kNoId);
}

}  // namespace
}  // namespace stacksym::dwarf
