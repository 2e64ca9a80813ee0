#include "dwarf/abbrev_table.h"

#include <algorithm>

#include "base/byte_cursor.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf/dwarf_error.h"

namespace stacksym::dwarf {

namespace {

Error AbbrevError(std::string message, uint64_t offset) {
  return Malformed(".debug_abbrev", offset, std::move(message));
}

// Codes up to this bound get a direct-index slot; larger (rare, or crafted) codes are
// looked up by binary search so a single huge code cannot make us allocate gigabytes.
constexpr uint64_t kMaxDenseCode = 1 << 16;

}  // namespace

Result<AbbrevTable> AbbrevTable::Parse(std::span<const uint8_t> section, uint64_t offset,
                                       const FormContext& ctx) {
  if (offset >= section.size())
    return AbbrevError("abbreviation table offset past the end", offset);
  AbbrevTable table;
  ByteCursor c(section);
  c.Seek(static_cast<size_t>(offset));
  while (true) {
    uint64_t entry_offset = c.offset();
    uint64_t code = c.Uleb128();
    if (!c.ok()) return AbbrevError("truncated abbreviation table", entry_offset);
    if (code == 0) break;
    Abbrev a;
    a.code = code;
    uint64_t tag = c.Uleb128();
    a.has_children = c.U8() != 0;
    if (!c.ok()) return AbbrevError("truncated abbreviation", entry_offset);
    if (tag > 0xffff) return AbbrevError("abbreviation tag out of range", entry_offset);
    a.tag = static_cast<uint16_t>(tag);
    a.first_spec = static_cast<uint32_t>(table.specs_.size());
    int64_t fixed = 0;
    while (true) {
      uint64_t name = c.Uleb128();
      uint64_t form = c.Uleb128();
      if (!c.ok()) return AbbrevError("truncated attribute specification", entry_offset);
      if (name == 0 && form == 0) break;
      if (name > 0xffff || form > 0xffff) {
        return AbbrevError("attribute or form code out of range", entry_offset);
      }
      AttrSpec spec;
      spec.name = static_cast<uint16_t>(name);
      spec.form = static_cast<uint16_t>(form);
      if (form == DW_FORM_implicit_const) spec.implicit_const = c.Sleb128();
      if (name == DW_AT_sibling) a.has_sibling = true;
      int size = FixedFormSize(spec.form, ctx);
      if (size == kUnknownForm) {
        return AbbrevError("unknown attribute form " + HexU64(form), entry_offset);
      }
      spec.size = size >= 0 ? size : -1;
      if (size < 0 || fixed < 0) {
        fixed = -1;
      } else {
        fixed += size;
      }
      table.specs_.push_back(spec);
      if (table.specs_.size() > 0xfffffff0u)
        return AbbrevError("too many attributes", entry_offset);
    }
    a.num_specs = static_cast<uint32_t>(table.specs_.size() - a.first_spec);
    a.fixed_size = fixed > 0x7fffffff ? -1 : static_cast<int32_t>(fixed);
    table.abbrevs_.push_back(a);
  }
  uint64_t max_code = 0;
  for (const Abbrev& a : table.abbrevs_) {
    if (a.code < kMaxDenseCode) max_code = std::max(max_code, a.code);
  }
  table.dense_.assign(max_code + 1, kNone);
  bool all_dense = true;
  for (uint32_t i = 0; i < table.abbrevs_.size(); ++i) {
    uint64_t code = table.abbrevs_[i].code;
    if (code < kMaxDenseCode) {
      if (table.dense_[code] == kNone) table.dense_[code] = i;  // first definition wins
    } else {
      all_dense = false;
    }
  }
  if (!all_dense) {
    std::stable_sort(table.abbrevs_.begin(), table.abbrevs_.end(),
                     [](const Abbrev& x, const Abbrev& y) { return x.code < y.code; });
    // Indices moved: rebuild the dense map.
    std::fill(table.dense_.begin(), table.dense_.end(), kNone);
    for (uint32_t i = 0; i < table.abbrevs_.size(); ++i) {
      uint64_t code = table.abbrevs_[i].code;
      if (code < kMaxDenseCode && table.dense_[code] == kNone) table.dense_[code] = i;
    }
    table.sorted_ = true;
  }
  return table;
}

const Abbrev* AbbrevTable::FindSparse(uint64_t code) const {
  if (!sorted_) return nullptr;
  auto it = std::lower_bound(abbrevs_.begin(), abbrevs_.end(), code,
                             [](const Abbrev& a, uint64_t c) { return a.code < c; });
  if (it == abbrevs_.end() || it->code != code) return nullptr;
  return &*it;
}

}  // namespace stacksym::dwarf
