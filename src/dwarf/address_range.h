// Half-open address ranges and the flattening of possibly overlapping ranges into a sorted,
// disjoint segment table (one binary search per lookup).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dwarf/address_index.h"

namespace stacksym::dwarf {

struct AddressRange {
  uint64_t low = 0;
  uint64_t high = 0;  // exclusive
};

// One entry of a flattened table: [start, next entry's start) maps to `id` (kNoId: a gap).
struct AddressSegment {
  uint64_t start = 0;
  int32_t id = -1;
};
inline constexpr int32_t kNoId = -1;

// The id whose segment holds `address`, or kNoId.
int32_t FindSegment(std::span<const AddressSegment> segments, uint64_t address);
// The position in `segments` of the segment holding `address`, or kNoSegment (before the
// first).
inline constexpr size_t kNoSegment = SIZE_MAX;
size_t FindSegmentPosition(std::span<const AddressSegment> segments, uint64_t address);

// The same, searching only the candidates `index` (built over the segment starts) names.
inline int32_t FindSegment(std::span<const AddressSegment> segments, const AddressIndex& index,
                           uint64_t address) {
  auto [lo, hi] = index.Candidates(address);
  return FindSegment(segments.subspan(lo, hi - lo), address);
}
inline void IndexSegments(std::span<const AddressSegment> segments, AddressIndex* index) {
  index->Build(segments.size(), [&](size_t i) { return segments[i].start; });
}

// Flattens ranges of a tree (children nested in parents, `order` = depth-first visit order):
// where ranges overlap, the one visited later (the deeper or later sibling) wins — the rule
// llvm-symbolizer's address-to-DIE map applies.
struct TreeRange {
  uint64_t low = 0;
  uint64_t high = 0;
  int32_t id = 0;
  uint32_t order = 0;
};
// `ranges` is sorted in place (callers reuse its storage).
std::vector<AddressSegment> FlattenNested(std::vector<TreeRange>& ranges);

// Flattens ranges of independent objects (units): where they overlap the smallest id wins,
// as in LLVM's aranges table.
struct IdRange {
  uint64_t low = 0;
  uint64_t high = 0;
  int32_t id = 0;
};
std::vector<AddressSegment> FlattenByLowestId(std::vector<IdRange> ranges);

}  // namespace stacksym::dwarf
