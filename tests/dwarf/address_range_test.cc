// Flattening of nested function ranges and of overlapping unit ranges; the bucket index.
#include "dwarf/address_range.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "base/hex.h"
#include "dwarf/aranges.h"

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

// Ranges numbered as the walk pushes them are sorted by a radix sort on their lows; any other
// numbering by std::sort. Both must flatten alike: the same ranges, once in walk order (radix)
// and once pre-sorted by address (their numbers then out of order: std::sort).
TEST(AddressRangeTest, RadixAndComparisonSortsFlattenAlike) {
  std::mt19937_64 random(7);
  for (uint64_t spread : {uint64_t{1} << 12, uint64_t{1} << 24, uint64_t{1} << 44}) {
    std::vector<TreeRange> walk;
    for (uint32_t i = 0; i < 5000; ++i) {
      uint64_t low = 0x400000 + random() % spread;
      uint64_t high = low + 1 + random() % 256;
      if (i % 97 == 0) high = low;  // empty: dropped
      auto order = [&] { return static_cast<uint32_t>(walk.size()); };
      walk.push_back({low, high, static_cast<int32_t>(i / 2), order()});
      if (i % 13 == 0) walk.push_back({low, high, static_cast<int32_t>(i), order()});  // deeper
    }
    std::vector<TreeRange> by_address = walk;
    std::sort(by_address.begin(), by_address.end(), [](const TreeRange& a, const TreeRange& b) {
      return a.low != b.low ? a.low < b.low : a.order > b.order;  // numbers out of order
    });
    std::vector<AddressSegment> a = FlattenNested(walk), b = FlattenNested(by_address);
    ASSERT_EQ(a.size(), b.size()) << spread;
    ASSERT_GT(a.size(), 1000u);
    for (size_t k = 0; k < a.size(); ++k) {
      ASSERT_EQ(a[k].start, b[k].start) << k;
      ASSERT_EQ(a[k].id, b[k].id) << k;
    }
    EXPECT_TRUE(
        std::is_sorted(walk.begin(), walk.end(), [](const TreeRange& x, const TreeRange& y) {
          return x.low != y.low ? x.low < y.low : x.order < y.order;
        }));
  }
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

namespace stacksym::dwarf {
namespace {

// The bucket index must give exactly the answers of a plain search, for dense, sparse,
// clustered and extreme (near 2^64) address layouts.
// One .debug_aranges set (DWARF 2 header, 8-byte addresses: tuples from offset 0x10) of the
// unit at `unit` with the given (address, length) tuples, terminator included by the caller.
void AppendArangeSet(uint32_t unit, std::initializer_list<std::pair<uint64_t, uint64_t>> tuples,
                     std::vector<uint8_t>* out) {
  auto put = [&](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  put(12 + tuples.size() * 16, 4);  // after the length: header (8), padding (4), tuples
  put(2, 2);
  put(unit, 4);
  put(8, 1);
  put(0, 1);
  put(0, 4);
  for (auto [address, length] : tuples) {
    put(address, 8);
    put(length, 8);
  }
}

TEST(ArangesTest, PrematureTerminatorWarnsAndTheRestIsRead) {
  // LLVM's debug-aranges-premature-end.yaml: a (0, 0) tuple at 0x10 before the set's end.
  std::vector<uint8_t> section;
  AppendArangeSet(0, {{0, 0}, {0x5678, 0x20}, {0, 0}}, &section);
  AppendArangeSet(0x40, {{0x9000, 0x10}, {0, 0}}, &section);  // a well-formed one after it
  std::vector<ArangeEntry> entries;
  std::vector<std::string> warnings;
  ASSERT_TRUE(ParseAranges(section, &entries, &warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "address range table at offset 0x0 has a premature terminator entry at offset 0x10");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].low, 0x5678u);
  EXPECT_EQ(entries[0].high, 0x5698u);
  EXPECT_EQ(entries[0].unit_offset, 0u);
  EXPECT_EQ(entries[1].low, 0x9000u);
  EXPECT_EQ(entries[1].unit_offset, 0x40u);

  // In the second set, at its offset: the warning names the set and the entry.
  std::vector<uint8_t> later;
  AppendArangeSet(0, {{0x100, 0x10}, {0, 0}}, &later);
  const size_t second = later.size();
  AppendArangeSet(0x40, {{0x9000, 0x10}, {0, 0}, {0x9100, 0x8}, {0, 0}}, &later);
  entries.clear();
  warnings.clear();
  ASSERT_TRUE(ParseAranges(later, &entries, &warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "address range table at offset " + HexU64(second) +
                             " has a premature terminator entry at offset " +
                             HexU64(second + 0x20));
  EXPECT_EQ(entries.size(), 3u);
  // Without a place for warnings, the same entries.
  entries.clear();
  ASSERT_TRUE(ParseAranges(later, &entries));
  EXPECT_EQ(entries.size(), 3u);
}

TEST(AddressIndex, AgreesWithPlainSearch) {
  std::mt19937_64 rng(7);
  std::vector<std::vector<uint64_t>> layouts;
  std::vector<uint64_t> dense, clustered, high;
  for (uint64_t i = 0; i < 5000; ++i) dense.push_back(0x400000 + i * 16);
  for (uint64_t i = 0; i < 3000; ++i)
    clustered.push_back((i % 3 == 0 ? 0x1000 : 0x7f0000000000) + i * 64);
  for (uint64_t i = 0; i < 200; ++i) high.push_back(~uint64_t{0} - 0x100000 + i * 0x800);
  layouts = {dense, clustered, high, {5}, {}};
  std::vector<uint64_t> random;
  for (int i = 0; i < 4000; ++i) random.push_back(rng() >> (rng() % 64));
  layouts.push_back(random);
  for (std::vector<uint64_t>& starts : layouts) {
    std::sort(starts.begin(), starts.end());
    std::vector<AddressSegment> segments;
    for (size_t i = 0; i < starts.size(); ++i) {
      segments.push_back({starts[i], static_cast<int32_t>(i % 7 == 0 ? kNoId : i)});
    }
    AddressIndex index;
    IndexSegments(segments, &index);
    std::vector<uint64_t> probes = {0, 1, ~uint64_t{0}, ~uint64_t{0} - 1};
    for (uint64_t s : starts) {
      probes.push_back(s);
      probes.push_back(s - 1);
      probes.push_back(s + 1);
    }
    for (int i = 0; i < 20000; ++i) probes.push_back(rng() >> (rng() % 64));
    for (uint64_t a : probes) {
      ASSERT_EQ(FindSegment(segments, index, a), FindSegment(segments, a))
          << "address 0x" << std::hex << a << " over " << std::dec << starts.size() << " starts";
    }
  }
}

}  // namespace
}  // namespace stacksym::dwarf
