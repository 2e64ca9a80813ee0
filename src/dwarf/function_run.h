// Where a function that only DWARF names starts and ends around an address, so that it gets
// the start, size and +offset a symbol would give it. One rule for the DWARF tables
// (FunctionTable::OutermostRun) and the index's copy of them (SymbolIndex::OutermostRun):
//
//   dwarf::FunctionRun run = table.OutermostRun(vaddr);
//   dwarf::NameFromRun(run, vaddr, &answer);  // answer.symbol = its outermost frame
#pragma once

#include <cstddef>
#include <cstdint>

#include "dwarf/address_range.h"
#include "stacksym/frame.h"

namespace stacksym::dwarf {

// The code of one out-of-line function around an address, from a function table's segments:
// the run of consecutive segments whose nodes belong to the same out-of-line function as the
// segment at position `found` (of `count`). It is what a symbol would say of a function only
// DWARF names (its start, size and the address's +offset), with one rule for the DWARF
// tables (FunctionTable) and the index's copy of them (SymbolIndex). `at(i, &start, &id)`
// reads segment i (false: damage); `outer(id)` is the id's out-of-line function (kNoId: none,
// below kNoId: damage). A function of more than kMaxRunSegments segments either side of the
// address (or whose run reaches the table's end) gets no run rather than a wrong one.
struct FunctionRun {
  bool found = false;
  uint64_t start = 0, end = 0;  // [start, end)
};
inline constexpr size_t kMaxRunSegments = size_t{1} << 14;
template <class At, class Outer>
bool OutermostRun(size_t found, size_t count, const At& at, const Outer& outer, FunctionRun* run) {
  *run = FunctionRun{};
  uint64_t start = 0;
  int32_t id = kNoId;
  if (found >= count || !at(found, &start, &id)) return found < count ? false : true;
  if (id < 0) return true;  // no function there (or one a partial table skipped)
  const int32_t function = outer(id);
  if (function < kNoId) return false;
  if (function == kNoId) return true;
  // Whether segment i belongs to `function`; false with *damaged on bad bytes.
  bool damaged = false;
  auto same = [&](size_t i, uint64_t* segment_start) {
    int32_t segment_id = kNoId;
    if (!at(i, segment_start, &segment_id)) return !(damaged = true) && false;
    if (segment_id < 0) return false;
    const int32_t its = outer(segment_id);
    if (its < kNoId) damaged = true;
    return its == function;
  };
  size_t first = found;
  uint64_t first_start = start;
  for (size_t steps = 0; first > 0; ++steps) {
    uint64_t previous_start = 0;
    if (steps == kMaxRunSegments) return true;
    if (!same(first - 1, &previous_start)) break;
    --first;
    first_start = previous_start;
  }
  if (damaged) return false;
  size_t next = found + 1;
  uint64_t end = 0;
  for (size_t steps = 0;; ++next, ++steps) {
    if (next >= count || steps == kMaxRunSegments) return true;
    if (!same(next, &end)) break;
  }
  if (damaged) return false;
  *run = FunctionRun{true, first_start, end};
  return true;
}

// `answer` for `vaddr` (its frames found, no symbol) named as a symbol of that run would name it:
// the outermost frame's function, from the run's start.
inline void NameFromRun(const FunctionRun& run, uint64_t vaddr, SymbolizedAddress* answer) {
  if (!run.found || answer->frames.empty() || vaddr < run.start) return;
  const SourceFrame& outermost = answer->frames.back();
  if (outermost.function.empty()) return;  // a line-table-only unit names no function
  answer->symbol = outermost.function;
  answer->raw_symbol = outermost.raw_function;
  answer->symbol_address = run.start;
  answer->symbol_size = run.end - run.start;
  answer->offset = vaddr - run.start;
  answer->reason.reset();
}

}  // namespace stacksym::dwarf
