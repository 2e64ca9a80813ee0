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
#include <span>
#include <vector>

#include "dwarf/address_index.h"
#include "dwarf/address_range.h"
#include "dwarf/dwarf_file.h"

namespace stacksym::dwarf {

class VariableTable {
 public:
  struct Entry {
    uint64_t low = 0;
    uint64_t high = 0;        // exclusive
    uint64_t die_offset = 0;  // of the DIE that has the location, in .debug_info
  };

  // Reads every non-type unit of `file` (the units must have been scanned). Location lists are
  // read from the file's `loc`/`loclists` sections (DwarfFile::set_location_lists).
  static VariableTable Build(DwarfFile& file);

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

// Where a variable was declared: DW_AT_decl_file and DW_AT_decl_line, each found on the DIE or
// else by following DW_AT_abstract_origin / DW_AT_specification (LLVM's findRecursively order).
struct DeclAttrs {
  bool has_file = false;
  uint64_t file_index = 0;              // into the line table of `file_unit`
  const UnitInfo* file_unit = nullptr;  // the unit whose DIE held DW_AT_decl_file
  bool file_implicit_const = false;     // DW_AT_decl_file was DW_FORM_implicit_const
  uint64_t line = 0;                    // 0: none
};
bool FindDecl(DwarfFile& file, uint64_t die_offset, DeclAttrs* out);

}  // namespace stacksym::dwarf
