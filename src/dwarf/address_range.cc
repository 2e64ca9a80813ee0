#include "dwarf/address_range.h"

#include <algorithm>
#include <set>

namespace stacksym::dwarf {

namespace {

void Emit(std::vector<AddressSegment>* out, uint64_t start, int32_t id) {
  if (!out->empty() && out->back().start == start) {
    out->back().id = id;
    // Replacing may make it equal to its predecessor: merge.
    if (out->size() >= 2 && (*out)[out->size() - 2].id == id) out->pop_back();
    return;
  }
  if (!out->empty() && out->back().id == id) return;
  if (out->empty() && id == kNoId) return;
  out->push_back({start, id});
}

// Sorts by (low, order). Where `order` never decreases along the vector (the function-table
// walk numbers ranges as it pushes them) that is a stable sort by low, done here as an LSD
// radix sort over the bytes in which the lows differ (three passes over a unit's code
// addresses): std::sort spent about 45 ns a range on a big C++ library's tables.
void SortByLowThenOrder(std::vector<TreeRange>& ranges) {
  auto less = [](const TreeRange& a, const TreeRange& b) {
    if (a.low != b.low) return a.low < b.low;
    return a.order < b.order;
  };
  constexpr size_t kRadixFrom = 256;  // below this std::sort is as fast
  bool ordered = ranges.size() >= kRadixFrom;
  uint64_t min_low = ~uint64_t{0}, max_low = 0;
  for (size_t i = 0; i < ranges.size() && ordered; ++i) {
    ordered = i == 0 || ranges[i - 1].order <= ranges[i].order;
    min_low = std::min(min_low, ranges[i].low);
    max_low = std::max(max_low, ranges[i].low);
  }
  if (!ordered) {
    std::sort(ranges.begin(), ranges.end(), less);
    return;
  }
  const uint64_t span = max_low - min_low;
  // The other buffer of the passes is the thread's, kept from call to call (its pages are
  // faulted in once, not for every unit), and traded with `ranges` when it ends up holding
  // the result.
  thread_local std::vector<TreeRange> other;
  if (other.size() < ranges.size()) other.resize(ranges.size());
  TreeRange* from = ranges.data();
  TreeRange* to = other.data();
  for (unsigned shift = 0; shift < 64 && (span >> shift) != 0; shift += 8) {
    size_t counts[257] = {};
    for (size_t i = 0; i < ranges.size(); ++i)
      ++counts[((from[i].low - min_low) >> shift & 0xff) + 1];
    for (size_t b = 1; b <= 256; ++b) counts[b] += counts[b - 1];
    for (size_t i = 0; i < ranges.size(); ++i) {
      to[counts[(from[i].low - min_low) >> shift & 0xff]++] = from[i];
    }
    std::swap(from, to);
  }
  if (from != ranges.data()) {
    other.resize(ranges.size());
    ranges.swap(other);
  }
}

}  // namespace

size_t FindSegmentPosition(std::span<const AddressSegment> segments, uint64_t address) {
  // Branch-free lower search (the tables are large and probed at random: mispredicted
  // branches and dependent loads dominate): finds the last segment with start <= address.
  size_t n = segments.size();
  if (n == 0 || segments[0].start > address) return kNoSegment;
  const AddressSegment* base = segments.data();
  while (n > 1) {
    size_t half = n / 2;
    base = base[half].start <= address ? base + half : base;
    n -= half;
  }
  return static_cast<size_t>(base - segments.data());
}

int32_t FindSegment(std::span<const AddressSegment> segments, uint64_t address) {
  const size_t position = FindSegmentPosition(segments, address);
  return position == kNoSegment ? kNoId : segments[position].id;
}

std::vector<AddressSegment> FlattenNested(std::vector<TreeRange>& ranges) {
  ranges.erase(std::remove_if(ranges.begin(), ranges.end(),
                              [](const TreeRange& r) { return r.low >= r.high; }),
               ranges.end());
  SortByLowThenOrder(ranges);
  std::vector<AddressSegment> out;
  out.reserve(2 * ranges.size() + 1);  // a range opens one segment and closes at most one
  struct Open {
    uint64_t high;
    int32_t id;
  };
  std::vector<Open> stack;  // highs never increase towards the top
  auto close_until = [&](uint64_t limit) {
    while (!stack.empty() && stack.back().high <= limit) {
      uint64_t end = stack.back().high;
      stack.pop_back();
      // Anything still open continues after `end`.
      Emit(&out, end, stack.empty() ? kNoId : stack.back().id);
    }
  };
  for (const TreeRange& r : ranges) {
    close_until(r.low);
    uint64_t high = r.high;
    // A later range overlapping the tail of an open one but reaching past it: the part past
    // the open range's end is kept by re-opening with the rest after that one closes.
    if (!stack.empty() && high > stack.back().high) {
      // Split: [low, top.high) nested now; [top.high, high) becomes a sibling later.
      // Rare (broken or discarded-code DWARF); handled by truncating — the later range
      // still wins where it overlaps.
      high = stack.back().high;
    }
    Emit(&out, r.low, r.id);
    stack.push_back({high, r.id});
  }
  close_until(~uint64_t{0});
  return out;
}

std::vector<AddressSegment> FlattenByLowestId(std::vector<IdRange> ranges) {
  struct Event {
    uint64_t address;
    int32_t id;
    bool open;
  };
  std::vector<Event> events;
  events.reserve(ranges.size() * 2);
  for (const IdRange& r : ranges) {
    if (r.low >= r.high) continue;
    events.push_back({r.low, r.id, true});
    events.push_back({r.high, r.id, false});
  }
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.address < b.address; });
  std::vector<AddressSegment> out;
  std::multiset<int32_t> active;
  size_t i = 0;
  while (i < events.size()) {
    uint64_t at = events[i].address;
    for (; i < events.size() && events[i].address == at; ++i) {
      if (events[i].open) {
        active.insert(events[i].id);
      } else {
        auto it = active.find(events[i].id);
        if (it != active.end()) active.erase(it);
      }
    }
    Emit(&out, at, active.empty() ? kNoId : *active.begin());
  }
  return out;
}

}  // namespace stacksym::dwarf
