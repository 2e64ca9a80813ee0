// The DWARF of one object file (a binary, a separate debug file, a dwz supplementary file or a
// .dwo): its sections, the list of units (headers only, found by a cheap scan), lazily read
// unit-DIE attributes (bases, comp_dir, line table offset), cached abbreviation tables, and
// the resolution of attribute values: strings, addresses, references and range lists.
//
// Thread-safety: Abbrevs(), ReadUnitDie() and the resolution functions (names, strings,
// addresses, ranges) may be called from several threads (DebugInfoSource parses units and
// resolves their names concurrently); ScanUnits() and the setters are single-threaded.
//
// Everything points into the section bytes (the mapped file or the ELF layer's decompressed
// copies), which must outlive this object.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dwarf/abbrev_table.h"
#include "dwarf/address_range.h"
#include "dwarf/dwarf_form.h"
#include "stacksym/result.h"

namespace stacksym::dwarf {

struct DwarfSections {
  std::span<const uint8_t> info;
  std::span<const uint8_t> abbrev;
  std::span<const uint8_t> str;
  std::span<const uint8_t> line;
  std::span<const uint8_t> line_str;
  std::span<const uint8_t> str_offsets;
  std::span<const uint8_t> addr;
  std::span<const uint8_t> ranges;
  std::span<const uint8_t> rnglists;
  std::span<const uint8_t> aranges;
  std::span<const uint8_t> loc;       // DWARF 2-4 location lists (variable table only)
  std::span<const uint8_t> loclists;  // DWARF 5 location lists (variable table only)
};

struct UnitInfo {
  // From the header.
  uint64_t offset = 0;      // of the unit header in .debug_info
  uint64_t end = 0;         // one past the unit
  uint64_t die_offset = 0;  // of the unit DIE
  uint64_t die_end = 0;     // one past the unit DIE (once read)
  uint64_t abbrev_offset = 0;
  uint64_t dwo_id = 0;  // DWARF 5 skeleton/split header, or DW_AT_GNU_dwo_id
  FormContext ctx;
  uint8_t unit_type = 0;  // DW_UT_*; DWARF 2–4 compile units report DW_UT_compile

  // From the unit DIE (valid once die_read).
  bool die_read = false;
  bool die_ok = false;
  uint16_t tag = 0;
  uint64_t low_pc = 0;  // base address for range lists
  bool has_str_offsets_base = false;
  uint64_t str_offsets_base = 0;
  uint64_t addr_base = 0;
  bool has_rnglists_base = false;
  uint64_t rnglists_base = 0;
  uint64_t gnu_ranges_base = 0;
  uint64_t loclists_base = 0;  // DW_AT_loclists_base
  bool has_stmt_list = false;
  uint64_t stmt_list = 0;
  std::string_view comp_dir;
  std::string_view name;
  std::string_view dwo_name;
  bool has_dwo_name = false;  // DW_AT_dwo_name / DW_AT_GNU_dwo_name present (even if unread)
  bool has_dwo_id = false;

  // Where addrx values of this unit are read: the file's own .debug_addr, or for a split unit
  // the skeleton's (set by the owner of the skeleton).
  std::span<const uint8_t> addr_section;
  bool addr_overridden = false;
  // Likewise .debug_ranges for a DWARF 4 split unit (the skeleton's, at gnu_ranges_base).
  std::span<const uint8_t> ranges_section;
  bool ranges_overridden = false;

  bool is_type_unit() const { return unit_type == 0x02 || unit_type == 0x06; }
  bool known_version() const;  // DWARF 2-5
};

// A DIE reference: a .debug_info offset in a given file.
struct DieRef {
  class DwarfFile* file = nullptr;
  uint64_t offset = 0;
};

class DwarfFile {
 public:
  // `is_dwo`: the sections are a split-DWARF object's (*.dwo sections).
  DwarfFile(DwarfSections sections, bool is_dwo = false);

  // The header of the unit at `offset` of `info` (a .debug_info section, or the part of it
  // that is already decompressed). A unit of unknown version comes back with
  // !known_version(); its `end` still lets a scan step over it.
  static Result<UnitInfo> ParseUnitHeader(std::span<const uint8_t> info, uint64_t offset);
  // Where the unit at `offset` ends, from its length field alone; 0 when that field is not
  // (entirely) in `info` or is invalid.
  static uint64_t UnitEnd(std::span<const uint8_t> info, uint64_t offset);

  // Reads all unit headers of .debug_info (a jump from header to header, no DIE parsing).
  // Units after a corrupt header are dropped and the error is returned together with the
  // units that were fine (callers usually continue with those).
  Result<void> ScanUnits();
  // The same scan while .debug_info streams in, front to back (UnitCache::AnswerWhileStreaming):
  // StartUnitScan reserves room for `capacity` units; AddScannedUnit appends a unit (of a
  // known version) once its header is final, in offset order; from then on FindUnit finds it
  // on any thread, and it does not move until FinishUnitScan. Null when the room is full.
  // FinishUnitScan(from) scans the rest of the (now whole) section from offset `from`, as
  // ScanUnits would have; units may move then. Appending is single-threaded.
  void StartUnitScan(size_t capacity);
  UnitInfo* AddScannedUnit(const UnitInfo& unit);
  Result<void> FinishUnitScan(uint64_t from);
  // Whether a DIE may refer to a DIE of another unit of this file (DW_FORM_ref_addr, and
  // DW_FORM_indirect and DW_FORM_ref_sig8, which may stand for one): any abbreviation of
  // .debug_abbrev using them, or abbreviations that do not parse. Without them, reading a
  // unit's DIEs reads that unit's bytes only (and the supplementary file's).
  bool MayReferAcrossUnits() const;

  const DwarfSections& sections() const { return sections_; }
  std::vector<UnitInfo>& units() { return units_; }
  bool is_dwo() const { return is_dwo_; }
  void set_supplementary(DwarfFile* alt) { alt_ = alt; }
  // Location-list sections are read only by the variable table, so loaded only for it.
  void set_location_lists(std::span<const uint8_t> loc, std::span<const uint8_t> loclists) {
    sections_.loc = loc;
    sections_.loclists = loclists;
  }
  DwarfFile* supplementary() const { return alt_; }

  // Index of the unit containing .debug_info offset `offset`, or -1.
  int FindUnit(uint64_t offset) const;

  // The abbreviation table of a unit (cached by offset and unit shape).
  Result<const AbbrevTable*> Abbrevs(const UnitInfo& unit);

  // Reads the unit DIE's attributes into `unit` (once).
  Result<void> ReadUnitDie(UnitInfo& unit);
  // The same on a private copy of a unit header, leaving name, comp_dir and dwo_name unread
  // (.debug_str may still be being decompressed): enough to walk the unit's functions.
  Result<void> ReadUnitDieWithoutStrings(UnitInfo& unit);

  // Resolution of attribute values in the context of `unit`.
  bool String(const UnitInfo& unit, const AttrValue& v, std::string_view* out) const;
  bool Address(const UnitInfo& unit, const AttrValue& v, uint64_t* out) const;
  bool Reference(const UnitInfo& unit, const AttrValue& v, DieRef* out);
  // The address ranges of a DIE, from low_pc/high_pc or ranges (appended to `out`).
  // Attributes the DIE lacks are passed as nullptr.
  Result<void> DieRanges(const UnitInfo& unit, const AttrValue* low_pc, const AttrValue* high_pc,
                         const AttrValue* ranges, std::vector<AddressRange>* out) const;

  // The ranges of the unit DIE itself (DW_AT_low_pc/high_pc or DW_AT_ranges).
  Result<void> UnitRanges(UnitInfo& unit, std::vector<AddressRange>* out);

  size_t memory_bytes() const;

 private:
  Result<void> ReadUnitDieOnce(UnitInfo& unit, bool strings);
  Result<void> ReadRangeList(const UnitInfo& unit, uint64_t offset, bool rnglists,
                             std::vector<AddressRange>* out) const;
  bool ReadAddrIndex(const UnitInfo& unit, uint64_t index, uint64_t* out) const;

  DwarfSections sections_;
  bool is_dwo_ = false;
  DwarfFile* alt_ = nullptr;
  std::vector<UnitInfo> units_;
  bool scanning_ = false;           // between StartUnitScan and FinishUnitScan
  std::atomic<size_t> scanned_{0};  // units_ published while scanning_
  size_t abbrev_slots_ = 0;         // of unit_abbrevs_
  mutable std::mutex abbrevs_mu_;   // units may be parsed on several threads (Prefetch)
  std::mutex unit_die_mu_;          // first reads of unit DIEs
  std::unordered_map<uint64_t, std::unique_ptr<AbbrevTable>> abbrevs_;
  // Per unit of units_ (sized by ScanUnits): its table once known, read without abbrevs_mu_.
  std::unique_ptr<std::atomic<const AbbrevTable*>[]> unit_abbrevs_;
};

}  // namespace stacksym::dwarf
