// CPython's location table (3.11+, `co_linetable`; PEP 626 and 657, described in CPython's
// Objects/locations.md): the source line of each instruction of a code object.
//
// Entries cover consecutive runs of 1 to 8 code units (2-byte instructions and their inline
// caches). The first byte of an entry has its top bit set, a 4-bit kind and the run's length; the
// line is the previous entry's line plus a delta the kind gives (0, 1, 2, or a signed varint),
// starting from co_firstlineno; kind 15 has no location. The bytes after the first (varints,
// columns) never have their top bit set, so the next entry starts at the next byte that does:
// this reader steps from entry to entry that way, as CPython does, and reads only line deltas.
//
//   LineLookup l = LineOfInstruction(table, code.first_line, instruction_index);
//   if (l.status == LineStatus::kFound) ... l.line ...
#pragma once

#include <cstdint>
#include <functional>
#include <span>

namespace stacksym::interp::python {

// One run of code units with one location.
struct LocationRange {
  uint32_t start = 0;  // code units
  uint32_t end = 0;    // exclusive
  int32_t line = -1;   // -1: no location (kind 15)
  bool operator==(const LocationRange&) const = default;
};

// Calls `range` for each entry in order until it returns false. False when the table is damaged
// (a first byte without its top bit, a varint cut short, a line out of range); the ranges before
// the damage were reported.
bool ForEachLocation(std::span<const uint8_t> table, int32_t first_line,
                     const std::function<bool(const LocationRange&)>& range);

enum class LineStatus : uint8_t {
  kFound,       // `line` is the instruction's line
  kNoLocation,  // the instruction has no location (compiler-made code)
  kPastTable,   // the table ends before the instruction
  kCorrupt,     // the table is damaged before the instruction
};

struct LineLookup {
  LineStatus status = LineStatus::kCorrupt;
  int32_t line = 0;
};

// The line of the instruction at code unit `instruction` (as CPython's PyCode_Addr2Line gives
// it for byte offset 2 * instruction); a negative index (a frame that has not started: 3.11's
// prev_instr is one before the first instruction) is the first line.
LineLookup LineOfInstruction(std::span<const uint8_t> table, int32_t first_line,
                             int64_t instruction);

}  // namespace stacksym::interp::python
