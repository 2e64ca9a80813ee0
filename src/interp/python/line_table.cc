#include "interp/python/line_table.h"

#include <cstddef>

namespace stacksym::interp::python {

namespace {

// Entry kinds (bits 3-6 of the first byte).
constexpr int kNoColumns = 13;   // line delta as a signed varint, no columns
constexpr int kLong = 14;        // line delta, end line, columns as varints
constexpr int kNoLocation = 15;  // no line
// Lines beyond this are damage, not code: CPython's are C ints, and files are far shorter.
constexpr int64_t kMaxLine = int64_t{1} << 30;

// A varint: 6-bit chunks, least significant first, 0x40 set while more follow. Reads at most
// what a 32-bit value needs; false when the table ends inside it or it is longer.
bool ReadVarint(std::span<const uint8_t> table, size_t* pos, uint32_t* out) {
  uint32_t value = 0;
  for (int shift = 0; shift < 36; shift += 6) {
    if (*pos >= table.size()) return false;
    uint8_t b = table[(*pos)++];
    if (b & 0x80) return false;  // the next entry began: cut short
    value |= static_cast<uint32_t>(b & 0x3f) << shift;
    if ((b & 0x40) == 0) {
      *out = value;
      return true;
    }
  }
  return false;
}

// The line delta of the entry whose first byte is at *pos; *pos moves past what was read.
bool LineDelta(std::span<const uint8_t> table, size_t* pos, int kind, int64_t* delta) {
  *delta = 0;
  if (kind == kNoColumns || kind == kLong) {
    uint32_t raw = 0;
    if (!ReadVarint(table, pos, &raw)) return false;
    int64_t magnitude = raw >> 1;
    *delta = (raw & 1) ? -magnitude : magnitude;
  } else if (kind >= 10 && kind <= 12) {
    *delta = kind - 10;  // one-line forms: 0, 1 or 2 lines on
  }
  return true;
}

}  // namespace

bool ForEachLocation(std::span<const uint8_t> table, int32_t first_line,
                     const std::function<bool(const LocationRange&)>& range) {
  int64_t line = first_line;
  uint64_t start = 0;
  size_t pos = 0;
  while (pos < table.size()) {
    uint8_t first = table[pos++];
    if ((first & 0x80) == 0) return false;
    int kind = (first >> 3) & 0x0f;
    uint32_t length = (first & 7) + 1u;
    int64_t delta = 0;
    if (!LineDelta(table, &pos, kind, &delta)) return false;
    line += delta;
    if (line > kMaxLine || line < -kMaxLine) return false;
    // Columns and the like: skipped up to the next entry's first byte.
    while (pos < table.size() && (table[pos] & 0x80) == 0) ++pos;
    LocationRange r;
    r.start = static_cast<uint32_t>(start);
    start += length;
    if (start > UINT32_MAX) return false;
    r.end = static_cast<uint32_t>(start);
    r.line = kind == kNoLocation ? -1 : static_cast<int32_t>(line);
    if (!range(r)) return true;
  }
  return true;
}

LineLookup LineOfInstruction(std::span<const uint8_t> table, int32_t first_line,
                             int64_t instruction) {
  if (instruction < 0) return {LineStatus::kFound, first_line};
  LineLookup result{LineStatus::kPastTable, 0};
  bool intact = ForEachLocation(table, first_line, [&](const LocationRange& r) {
    if (static_cast<uint64_t>(instruction) >= r.end) return true;
    result = r.line < 0 ? LineLookup{LineStatus::kNoLocation, 0}
                        : LineLookup{LineStatus::kFound, r.line};
    return false;
  });
  if (!intact && result.status == LineStatus::kPastTable) result.status = LineStatus::kCorrupt;
  return result;
}

}  // namespace stacksym::interp::python
