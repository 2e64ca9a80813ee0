#include "dwarf/dwarf_file.h"

#include <algorithm>
#include <atomic>

#include "base/byte_cursor.h"
#include "dwarf/die_reader.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf/dwarf_error.h"

namespace stacksym::dwarf {

namespace {

constexpr const char* kInfo = ".debug_info";
uint64_t Tombstone(uint8_t address_size) {
  return address_size >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * address_size)) - 1;
}

}  // namespace

DwarfFile::DwarfFile(DwarfSections sections, bool is_dwo) : sections_(sections), is_dwo_(is_dwo) {}

namespace {

// A unit's initial length: 4 bytes, or 0xffffffff and 8 bytes (64-bit DWARF). Values
// 0xfffffff0-0xfffffffe of the 4-byte form are reserved: the caller rejects them.
uint64_t ReadUnitLength(ByteCursor& c, uint8_t* offset_size) {
  uint64_t length = c.U32();
  *offset_size = 4;
  if (length == 0xffffffffu) {
    length = c.U64();
    *offset_size = 8;
  }
  return length;
}

}  // namespace

Result<UnitInfo> DwarfFile::ParseUnitHeader(std::span<const uint8_t> info, uint64_t offset) {
  ByteCursor c(info);
  c.Seek(static_cast<size_t>(offset));
  UnitInfo u;
  u.offset = offset;
  uint64_t length = ReadUnitLength(c, &u.ctx.offset_size);
  if (length >= 0xfffffff0u && u.ctx.offset_size == 4) {
    return Malformed(kInfo, offset, "reserved unit length " + HexU64(length));
  }
  if (!c.ok() || length > c.remaining()) {
    return Malformed(kInfo, offset, "unit extends past the end of the section");
  }
  u.end = c.offset() + length;
  ByteCursor h = c.Sub(static_cast<size_t>(length));
  u.ctx.version = h.U16();
  if (u.ctx.version < 2 || u.ctx.version > 5) return u;  // unknown: `end` steps over it
  if (u.ctx.version >= 5) {
    u.unit_type = h.U8();
    u.ctx.address_size = h.U8();
    u.abbrev_offset = h.UN(u.ctx.offset_size);
    if (u.unit_type == DW_UT_skeleton || u.unit_type == DW_UT_split_compile) {
      u.dwo_id = h.U64();
      u.has_dwo_id = true;
    } else if (u.unit_type == DW_UT_type || u.unit_type == DW_UT_split_type) {
      h.U64();
      h.UN(u.ctx.offset_size);
    }
  } else {
    u.unit_type = DW_UT_compile;
    u.abbrev_offset = h.UN(u.ctx.offset_size);
    u.ctx.address_size = h.U8();
  }
  if (!h.ok()) return Malformed(kInfo, offset, "truncated unit header");
  if (u.ctx.address_size != 4 && u.ctx.address_size != 8 && u.ctx.address_size != 2) {
    return Malformed(kInfo, offset,
                     "unsupported address size " + std::to_string(u.ctx.address_size));
  }
  u.die_offset = u.offset + (h.offset() + (u.ctx.offset_size == 8 ? 12 : 4));
  return u;
}

uint64_t DwarfFile::UnitEnd(std::span<const uint8_t> info, uint64_t offset) {
  ByteCursor c(info);
  c.Seek(static_cast<size_t>(offset));
  uint8_t offset_size = 4;
  uint64_t length = ReadUnitLength(c, &offset_size);
  if (length >= 0xfffffff0u && offset_size == 4) return 0;  // reserved
  if (!c.ok() || length > ~uint64_t{0} - c.offset()) return 0;
  return c.offset() + length;
}

bool UnitInfo::known_version() const { return ctx.version >= 2 && ctx.version <= 5; }

Result<void> DwarfFile::ScanUnits() { return FinishUnitScan(0); }

void DwarfFile::StartUnitScan(size_t capacity) {
  units_.clear();
  units_.reserve(capacity);
  // The tables' slots too: while the scan streams in, DIEs are read on several threads.
  abbrev_slots_ = capacity;
  unit_abbrevs_ = std::make_unique<std::atomic<const AbbrevTable*>[]>(capacity);
  scanned_.store(0, std::memory_order_relaxed);
  scanning_ = true;
}

UnitInfo* DwarfFile::AddScannedUnit(const UnitInfo& unit) {
  if (!scanning_ || units_.size() == units_.capacity()) return nullptr;
  units_.push_back(unit);
  scanned_.store(units_.size(), std::memory_order_release);
  return &units_.back();
}

Result<void> DwarfFile::FinishUnitScan(uint64_t offset) {
  scanning_ = false;
  const UnitInfo* before = units_.data();
  Result<void> result;
  while (offset < sections_.info.size()) {
    Result<UnitInfo> u = ParseUnitHeader(sections_.info, offset);
    if (!u) {
      result = std::move(u).error();
      break;
    }
    offset = u->end;
    if (u->known_version()) units_.push_back(*u);
  }
  // Tables cached per unit stay valid where no unit moved.
  if (unit_abbrevs_ == nullptr || units_.data() != before || abbrev_slots_ < units_.size()) {
    abbrev_slots_ = units_.size();
    unit_abbrevs_ = std::make_unique<std::atomic<const AbbrevTable*>[]>(abbrev_slots_);
  }
  return result;
}

int DwarfFile::FindUnit(uint64_t offset) const {
  // While a scan streams in, only the units it published (the vector does not move then).
  const UnitInfo* begin = units_.data();
  const UnitInfo* end =
      begin + (scanning_ ? scanned_.load(std::memory_order_acquire) : units_.size());
  const UnitInfo* it = std::upper_bound(begin, end, offset,
                                        [](uint64_t o, const UnitInfo& u) { return o < u.offset; });
  if (it == begin) return -1;
  --it;
  if (offset >= it->end || offset < it->die_offset) return -1;
  return static_cast<int>(it - begin);
}

bool DwarfFile::MayReferAcrossUnits() const {
  ByteCursor c(sections_.abbrev);
  // Abbreviation tables one after another, each ended by a 0 code.
  while (c.remaining() > 0) {
    if (c.Uleb128() == 0) continue;  // the end of a table (or padding between tables)
    c.Uleb128();                     // tag
    c.U8();                          // children
    while (c.ok()) {
      uint64_t name = c.Uleb128(), form = c.Uleb128();
      if (name == 0 && form == 0) break;
      if (form == DW_FORM_ref_addr || form == DW_FORM_indirect || form == DW_FORM_ref_sig8) {
        return true;
      }
      if (form == DW_FORM_implicit_const) c.Sleb128();
    }
    if (!c.ok()) return true;
  }
  return !c.ok();
}

Result<const AbbrevTable*> DwarfFile::Abbrevs(const UnitInfo& unit) {
  // A unit of this file finds its table without the lock: every DIE read asks for it, on
  // several threads at once when an index is built.
  std::atomic<const AbbrevTable*>* cached = nullptr;
  if (unit_abbrevs_ != nullptr && &unit >= units_.data() && &unit < units_.data() + abbrev_slots_) {
    cached = &unit_abbrevs_[static_cast<size_t>(&unit - units_.data())];
    if (const AbbrevTable* table = cached->load(std::memory_order_acquire)) return table;
  }
  uint64_t key = (unit.abbrev_offset << 8) | unit.ctx.address_size |
                 (unit.ctx.offset_size == 8 ? 0x80 : 0) | (unit.ctx.version <= 2 ? 0x40 : 0);
  {
    std::lock_guard<std::mutex> lock(abbrevs_mu_);
    auto it = abbrevs_.find(key);
    if (it != abbrevs_.end()) {
      if (cached != nullptr) cached->store(it->second.get(), std::memory_order_release);
      return it->second.get();
    }
  }
  // Parsed outside the lock; if another thread got there first, its table is kept.
  Result<AbbrevTable> table = AbbrevTable::Parse(sections_.abbrev, unit.abbrev_offset, unit.ctx);
  if (!table) return std::move(table).error();
  auto owned = std::make_unique<AbbrevTable>(std::move(*table));
  std::lock_guard<std::mutex> lock(abbrevs_mu_);
  auto [it, inserted] = abbrevs_.emplace(key, std::move(owned));
  if (cached != nullptr) cached->store(it->second.get(), std::memory_order_release);
  return it->second.get();
}

Result<void> DwarfFile::ReadUnitDie(UnitInfo& unit) {
  // Name resolution on several threads can reach the same (other) unit through references:
  // the first reader fills the fields under the lock, the flag publishes them.
  if (!std::atomic_ref<bool>(unit.die_read).load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(unit_die_mu_);
    if (!unit.die_read) {
      Result<void> r = ReadUnitDieOnce(unit, true);
      std::atomic_ref<bool>(unit.die_read).store(true, std::memory_order_release);
      if (!r) return r;
    }
  }
  if (unit.die_ok) return {};
  return Malformed(kInfo, unit.die_offset, "bad unit DIE");
}

Result<void> DwarfFile::ReadUnitDieWithoutStrings(UnitInfo& unit) {
  Result<void> r = ReadUnitDieOnce(unit, false);
  unit.die_read = true;  // a private copy: no other thread sees it
  return r;
}

Result<void> DwarfFile::ReadUnitDieOnce(UnitInfo& unit, bool strings) {
  Result<const AbbrevTable*> abbrevs = Abbrevs(unit);
  if (!abbrevs) return std::move(abbrevs).error();
  ByteCursor c(sections_.info.data(), static_cast<size_t>(unit.end));
  c.Seek(static_cast<size_t>(unit.die_offset));
  uint64_t code = c.Uleb128();
  const Abbrev* abbrev = (*abbrevs)->Find(code);
  if (!c.ok() || abbrev == nullptr) {
    return Malformed(kInfo, unit.die_offset, "bad abbreviation code " + std::to_string(code));
  }
  unit.tag = abbrev->tag;
  // Defaults where the attribute is absent: split units (and DWARF 5 tables in general)
  // start right after their section header.
  uint64_t header = unit.ctx.offset_size == 8 ? 16 : 8;
  if (unit.ctx.version >= 5) unit.str_offsets_base = header;
  if (unit.ctx.version >= 5) unit.addr_base = header;
  if (is_dwo_ && unit.ctx.version >= 5) unit.rnglists_base = unit.ctx.offset_size == 8 ? 20 : 12;
  if (is_dwo_ && unit.ctx.version >= 5) unit.loclists_base = unit.ctx.offset_size == 8 ? 20 : 12;
  AttrValue low_pc, name, comp_dir, dwo_name;
  bool has_low = false, has_name = false, has_comp_dir = false, has_dwo_name = false;
  bool ok = ReadDieAttrs(c, **abbrevs, *abbrev, unit.ctx, [&](uint16_t at, const AttrValue& v) {
    switch (at) {
      case DW_AT_low_pc:
        low_pc = v;
        has_low = true;
        break;
      case DW_AT_name:
        name = v;
        has_name = true;
        break;
      case DW_AT_comp_dir:
        comp_dir = v;
        has_comp_dir = true;
        break;
      case DW_AT_dwo_name:
      case DW_AT_GNU_dwo_name:
        dwo_name = v;
        has_dwo_name = true;
        break;
      case DW_AT_stmt_list:
        unit.stmt_list = v.value;
        unit.has_stmt_list = true;
        break;
      case DW_AT_str_offsets_base:
        unit.str_offsets_base = v.value;
        unit.has_str_offsets_base = true;
        break;
      case DW_AT_addr_base:
      case DW_AT_GNU_addr_base:
        unit.addr_base = v.value;
        break;
      case DW_AT_rnglists_base:
        unit.rnglists_base = v.value;
        unit.has_rnglists_base = true;
        break;
      case DW_AT_GNU_ranges_base:
        unit.gnu_ranges_base = v.value;
        break;
      case DW_AT_loclists_base:
        unit.loclists_base = v.value;
        break;
      case DW_AT_GNU_dwo_id:
        unit.dwo_id = v.value;
        unit.has_dwo_id = true;
        break;
      default:
        break;
    }
  });
  if (!ok) return Malformed(kInfo, unit.die_offset, "truncated unit DIE");
  unit.die_end = c.offset();
  // Strings and addresses after all bases are known (clang puts DW_AT_str_offsets_base
  // after attributes that use it).
  if (has_low && !Address(unit, low_pc, &unit.low_pc)) unit.low_pc = 0;
  unit.has_dwo_name = has_dwo_name;
  if (strings) {
    if (has_name) String(unit, name, &unit.name);
    if (has_comp_dir) String(unit, comp_dir, &unit.comp_dir);
    if (has_dwo_name) String(unit, dwo_name, &unit.dwo_name);
  }
  unit.die_ok = true;
  return {};
}

bool DwarfFile::String(const UnitInfo& unit, const AttrValue& v, std::string_view* out) const {
  switch (v.kind) {
    case ValueKind::kInlineString:
      *out = std::string_view(reinterpret_cast<const char*>(v.data), v.value);
      return true;
    case ValueKind::kStrOffset:
      return StringAt(sections_.str, v.value, out);
    case ValueKind::kLineStrOffset:
      return StringAt(sections_.line_str, v.value, out);
    case ValueKind::kAltStrOffset:
      return alt_ != nullptr && StringAt(alt_->sections_.str, v.value, out);
    case ValueKind::kStrIndex: {
      uint64_t size = unit.ctx.offset_size;
      if (v.value > sections_.str_offsets.size()) return false;
      uint64_t pos = unit.str_offsets_base + v.value * size;
      if (pos < unit.str_offsets_base || pos + size > sections_.str_offsets.size()) return false;
      ByteCursor c(sections_.str_offsets);
      c.Seek(static_cast<size_t>(pos));
      uint64_t off = c.UN(size);
      return c.ok() && StringAt(sections_.str, off, out);
    }
    default:
      return false;
  }
}

bool DwarfFile::ReadAddrIndex(const UnitInfo& unit, uint64_t index, uint64_t* out) const {
  std::span<const uint8_t> section = unit.addr_overridden ? unit.addr_section : sections_.addr;
  uint64_t size = unit.ctx.address_size;
  if (index > section.size()) return false;
  uint64_t pos = unit.addr_base + index * size;
  if (pos < unit.addr_base || pos + size > section.size()) return false;
  ByteCursor c(section);
  c.Seek(static_cast<size_t>(pos));
  *out = c.UN(size);
  return c.ok();
}

bool DwarfFile::Address(const UnitInfo& unit, const AttrValue& v, uint64_t* out) const {
  if (v.kind == ValueKind::kAddress) {
    *out = v.value;
    return true;
  }
  if (v.kind == ValueKind::kAddrIndex) return ReadAddrIndex(unit, v.value, out);
  return false;
}

bool DwarfFile::Reference(const UnitInfo& unit, const AttrValue& v, DieRef* out) {
  switch (v.kind) {
    case ValueKind::kUnitRef:
      if (v.value >= unit.end - unit.offset) return false;
      *out = {this, unit.offset + v.value};
      return true;
    case ValueKind::kInfoRef:
      if (v.value >= sections_.info.size()) return false;
      *out = {this, v.value};
      return true;
    case ValueKind::kAltRef:
      if (alt_ == nullptr || v.value >= alt_->sections_.info.size()) return false;
      *out = {alt_, v.value};
      return true;
    default:
      return false;
  }
}

Result<void> DwarfFile::DieRanges(const UnitInfo& unit, const AttrValue* low_pc,
                                  const AttrValue* high_pc, const AttrValue* ranges,
                                  std::vector<AddressRange>* out) const {
  if (low_pc != nullptr && high_pc != nullptr) {
    uint64_t low = 0, high = 0;
    if (!Address(unit, *low_pc, &low)) return Malformed(kInfo, unit.offset, "bad DW_AT_low_pc");
    if (IsConstantForm(high_pc->form)) {
      high = low + high_pc->value;
    } else if (!Address(unit, *high_pc, &high)) {
      return Malformed(kInfo, unit.offset, "bad DW_AT_high_pc");
    }
    // The linker's marker for discarded code.
    if (low == Tombstone(unit.ctx.address_size)) return {};
    if (low < high) out->push_back({low, high});
    return {};
  }
  if (ranges == nullptr) return {};
  if (ranges->kind == ValueKind::kRnglistIndex) {
    std::span<const uint8_t> section = sections_.rnglists;
    uint64_t size = unit.ctx.offset_size;
    uint64_t pos = unit.rnglists_base + ranges->value * size;
    if (ranges->value > section.size() || pos + size > section.size()) {
      return Malformed(".debug_rnglists", pos, "range list index out of range");
    }
    ByteCursor c(section);
    c.Seek(static_cast<size_t>(pos));
    uint64_t rel = c.UN(size);
    return ReadRangeList(unit, unit.rnglists_base + rel, true, out);
  }
  if (ranges->kind != ValueKind::kSecOffset && ranges->kind != ValueKind::kUnsigned) {
    return Malformed(kInfo, unit.offset, "bad DW_AT_ranges form");
  }
  if (unit.ctx.version >= 5) {
    // A split unit's section offsets are relative to its contribution's table.
    uint64_t base = is_dwo_ ? unit.rnglists_base - (unit.ctx.offset_size == 8 ? 20 : 12) : 0;
    return ReadRangeList(unit, base + ranges->value, true, out);
  }
  // DW_AT_GNU_ranges_base is for the split unit's DW_AT_ranges (copied to it from its
  // skeleton); the skeleton's own are section offsets, as LLVM and gdb read them (gcc
  // writes a non-zero base in every skeleton but the first of a link).
  uint64_t base = is_dwo_ ? unit.gnu_ranges_base : 0;
  return ReadRangeList(unit, base + ranges->value, false, out);
}

Result<void> DwarfFile::ReadRangeList(const UnitInfo& unit, uint64_t offset, bool rnglists,
                                      std::vector<AddressRange>* out) const {
  const char* name = rnglists ? ".debug_rnglists" : ".debug_ranges";
  std::span<const uint8_t> section = rnglists ? sections_.rnglists : sections_.ranges;
  if (!rnglists && unit.ranges_overridden) section = unit.ranges_section;
  if (offset >= section.size()) return Malformed(name, offset, "range list offset past the end");
  ByteCursor c(section);
  c.Seek(static_cast<size_t>(offset));
  uint8_t as = unit.ctx.address_size;
  uint64_t base = unit.low_pc;
  uint64_t tombstone = Tombstone(as);
  if (!rnglists) {
    while (true) {
      uint64_t start = c.UN(as);
      uint64_t end = c.UN(as);
      if (!c.ok()) return Malformed(name, offset, "truncated range list");
      if (start == 0 && end == 0) return {};
      if (start == tombstone) {
        base = end;
        continue;
      }
      uint64_t low = base + start, high = base + end;
      if (low < high) out->push_back({low, high});
    }
  }
  while (true) {
    uint8_t kind = c.U8();
    uint64_t low = 0, high = 0;
    bool emit = false;
    switch (kind) {
      case DW_RLE_end_of_list:
        if (!c.ok()) return Malformed(name, offset, "truncated range list");
        return {};
      case DW_RLE_base_addressx: {
        uint64_t index = c.Uleb128();
        if (c.ok() && !ReadAddrIndex(unit, index, &base)) {
          return Malformed(name, offset, "bad address index in range list");
        }
        break;
      }
      case DW_RLE_startx_endx: {
        uint64_t a = c.Uleb128(), b = c.Uleb128();
        if (c.ok() && (!ReadAddrIndex(unit, a, &low) || !ReadAddrIndex(unit, b, &high))) {
          return Malformed(name, offset, "bad address index in range list");
        }
        emit = true;
        break;
      }
      case DW_RLE_startx_length: {
        uint64_t a = c.Uleb128(), len = c.Uleb128();
        if (c.ok() && !ReadAddrIndex(unit, a, &low)) {
          return Malformed(name, offset, "bad address index in range list");
        }
        high = low + len;
        emit = true;
        break;
      }
      case DW_RLE_offset_pair: {
        uint64_t a = c.Uleb128(), b = c.Uleb128();
        low = base + a;
        high = base + b;
        emit = true;
        break;
      }
      case DW_RLE_base_address:
        base = c.UN(as);
        break;
      case DW_RLE_start_end:
        low = c.UN(as);
        high = c.UN(as);
        emit = true;
        break;
      case DW_RLE_start_length:
        low = c.UN(as);
        high = low + c.Uleb128();
        emit = true;
        break;
      default:
        return Malformed(name, offset + c.offset(),
                         "unknown range list entry kind " + HexU64(kind));
    }
    if (!c.ok()) return Malformed(name, offset, "truncated range list");
    if (emit && low != tombstone && low < high) out->push_back({low, high});
  }
}

Result<void> DwarfFile::UnitRanges(UnitInfo& unit, std::vector<AddressRange>* out) {
  if (Result<void> r = ReadUnitDie(unit); !r) return r;
  Result<const AbbrevTable*> abbrevs = Abbrevs(unit);
  if (!abbrevs) return std::move(abbrevs).error();
  ByteCursor c(sections_.info.data(), static_cast<size_t>(unit.end));
  c.Seek(static_cast<size_t>(unit.die_offset));
  const Abbrev* abbrev = (*abbrevs)->Find(c.Uleb128());
  if (!c.ok() || abbrev == nullptr) return Malformed(kInfo, unit.die_offset, "bad unit DIE");
  AttrValue low, high, ranges;
  bool has_low = false, has_high = false, has_ranges = false;
  bool ok = ReadDieAttrs(c, **abbrevs, *abbrev, unit.ctx, [&](uint16_t at, const AttrValue& v) {
    if (at == DW_AT_low_pc) low = v, has_low = true;
    if (at == DW_AT_high_pc) high = v, has_high = true;
    if (at == DW_AT_ranges) ranges = v, has_ranges = true;
  });
  if (!ok) return Malformed(kInfo, unit.die_offset, "truncated unit DIE");
  return DieRanges(unit, has_low ? &low : nullptr, has_high ? &high : nullptr,
                   has_ranges ? &ranges : nullptr, out);
}

size_t DwarfFile::memory_bytes() const {
  std::lock_guard<std::mutex> lock(abbrevs_mu_);
  size_t total = units_.capacity() * sizeof(UnitInfo);
  for (const auto& [key, table] : abbrevs_)
    total += sizeof(AbbrevTable) + table->memory_bytes() + 32;
  return total;
}

}  // namespace stacksym::dwarf
