// The location-table decoder on hand-made tables: each entry kind, the line it gives, and
// damage (a missing entry marker, a varint cut short, lines out of range). The comparison with
// Python's own co_positions() over hundreds of real code objects is in code_object_test.cc.
#include "interp/python/line_table.h"

#include <gtest/gtest.h>

#include <vector>

namespace stacksym::interp::python {
namespace {

uint8_t First(int kind, int length) {
  return static_cast<uint8_t>(0x80 | kind << 3 | (length - 1));
}

std::vector<LocationRange> Ranges(const std::vector<uint8_t>& table, int32_t first_line,
                                  bool* intact = nullptr) {
  std::vector<LocationRange> out;
  bool ok = ForEachLocation(table, first_line, [&](const LocationRange& r) {
    out.push_back(r);
    return true;
  });
  if (intact != nullptr) *intact = ok;
  return out;
}

TEST(LineTableTest, EveryEntryKind) {
  std::vector<uint8_t> table = {
      First(0, 2),  0x13,     // short form (kind 0-9): same line, one column byte
      First(11, 1), 4,    9,  // one-line form: +1 line, start and end columns
      First(12, 3), 0,    1,  // +2
      First(10, 1), 7,    8,  // +0
      First(13, 2), 0x07,     // no columns: signed varint -3 (raw 7 = 3 << 1 | 1)
      First(14, 4), 0x48, 0x03, 0x00, 0x01, 0x05,  // long: +100 (raw 200 in two chunks), ...
      First(15, 8),                                // no location
      First(9, 1),  0x7f,                          // short form again: the line before the gap
  };
  bool intact = false;
  std::vector<LocationRange> r = Ranges(table, 10, &intact);
  EXPECT_TRUE(intact);
  std::vector<LocationRange> want = {{0, 2, 10}, {2, 3, 11},   {3, 6, 13},   {6, 7, 13},
                                     {7, 9, 10}, {9, 13, 110}, {13, 21, -1}, {21, 22, 110}};
  EXPECT_EQ(r, want);

  EXPECT_EQ(LineOfInstruction(table, 10, -1).line, 10);  // not started: the first line
  EXPECT_EQ(LineOfInstruction(table, 10, 0).line, 10);
  EXPECT_EQ(LineOfInstruction(table, 10, 4).line, 13);
  EXPECT_EQ(LineOfInstruction(table, 10, 8).line, 10);
  EXPECT_EQ(LineOfInstruction(table, 10, 12).line, 110);
  EXPECT_EQ(LineOfInstruction(table, 10, 12).status, LineStatus::kFound);
  EXPECT_EQ(LineOfInstruction(table, 10, 15).status, LineStatus::kNoLocation);
  EXPECT_EQ(LineOfInstruction(table, 10, 21).line, 110);
  EXPECT_EQ(LineOfInstruction(table, 10, 22).status, LineStatus::kPastTable);
  EXPECT_EQ(LineOfInstruction({}, 10, 0).status, LineStatus::kPastTable);
}

TEST(LineTableTest, NegativeAndLongDeltas) {
  // A varint of three chunks: 3 << 12 | 2 << 6 | 1 = 12417, as a signed delta -(12417 >> 1).
  std::vector<uint8_t> table = {First(13, 1), 0x41, 0x42, 0x03, First(13, 1), 0x00};
  std::vector<LocationRange> r = Ranges(table, 20000);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].line, 20000 - 6208);
  EXPECT_EQ(r[1].line, 20000 - 6208);
}

TEST(LineTableTest, DamageIsReported) {
  bool intact = true;
  // No entry marker on the first byte.
  EXPECT_TRUE(Ranges({0x05, First(0, 1), 0}, 1, &intact).empty());
  EXPECT_FALSE(intact);
  EXPECT_EQ(LineOfInstruction(std::vector<uint8_t>{0x05}, 1, 0).status, LineStatus::kCorrupt);
  // A varint cut short by the end of the table, and by the next entry.
  EXPECT_EQ(LineOfInstruction(std::vector<uint8_t>{First(13, 1), 0x41}, 1, 0).status,
            LineStatus::kCorrupt);
  std::vector<uint8_t> cut_by_entry = {First(0, 1), 0, First(14, 1), 0x41, First(0, 1), 0};
  std::vector<LocationRange> r = Ranges(cut_by_entry, 1, &intact);
  EXPECT_FALSE(intact);
  EXPECT_EQ(r.size(), 1u);  // the entry before the damage
  EXPECT_EQ(LineOfInstruction(cut_by_entry, 1, 0).line, 1);
  EXPECT_EQ(LineOfInstruction(cut_by_entry, 1, 1).status, LineStatus::kCorrupt);
  // A varint longer than 32 bits.
  std::vector<uint8_t> long_varint = {First(13, 1), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01};
  EXPECT_EQ(LineOfInstruction(long_varint, 1, 0).status, LineStatus::kCorrupt);
  // Lines driven out of range by large deltas.
  std::vector<uint8_t> runaway;
  for (int i = 0; i < 8; ++i) {
    // +2^28 each: raw 2^29 = chunks 0, 0, 0, 0, 32 (6 bits each).
    runaway.insert(runaway.end(), {First(13, 1), 0x40, 0x40, 0x40, 0x40, 0x20});
  }
  EXPECT_EQ(LineOfInstruction(runaway, 1, 7).status, LineStatus::kCorrupt);
  EXPECT_EQ(LineOfInstruction(runaway, 1, 1).line, 1 + 2 * (1 << 28));
}

TEST(LineTableTest, StopsWhenTold) {
  std::vector<uint8_t> table = {First(0, 1), 0, First(0, 1), 0, First(0, 1), 0};
  int calls = 0;
  EXPECT_TRUE(ForEachLocation(table, 1, [&](const LocationRange&) { return ++calls < 2; }));
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace stacksym::interp::python
