// Builds small DWARF sections byte by byte for unit tests: a writer with LEB128 and fixed-size
// fields, and a ready-made compile unit with one function and one inlined call.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "dwarf/dwarf_file.h"

namespace stacksym::testing {

class ByteWriter {
 public:
  ByteWriter& U8(uint64_t v) { return Fixed(v, 1); }
  ByteWriter& U16(uint64_t v) { return Fixed(v, 2); }
  ByteWriter& U32(uint64_t v) { return Fixed(v, 4); }
  ByteWriter& U64(uint64_t v) { return Fixed(v, 8); }
  ByteWriter& Fixed(uint64_t v, int n);
  ByteWriter& Uleb(uint64_t v);
  ByteWriter& Sleb(int64_t v);
  ByteWriter& Str(std::string_view s);  // with NUL
  ByteWriter& Raw(std::span<const uint8_t> bytes);
  // Overwrites a 4-byte field written earlier.
  void Patch32(size_t at, uint32_t v);
  size_t size() const { return bytes_.size(); }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// A compile unit (DWARF `version`, 32-bit, 8-byte addresses) with:
//   main      [0x1000, 0x1100)  "main" (DW_FORM_string)
//     inlined "helper" [0x1010, 0x1020) called from file 1 line 7 column 3
//       inlined "leaf"  [0x1014, 0x1018) called from file 1 line 42 column 9
// and a line table with rows 0x1000 → line 10, 0x1010 → line 20, 0x1014 → line 30, end 0x1100.
struct TinyDwarf {
  std::vector<uint8_t> info, abbrev, line, str;
  // Offsets of interesting fields inside `info`, for corruption tests.
  size_t helper_origin_field = 0;  // the DW_FORM_ref4 abstract_origin of "helper"'s concrete DIE
  size_t helper_abstract_die = 0;  // unit-relative offset of helper's abstract DIE
  size_t leaf_abstract_die = 0;
  dwarf::DwarfSections sections() const;
};
// `without_main`: no "main" DIE, "helper" sits right under the unit (invalid DWARF: an
// inlined subroutine no subprogram encloses).
TinyDwarf BuildTinyDwarf(int version, bool without_main = false);

}  // namespace stacksym::testing
