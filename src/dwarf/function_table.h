// The functions of one unit as a compact inline tree: one node per DW_TAG_subprogram and
// DW_TAG_inlined_subroutine that has code (with the index of the enclosing one), and a
// flattened, sorted address → innermost-node table. Built by one pass over the unit that only
// reads function subtrees: at the unit's top level it descends into namespaces and jumps over
// everything else (types, variables, declarations) with DW_AT_sibling; inside functions it
// jumps over parameters, variables and call sites. Names are not read here (most are never
// asked for): a node keeps its DIE offset.
//
// Given the addresses a batch wants from the unit, Build() walks only the subprograms and
// inlined subtrees whose ranges hold one of them and jumps over the others (most of a unit,
// for a profile's frames). Such a table answers those addresses exactly; for any other
// address MayBeIncomplete(Find(address)) says whether a full Build() is needed first.
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
#include "dwarf/function_run.h"
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
  // What the walk saw of the DIE's own attributes, so that the name of an instance whose
  // abstract origin's is known already is found without reading the DIE again (an index
  // build names every node: most are inlined instances of functions named before).
  uint8_t flags = 0;                // kDescribesItself | kOriginElsewhere
  uint64_t origin = 0;              // DW_AT_abstract_origin in this file's .debug_info (0: none)
  uint32_t call_discriminator = 0;  // DW_AT_GNU_discriminator, saturated
  // It has a name, a linkage name, a specification or a declaration of its own.
  static constexpr uint8_t kDescribesItself = 1;
  // Its abstract origin is in another file (supplementary), or could not be resolved.
  static constexpr uint8_t kOriginElsewhere = 2;
};

class FunctionTable {
 public:
  FunctionTable() = default;
  // `wanted`: sorted addresses to answer (empty: every function of the unit).
  static Result<FunctionTable> Build(DwarfFile& file, UnitInfo& unit,
                                     std::span<const uint64_t> wanted = {});

  // A table that knows no function yet and says so: every Find() is kNoId, which
  // MayBeIncomplete() flags, so a lookup builds the full table first. What a unit's table
  // becomes once an index build has encoded it (DebugInfoSource::ReleaseUnitFunctions).
  static FunctionTable Unbuilt() {
    FunctionTable table;
    table.coverage_ = Coverage::kShallow;
    return table;
  }

  // How much of the unit the table describes. kFull: every function. kShallow (built for
  // `wanted`): exact for those addresses; elsewhere Find() may say kNoId or kIncomplete where
  // a full table knows a function. kDeep (likewise): kNoId is final, kIncomplete is not.
  enum class Coverage : uint8_t { kFull, kShallow, kDeep };
  Coverage coverage() const { return coverage_; }
  // Whether Find(address) == id may be an artefact of a partial table.
  bool MayBeIncomplete(int32_t id) const {
    return id == kIncomplete || (id == kNoId && coverage_ == Coverage::kShallow);
  }

  // Innermost node covering `address`; kNoId (-1) when none, kIncomplete (-2) when the
  // address is in code a partial table skipped (a full Build() knows its function).
  static constexpr int32_t kIncomplete = -2;
  int32_t Find(uint64_t address) const { return FindSegment(segments_, index_, address); }
  std::span<const FunctionNode> nodes() const { return nodes_; }
  std::span<const AddressSegment> segments() const { return segments_; }
  // The code of the out-of-line function around `address` (OutermostRun's one rule): where a
  // function only DWARF names starts and ends, as a symbol would say.
  FunctionRun OutermostRun(uint64_t address) const;
  size_t memory_bytes() const {
    return nodes_.capacity() * sizeof(FunctionNode) +
           segments_.capacity() * sizeof(AddressSegment) + index_.memory_bytes();
  }

 private:
  // Reads the subtree of the subroutine DIE at the cursor into nodes_ and `ranges`, leaving
  // the cursor after it.
  Result<void> WalkSubroutine(ByteCursor& c, const AbbrevTable& abbrevs,
                              std::span<const uint64_t> wanted, std::vector<TreeRange>* ranges);

  // One pass over the unit. Shallow: top-level subprograms that hold no wanted address are
  // jumped over. Shallow and deep: inlined subtrees that hold none are jumped over.
  static Result<FunctionTable> Walk(DwarfFile& file, UnitInfo& unit,
                                    std::span<const uint64_t> wanted, Coverage mode);

  DwarfFile* file_ = nullptr;
  UnitInfo* unit_ = nullptr;
  Coverage coverage_ = Coverage::kFull;
  std::vector<FunctionNode> nodes_;
  std::vector<AddressSegment> segments_;
  AddressIndex index_;  // over segments_
};

}  // namespace stacksym::dwarf
