// The functions of one unit as a compact inline tree: one node per DW_TAG_subprogram and
// DW_TAG_inlined_subroutine that has code (with the index of the enclosing one), and a
// flattened, sorted address → innermost-node table. Built by one pass over the unit that only
// reads function subtrees: at the unit's top level it descends into namespaces and jumps over
// everything else (types, variables, declarations) with DW_AT_sibling; inside functions it
// jumps over parameters, variables and call sites. Names are not read here (most are never
// asked for): a node keeps its DIE offset.
//
//   Result<FunctionTable> t = FunctionTable::Build(file, unit);
//   for (int32_t n = t->Find(addr); n >= 0; n = t->nodes()[n].parent) ...
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dwarf/address_range.h"
#include "dwarf/dwarf_file.h"
#include "stacksym/result.h"

namespace stacksym::dwarf {

// 24 bytes, plain data (persistable as is).
struct FunctionNode {
  uint64_t die_offset = 0;  // in the unit's .debug_info
  int32_t parent = -1;      // enclosing subprogram/inlined node, -1 at the top
  uint32_t call_file = 0;   // inlined only: where the call stands in the parent
  uint32_t call_line = 0;
  uint16_t call_column = 0;  // saturated at 65535
  uint8_t inlined = 0;       // 1 for DW_TAG_inlined_subroutine
  uint8_t reserved = 0;
};

class FunctionTable {
 public:
  FunctionTable() = default;
  static Result<FunctionTable> Build(DwarfFile& file, UnitInfo& unit);

  // Innermost node covering `address`, or -1.
  int32_t Find(uint64_t address) const { return FindSegment(segments_, address); }
  std::span<const FunctionNode> nodes() const { return nodes_; }
  std::span<const AddressSegment> segments() const { return segments_; }
  size_t memory_bytes() const {
    return nodes_.capacity() * sizeof(FunctionNode) + segments_.capacity() * sizeof(AddressSegment);
  }

 private:
  // Reads the subtree of the subroutine DIE at the cursor into nodes_ and `ranges`, leaving
  // the cursor after it.
  Result<void> WalkSubroutine(ByteCursor& c, const AbbrevTable& abbrevs,
                              std::vector<TreeRange>* ranges);

  DwarfFile* file_ = nullptr;
  UnitInfo* unit_ = nullptr;
  std::vector<FunctionNode> nodes_;
  std::vector<AddressSegment> segments_;
};

}  // namespace stacksym::dwarf
