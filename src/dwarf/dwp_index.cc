#include "dwarf/dwp_index.h"

#include <algorithm>
#include <string>

#include "base/byte_cursor.h"

namespace stacksym::dwarf {

namespace {

// Column identifiers (DW_SECT_*). Version 5 (DWARF 5, table 7.33) and version 2 (the GNU
// DWARF 4 extension) agree on 1, 3, 4 and 6 and differ elsewhere.
constexpr uint32_t kSectInfo = 1;
constexpr uint32_t kSectAbbrev = 3;
constexpr uint32_t kSectLine = 4;
constexpr uint32_t kSectStrOffsets = 6;
constexpr uint32_t kSectV5Loclists = 5;
constexpr uint32_t kSectV5Macro = 7;
constexpr uint32_t kSectV5Rnglists = 8;
constexpr uint32_t kSectV2Loc = 5;
constexpr uint32_t kSectV2Macro = 8;

// Where a column's contribution is stored, or nullptr for columns we do not keep.
DwpContribution* Slot(DwpUnitSections& unit, uint32_t version, uint32_t section_id) {
  switch (section_id) {
    case kSectInfo:
      return &unit.info;
    case kSectAbbrev:
      return &unit.abbrev;
    case kSectLine:
      return &unit.line;
    case kSectStrOffsets:
      return &unit.str_offsets;
    default:
      break;
  }
  if (version == 5) {
    if (section_id == kSectV5Loclists) return &unit.loclists;
    if (section_id == kSectV5Macro) return &unit.macro;
    if (section_id == kSectV5Rnglists) return &unit.rnglists;
  } else {
    if (section_id == kSectV2Loc) return &unit.loclists;
    if (section_id == kSectV2Macro) return &unit.macro;
  }
  return nullptr;
}

Error IndexError(std::string message, size_t offset) {
  return MakeError(ErrorCode::kMalformed, std::move(message))
      .WithSection(".debug_cu_index")
      .WithOffset(offset);
}

}  // namespace

Result<DwpIndex> DwpIndex::Parse(std::span<const uint8_t> cu_index) {
  DwpIndex index;
  if (cu_index.empty()) return index;
  ByteCursor c(cu_index);
  // Version 2 is a 4-byte field; version 5 is 2 bytes followed by 2 bytes of padding.
  uint32_t version = c.U32();
  if (version != 2) {
    c.Seek(0);
    version = c.U16();
    c.Skip(2);
  }
  uint32_t section_count = c.U32();
  uint32_t unit_count = c.U32();
  uint32_t slot_count = c.U32();
  if (!c.ok()) return IndexError("truncated header", 0);
  if (version != 2 && version != 5) {
    return MakeError(ErrorCode::kUnsupported,
                     "unknown .debug_cu_index version " + std::to_string(version))
        .WithSection(".debug_cu_index");
  }
  if (slot_count != 0 && (slot_count & (slot_count - 1)) != 0) {
    return IndexError("slot count " + std::to_string(slot_count) + " is not a power of two", 12);
  }
  if (unit_count > slot_count) {
    return IndexError("more units (" + std::to_string(unit_count) + ") than slots (" +
                          std::to_string(slot_count) + ")",
                      8);
  }
  if (unit_count != 0 && section_count == 0) return IndexError("no section columns", 4);
  // Every table must fit in what is left: check before allocating anything.
  const uint64_t needed = uint64_t{slot_count} * 12 + uint64_t{section_count} * 4 +
                          uint64_t{unit_count} * section_count * 8;
  if (needed > c.remaining()) {
    return IndexError("tables need " + std::to_string(needed) + " bytes, " +
                          std::to_string(c.remaining()) + " present",
                      c.offset());
  }

  index.version_ = version;
  index.signatures_.resize(slot_count);
  index.rows_.resize(slot_count);
  for (uint64_t& signature : index.signatures_) signature = c.U64();
  for (uint32_t slot = 0; slot < slot_count; ++slot) {
    uint32_t row = c.U32();
    if (row > unit_count) {
      return IndexError(
          "row " + std::to_string(row) + " past unit count " + std::to_string(unit_count),
          c.offset() - 4);
    }
    index.rows_[slot] = row;
  }
  std::vector<uint32_t> section_ids(section_count);
  for (uint32_t& id : section_ids) id = c.U32();
  for (size_t i = 0; i < section_ids.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (section_ids[i] == section_ids[j]) {
        return IndexError("section column " + std::to_string(section_ids[i]) + " listed twice",
                          16 + size_t{slot_count} * 12 + i * 4);
      }
    }
  }
  index.units_.resize(unit_count);
  for (DwpUnitSections& unit : index.units_) {
    for (uint32_t id : section_ids) {
      uint32_t offset = c.U32();
      if (DwpContribution* slot = Slot(unit, version, id)) slot->offset = offset;
    }
  }
  for (DwpUnitSections& unit : index.units_) {
    for (uint32_t id : section_ids) {
      uint32_t size = c.U32();
      if (DwpContribution* slot = Slot(unit, version, id)) slot->size = size;
    }
  }
  if (!c.ok()) return IndexError("truncated tables", c.offset());

  // A signature in two used slots would make the answer depend on the probe order.
  std::vector<uint64_t> used;
  used.reserve(unit_count);
  for (uint32_t slot = 0; slot < slot_count; ++slot) {
    if (index.rows_[slot] != 0) used.push_back(index.signatures_[slot]);
  }
  std::sort(used.begin(), used.end());
  if (std::adjacent_find(used.begin(), used.end()) != used.end()) {
    return IndexError("a DWO id is listed twice", 16);
  }
  // Every listed unit must be reachable by the probe sequence of its own id; otherwise lookups
  // would silently miss it, so such a table is rejected rather than half-used.
  for (uint32_t slot = 0; slot < slot_count; ++slot) {
    if (index.rows_[slot] == 0) continue;
    std::optional<DwpUnitSections> found = index.Find(index.signatures_[slot]);
    if (!found) {
      return IndexError(
          "DWO id in slot " + std::to_string(slot) + " is not where its hash probe leads",
          16 + size_t{slot} * 8);
    }
  }
  return index;
}

std::optional<DwpUnitSections> DwpIndex::Find(uint64_t dwo_id) const {
  const uint64_t slots = signatures_.size();
  if (slots == 0) return std::nullopt;
  const uint64_t mask = slots - 1;
  uint64_t slot = dwo_id & mask;
  const uint64_t step = ((dwo_id >> 32) & mask) | 1;
  // An odd step visits every slot of a power-of-two table once, so `slots` probes suffice.
  for (uint64_t probe = 0; probe < slots; ++probe) {
    uint32_t row = rows_[slot];
    if (row == 0) return std::nullopt;
    if (signatures_[slot] == dwo_id) return units_[row - 1];
    slot = (slot + step) & mask;
  }
  return std::nullopt;
}

std::vector<std::pair<uint64_t, DwpUnitSections>> DwpIndex::Entries() const {
  std::vector<std::pair<uint64_t, DwpUnitSections>> out;
  out.reserve(units_.size());
  for (size_t slot = 0; slot < signatures_.size(); ++slot) {
    if (rows_[slot] != 0) out.emplace_back(signatures_[slot], units_[rows_[slot] - 1]);
  }
  return out;
}

}  // namespace stacksym::dwarf
