// The variables of a DWARF file that live at fixed addresses (globals, statics in functions and
// namespaces, class statics), as one sorted address → variable DIE table, for
// llvm-symbolizer's DATA answers (the declaration's file:line, as LLVM 15+ gives it).
//
// Which DIEs count, as LLVM's DWARFUnit::getVariableForAddress decides: every
// DW_TAG_variable of a unit (outside type DIEs, at any depth: statics in functions count)
// whose DW_AT_location is an expression `DW_OP_addr A` or `DW_OP_addrx i`, optionally followed
// by `DW_OP_plus_uconst N`, and nothing else — the expression itself or the first such entry
// of its location list (TLS variables, which use DW_OP_form_tls_address, and locals on the
// stack do not count; a local that an optimiser keeps in a global for a while does). It covers [A,
// A + size of its DW_AT_type) — 1 byte when the DIE itself has no type (definitions that name their
// declaration through DW_AT_specification) or its size is unknown. Within a unit the entry
// with the greatest start at or below an address answers it (a later DIE with the same start
// replaces an earlier one; children before their parent); across units the first unit (in
// .debug_info order) whose entry covers the address wins.
//
// Built once per file, on the first request, by one pass over every unit that reads only the
// attributes of variables and jumps over type subtrees with DW_AT_sibling. Bad DWARF never
// fails the table: a unit that cannot be read contributes the variables read before the
// damage.
//
//   VariableTable table = VariableTable::Build(file);
//   if (const VariableTable::Entry* v = table.Find(address)) FindDecl(file, v->die_offset, ...);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/byte_cursor.h"
#include "dwarf/abbrev_table.h"
#include "dwarf/address_index.h"
#include "dwarf/address_range.h"
#include "dwarf/die_chain.h"
#include "dwarf/dwarf_file.h"

namespace stacksym::dwarf {

class VariableTable {
 public:
  struct Entry {
    uint64_t low = 0;
    uint64_t high = 0;          // exclusive
    uint64_t die_offset = 0;    // of the DIE that has the location, in .debug_info
    DwarfFile* file = nullptr;  // that DIE's: the one built from, or a split unit's .dwo/.dwp
  };

  // For unit `index` of the file: the split unit (its file and unit, with the skeleton's
  // addresses set: DebugInfoSource::OpenSplitUnit) whose DIEs replace the skeleton's, or
  // {nullptr, nullptr} to read the unit itself.
  using SplitUnitOf = std::function<std::pair<DwarfFile*, UnitInfo*>(size_t index)>;

  // Reads every non-type unit of `file` (the units must have been scanned), each skeleton's
  // split unit in its place. Location lists are read from each file's `loc`/`loclists`
  // sections (DwarfFile::set_location_lists; a .dwo's are loaded with it).
  static VariableTable Build(DwarfFile& file, const SplitUnitOf& split_unit_of = {});

  // The variable whose storage holds `address`, or nullptr.
  const Entry* Find(uint64_t address) const;

  std::span<const Entry> entries() const { return entries_; }
  size_t memory_bytes() const {
    return entries_.capacity() * sizeof(Entry) + segments_.capacity() * sizeof(AddressSegment) +
           index_.memory_bytes();
  }

 private:
  std::vector<Entry> entries_;  // in unit order, disjoint within each unit
  std::vector<AddressSegment> segments_;
  AddressIndex index_;  // over segments_
};

// Shared with the frame-locals reader.

// A DIE opened for reading: the cursor stands at its first attribute value.
struct OpenedDie {
  UnitInfo* unit = nullptr;
  const AbbrevTable* abbrevs = nullptr;
  const Abbrev* abbrev = nullptr;
  ByteCursor cursor;
};
bool OpenDie(DwarfFile& file, uint64_t offset, OpenedDie* out);

// LLVM's DWARFFormValue::getAsUnsignedConstant: constants and flags, but not sdata.
std::optional<uint64_t> AsUnsignedConstant(const AttrValue& v);

// Calls use(expression) for the expression of a DW_AT_location (a block), or for each entry
// of its location list in order (.debug_loc, .debug_loclists by offset or loclistx), until it
// returns true; returns whether one did.
bool ForEachLocationExpression(DwarfFile& file, const UnitInfo& unit, const AttrValue& location,
                               const std::function<bool(std::span<const uint8_t>)>& use);

// LLVM's DWARFDie::getTypeSize: DW_AT_byte_size, else pointers and references (the pointer
// size; pointers to member functions twice that), qualifiers and typedefs (their type),
// arrays (the element's size times each subrange's count or upper - lower + 1, LLVM's sign
// extension of DW_FORM_data1/2/4 bounds and unsigned wrap-around included), else DW_AT_type's.
// Sizes are remembered per type DIE; cycles and long chains give nullopt.
class TypeSizer {
 public:
  explicit TypeSizer(DwarfFile& file) : file_(file) {}
  std::optional<uint64_t> Size(uint64_t type_die_offset, uint8_t pointer_size);  // in `file`
  // A type in any file: `file`, or the supplementary file its references lead to.
  std::optional<uint64_t> Size(DieRef type, uint8_t pointer_size);

 private:
  std::optional<uint64_t> TypeSize(DieRef type, uint8_t pointer_size, int depth);
  std::optional<uint64_t> ComputeTypeSize(DieRef ref, uint8_t pointer_size, int depth);
  void MultiplyBySubranges(OpenedDie& array, uint64_t* size);

  DwarfFile& file_;
  // Per file, type DIE → size.
  std::unordered_map<const DwarfFile*, std::unordered_map<uint64_t, std::optional<uint64_t>>>
      sizes_;
};

}  // namespace stacksym::dwarf
