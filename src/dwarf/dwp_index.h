// DwpIndex — the .debug_cu_index of a split-DWARF package (.dwp): which byte range of each
// *.dwo section belongs to the compilation unit with a given DWO id.
//
// Both layouts are read: the DWARF 4 GNU extension (index version 2, as written by binutils
// `dwp` and llvm-dwp for DWARF 4) and DWARF 5 (version 5). The hash table is copied out and
// validated once in Parse(), so Find() is a bounded probe that cannot fail or loop.
//
//   Result<std::span<const uint8_t>> bytes = dwp->SectionData(".debug_cu_index");
//   Result<DwpIndex> index = DwpIndex::Parse(*bytes);
//   if (std::optional<DwpUnitSections> unit = index->Find(skeleton_dwo_id)) {
//     info = whole_info.subspan(unit->info.offset, unit->info.size);   // caller bounds-checks
//   }
//
// A section the index has no column for keeps {0, 0}: the unit has no contribution there.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::dwarf {

struct DwpContribution {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// Contributions of one unit into the .dwp's *.dwo sections. Version 2's .debug_loc.dwo maps to
// `loclists`; its .debug_types.dwo and .debug_macinfo.dwo columns are not kept.
struct DwpUnitSections {
  DwpContribution info, abbrev, line, str_offsets, rnglists, loclists, macro;
};

class DwpIndex {
 public:
  // An empty span gives an empty index. Errors: truncated tables, a slot count that is not a
  // power of two, a row number past the unit count, a signature listed twice.
  static Result<DwpIndex> Parse(std::span<const uint8_t> cu_index);

  // Hash-table lookup by DWO id, as the DWARF 5 standard (7.3.5.3) prescribes.
  std::optional<DwpUnitSections> Find(uint64_t dwo_id) const;

  uint32_t version() const { return version_; }  // 2 or 5; 0 for an empty index
  size_t unit_count() const { return units_.size(); }
  size_t slot_count() const { return signatures_.size(); }
  // Every (DWO id, contributions) pair, in slot order (for tools and tests).
  std::vector<std::pair<uint64_t, DwpUnitSections>> Entries() const;

 private:
  uint32_t version_ = 0;
  std::vector<uint64_t> signatures_;    // per slot
  std::vector<uint32_t> rows_;          // per slot: 1-based row into units_, 0 = empty slot
  std::vector<DwpUnitSections> units_;  // per row
};

}  // namespace stacksym::dwarf
