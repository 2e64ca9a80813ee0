#include "dwarf/variable_table.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>

#include "base/byte_cursor.h"
#include "dwarf/die_reader.h"
#include "dwarf/dwarf_constants.h"

namespace stacksym::dwarf {

namespace {

// Type chains longer than this (typedef of const of array of ...) are not real compiler output.
constexpr int kMaxTypeDepth = 64;

// LLVM's dwarf::isType(): DIEs whose subtrees hold no variables with storage.
bool IsTypeTag(uint16_t tag) {
  switch (tag) {
    case DW_TAG_array_type:
    case DW_TAG_class_type:
    case DW_TAG_enumeration_type:
    case DW_TAG_pointer_type:
    case DW_TAG_reference_type:
    case DW_TAG_string_type:
    case DW_TAG_structure_type:
    case DW_TAG_subroutine_type:
    case DW_TAG_typedef:
    case DW_TAG_union_type:
    case DW_TAG_ptr_to_member_type:
    case DW_TAG_set_type:
    case DW_TAG_subrange_type:
    case DW_TAG_base_type:
    case DW_TAG_const_type:
    case DW_TAG_file_type:
    case DW_TAG_packed_type:
    case DW_TAG_volatile_type:
    case DW_TAG_restrict_type:
    case DW_TAG_interface_type:
    case DW_TAG_unspecified_type:
    case DW_TAG_shared_type:
    case DW_TAG_rvalue_reference_type:
    case DW_TAG_coarray_type:
    case DW_TAG_dynamic_type:
    case DW_TAG_atomic_type:
    case DW_TAG_immutable_type:
      return true;
    default:
      return false;
  }
}

// LLVM's getAsSignedConstant: the fixed-size data forms are sign-extended from their size
// (an upper bound of 200 in DW_FORM_data1 reads as -56, as in LLVM).
std::optional<int64_t> AsSigned(const AttrValue& v) {
  if (v.kind != ValueKind::kUnsigned && v.kind != ValueKind::kSigned) return std::nullopt;
  if (v.form == DW_FORM_udata && v.value > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  switch (v.form) {
    case DW_FORM_data1:
      return static_cast<int8_t>(v.value);
    case DW_FORM_data2:
      return static_cast<int16_t>(v.value);
    case DW_FORM_data4:
      return static_cast<int32_t>(v.value);
    default:
      return static_cast<int64_t>(v.value);
  }
}

// Which kind of location list an offset points at.
enum class ListKind {
  kLoc,       // .debug_loc (DWARF 2-4)
  kLoclists,  // .debug_loclists (DWARF 5, .dwo too)
  kGnuDwo,    // .debug_loc.dwo of a DWARF 4 split unit: DW_LLE_GNU_* entries
};

// The expressions of the location list at `offset`, in order, until `use` takes one. Ranges
// do not matter to the callers.
template <class Use>
bool ForEachListExpression(DwarfFile& file, const UnitInfo& unit, uint64_t offset, ListKind kind,
                           const Use& use) {
  std::span<const uint8_t> section =
      kind == ListKind::kLoclists ? file.sections().loclists : file.sections().loc;
  if (offset >= section.size()) return false;
  ByteCursor c(section);
  c.Seek(static_cast<size_t>(offset));
  uint8_t as = unit.ctx.address_size;
  uint64_t max_address = as >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * as)) - 1;
  for (int entries = 0; entries < 100000 && c.ok(); ++entries) {
    size_t length = 0;
    if (kind == ListKind::kGnuDwo) {
      // Addresses are .debug_addr indexes; the expression length is 2 bytes, as in .debug_loc.
      switch (c.U8()) {
        case DW_LLE_GNU_end_of_list_entry:
          return false;
        case DW_LLE_GNU_base_address_selection_entry:
          c.Uleb128();
          continue;
        case DW_LLE_GNU_start_end_entry:
          c.Uleb128();
          c.Uleb128();
          break;
        case DW_LLE_GNU_start_length_entry:
          c.Uleb128();
          c.U32();
          break;
        default:
          return false;
      }
      length = c.U16();
    } else if (kind == ListKind::kLoc) {
      uint64_t start = c.UN(as), end = c.UN(as);
      if (!c.ok() || (start == 0 && end == 0)) return false;
      if (start == max_address) continue;  // base address selection
      length = c.U16();
    } else {
      switch (c.U8()) {
        case DW_LLE_end_of_list:
          return false;
        case DW_LLE_base_addressx:
          c.Uleb128();
          continue;
        case DW_LLE_base_address:
          c.UN(as);
          continue;
        case DW_LLE_startx_endx:
        case DW_LLE_startx_length:
        case DW_LLE_offset_pair:
          c.Uleb128();
          c.Uleb128();
          break;
        case DW_LLE_default_location:
          break;
        case DW_LLE_start_end:
          c.UN(as);
          c.UN(as);
          break;
        case DW_LLE_start_length:
          c.UN(as);
          c.Uleb128();
          break;
        default:
          return false;
      }
      length = static_cast<size_t>(c.Uleb128());
    }
    std::span<const uint8_t> expr = c.Bytes(length);
    if (!c.ok()) return false;
    if (use(expr)) return true;
  }
  return false;
}

}  // namespace

bool ForEachLocationExpression(DwarfFile& file, const UnitInfo& unit, const AttrValue& location,
                               const std::function<bool(std::span<const uint8_t>)>& use) {
  if (location.kind == ValueKind::kBlock) {
    if (location.data == nullptr) return false;
    return use({location.data, static_cast<size_t>(location.value)});
  }
  const DwarfSections& s = file.sections();
  if (location.kind == ValueKind::kLoclistIndex) {
    // An offset, relative to the unit's table, at loclists_base + index * offset size.
    uint64_t size = unit.ctx.offset_size;
    uint64_t pos = unit.loclists_base + location.value * size;
    if (location.value > s.loclists.size() || pos + size > s.loclists.size()) return false;
    ByteCursor c(s.loclists);
    c.Seek(static_cast<size_t>(pos));
    uint64_t rel = c.UN(size);
    return c.ok() &&
           ForEachListExpression(file, unit, unit.loclists_base + rel, ListKind::kLoclists, use);
  }
  bool section_offset = location.kind == ValueKind::kSecOffset ||
                        (unit.ctx.version <= 3 && location.kind == ValueKind::kUnsigned &&
                         (location.form == DW_FORM_data4 || location.form == DW_FORM_data8));
  if (!section_offset) return false;
  ListKind kind = unit.ctx.version >= 5 ? ListKind::kLoclists
                  : file.is_dwo()       ? ListKind::kGnuDwo
                                        : ListKind::kLoc;
  return ForEachListExpression(file, unit, location.value, kind, use);
}

bool OpenDie(DwarfFile& file, uint64_t offset, OpenedDie* out) {
  int index = file.FindUnit(offset);
  if (index < 0) return false;
  UnitInfo& unit = file.units()[static_cast<size_t>(index)];
  Result<const AbbrevTable*> abbrevs = file.Abbrevs(unit);
  if (!abbrevs) return false;
  out->unit = &unit;
  out->abbrevs = *abbrevs;
  out->cursor = ByteCursor(file.sections().info.data(), static_cast<size_t>(unit.end));
  out->cursor.Seek(static_cast<size_t>(offset));
  out->abbrev = (*abbrevs)->Find(out->cursor.Uleb128());
  return out->cursor.ok() && out->abbrev != nullptr;
}

std::optional<uint64_t> AsUnsignedConstant(const AttrValue& v) {
  if (v.form == DW_FORM_sdata) return std::nullopt;
  if (v.kind != ValueKind::kUnsigned && v.kind != ValueKind::kSigned) return std::nullopt;
  return v.value;
}

std::optional<uint64_t> TypeSizer::Size(uint64_t type_die_offset, uint8_t pointer_size) {
  return TypeSize(DieRef{&file_, type_die_offset}, pointer_size, 0);
}

std::optional<uint64_t> TypeSizer::Size(DieRef type, uint8_t pointer_size) {
  if (type.file == nullptr) return std::nullopt;
  return TypeSize(type, pointer_size, 0);
}

std::optional<uint64_t> TypeSizer::TypeSize(DieRef type, uint8_t pointer_size, int depth) {
  if (depth > kMaxTypeDepth) return std::nullopt;
  uint64_t key = type.offset << 8 | pointer_size;
  auto& sizes = sizes_[type.file];
  if (auto it = sizes.find(key); it != sizes.end()) return it->second;
  // A cycle back to this DIE while it is being sized gives "unknown", as LLVM's visited set.
  sizes[key] = std::nullopt;
  std::optional<uint64_t> size = ComputeTypeSize(type, pointer_size, depth);
  sizes_[type.file][key] = size;
  return size;
}

std::optional<uint64_t> TypeSizer::ComputeTypeSize(DieRef ref, uint8_t pointer_size, int depth) {
  DwarfFile& file = *ref.file;
  OpenedDie die;
  if (!OpenDie(file, ref.offset, &die)) return std::nullopt;
  AttrValue byte_size, type;
  bool has_byte_size = false, has_type = false;
  bool ok = ReadDieAttrs(die.cursor, *die.abbrevs, *die.abbrev, die.unit->ctx,
                         [&](uint16_t at, const AttrValue& v) {
                           if (at == DW_AT_byte_size) byte_size = v, has_byte_size = true;
                           if (at == DW_AT_type) type = v, has_type = true;
                         });
  if (!ok) return std::nullopt;
  if (has_byte_size) {
    if (std::optional<uint64_t> s = AsUnsignedConstant(byte_size)) return s;
  }
  // The type may be in another file (a dwz supplementary file's DW_FORM_GNU_ref_alt).
  DieRef base;
  bool has_base = has_type && file.Reference(*die.unit, type, &base) && base.file != nullptr;
  switch (die.abbrev->tag) {
    case DW_TAG_pointer_type:
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type:
      return pointer_size;
    case DW_TAG_ptr_to_member_type: {
      OpenedDie target;
      if (has_base && OpenDie(*base.file, base.offset, &target) &&
          target.abbrev->tag == DW_TAG_subroutine_type) {
        return 2 * uint64_t{pointer_size};
      }
      return pointer_size;
    }
    case DW_TAG_const_type:
    case DW_TAG_immutable_type:
    case DW_TAG_volatile_type:
    case DW_TAG_restrict_type:
    case DW_TAG_typedef:
      if (has_base) return TypeSize(base, pointer_size, depth + 1);
      return std::nullopt;
    case DW_TAG_array_type: {
      if (!has_base) return std::nullopt;
      std::optional<uint64_t> element = TypeSize(base, pointer_size, depth + 1);
      if (!element) return std::nullopt;
      uint64_t size = *element;
      if (die.abbrev->has_children) MultiplyBySubranges(die, &size);
      return size;
    }
    default:
      if (has_base) return TypeSize(base, pointer_size, depth + 1);
      return std::nullopt;
  }
}

// Multiplies `size` by each DW_TAG_subrange_type child's count or (upper - lower + 1), with
// LLVM's unsigned wrap-around.
void TypeSizer::MultiplyBySubranges(OpenedDie& array, uint64_t* size) {
  ByteCursor& c = array.cursor;
  const UnitInfo& unit = *array.unit;
  while (true) {
    uint64_t code = c.Uleb128();
    if (!c.ok() || code == 0) return;
    const Abbrev* child = array.abbrevs->Find(code);
    if (child == nullptr) return;
    if (child->tag != DW_TAG_subrange_type) {
      uint64_t sibling = 0;
      if (!SkipDieAttrsFindSibling(c, *array.abbrevs, *child, unit.ctx, &sibling)) return;
      if (child->has_children && !SkipChildren(c, *array.abbrevs, unit, sibling)) return;
      continue;
    }
    AttrValue count, upper, lower;
    bool has_count = false, has_upper = false, has_lower = false;
    bool ok =
        ReadDieAttrs(c, *array.abbrevs, *child, unit.ctx, [&](uint16_t at, const AttrValue& v) {
          if (at == DW_AT_count) count = v, has_count = true;
          if (at == DW_AT_upper_bound) upper = v, has_upper = true;
          if (at == DW_AT_lower_bound) lower = v, has_lower = true;
        });
    if (!ok) return;
    if (has_count) {
      if (std::optional<uint64_t> n = AsUnsignedConstant(count)) *size *= *n;
    }
    if (has_upper) {
      if (std::optional<int64_t> u = AsSigned(upper)) {
        int64_t low = 0;
        if (has_lower) low = AsSigned(lower).value_or(0);
        *size *= static_cast<uint64_t>(*u) - static_cast<uint64_t>(low) + 1;
      }
    }
    if (child->has_children && !SkipChildren(c, *array.abbrevs, unit, 0)) return;
  }
}

namespace {

class TableBuilder {
 public:
  explicit TableBuilder(DwarfFile& file) : file_(file), sizes_(file) {}

  // Appends the variables of one unit (children before parents, in DIE order) to `out`.
  void ReadUnit(UnitInfo& unit, std::vector<VariableTable::Entry>* out) {
    if (!file_.ReadUnitDie(unit)) return;
    Result<const AbbrevTable*> abbrevs_or = file_.Abbrevs(unit);
    if (!abbrevs_or) return;
    const AbbrevTable& abbrevs = **abbrevs_or;
    ByteCursor c(file_.sections().info.data(), static_cast<size_t>(unit.end));
    c.Seek(static_cast<size_t>(unit.die_offset));
    const Abbrev* unit_abbrev = abbrevs.Find(c.Uleb128());
    if (!c.ok() || unit_abbrev == nullptr || !unit_abbrev->has_children) return;
    if (!SkipDieAttrs(c, abbrevs, *unit_abbrev, unit.ctx)) return;
    // One slot per open DIE with children: a variable that has children is entered after
    // them, as LLVM's post-order walk does.
    std::vector<std::optional<VariableTable::Entry>> open(1);
    while (!open.empty() && !c.at_end()) {
      uint64_t die_offset = c.offset();
      uint64_t code = c.Uleb128();
      if (!c.ok()) return;
      if (code == 0) {
        if (open.back()) out->push_back(*open.back());
        open.pop_back();
        continue;
      }
      const Abbrev* abbrev = abbrevs.Find(code);
      if (abbrev == nullptr) return;
      if (IsTypeTag(abbrev->tag)) {
        uint64_t sibling = 0;
        if (!SkipDieAttrsFindSibling(c, abbrevs, *abbrev, unit.ctx, &sibling)) return;
        if (abbrev->has_children && !SkipChildren(c, abbrevs, unit, sibling)) return;
        continue;
      }
      std::optional<VariableTable::Entry> entry;
      if (abbrev->tag == DW_TAG_variable) {
        if (!ReadVariable(c, unit, abbrevs, *abbrev, die_offset, &entry)) return;
      } else if (!SkipDieAttrs(c, abbrevs, *abbrev, unit.ctx)) {
        return;
      }
      if (abbrev->has_children) {
        if (open.size() >= kMaxDieDepth) return;
        open.push_back(entry);
      } else if (entry) {
        out->push_back(*entry);
      }
    }
  }

 private:
  bool ReadVariable(ByteCursor& c, const UnitInfo& unit, const AbbrevTable& abbrevs,
                    const Abbrev& abbrev, uint64_t die_offset,
                    std::optional<VariableTable::Entry>* out) {
    AttrValue location, type;
    bool has_location = false, has_type = false;
    auto wanted = [](uint16_t at) { return at == DW_AT_location || at == DW_AT_type; };
    bool ok = ReadSelectedDieAttrs(c, abbrevs, abbrev, unit.ctx, wanted,
                                   [&](uint16_t at, const AttrValue& v) {
                                     if (at == DW_AT_location) location = v, has_location = true;
                                     if (at == DW_AT_type) type = v, has_type = true;
                                   });
    if (!ok) return false;
    uint64_t address = 0;
    bool found = has_location && ForEachLocationExpression(
                                     file_, unit, location, [&](std::span<const uint8_t> expr) {
                                       return ExpressionAddress(unit, expr, &address);
                                     });
    if (!found) return true;
    // No DW_AT_type on the DIE itself (a definition that names its declaration with
    // DW_AT_specification, an inlined local with DW_AT_abstract_origin), or a type of unknown
    // size: one byte, so that the address itself still answers.
    uint64_t size = 1;
    DieRef ref;
    if (has_type && file_.Reference(unit, type, &ref) && ref.file != nullptr) {
      if (std::optional<uint64_t> s = sizes_.Size(ref, unit.ctx.address_size)) size = *s;
    }
    uint64_t high = address + size;
    if (high < address) high = address;  // wraps: LLVM's end is below the start, never found
    *out = VariableTable::Entry{address, high, die_offset, &file_};
    return true;
  }

  bool ExpressionAddress(const UnitInfo& unit, std::span<const uint8_t> expr, uint64_t* out) {
    ByteCursor e(expr);
    uint8_t op = e.U8();
    uint64_t address = 0;
    if (op == DW_OP_addr) {
      address = e.UN(unit.ctx.address_size);
    } else if (op == DW_OP_addrx || op == DW_OP_GNU_addr_index) {
      AttrValue index;
      index.kind = ValueKind::kAddrIndex;
      index.value = e.Uleb128();
      if (!e.ok() || !file_.Address(unit, index, &address)) return false;
    } else {
      return false;
    }
    if (!e.ok()) return false;
    if (!e.at_end()) {
      if (e.U8() != DW_OP_plus_uconst) return false;
      address += e.Uleb128();
      if (!e.ok() || !e.at_end()) return false;
    }
    *out = address;
    return true;
  }

  DwarfFile& file_;
  TypeSizer sizes_;
};

}  // namespace

VariableTable VariableTable::Build(DwarfFile& file, const SplitUnitOf& split_unit_of) {
  VariableTable table;
  TableBuilder builder(file);
  std::unordered_map<DwarfFile*, std::unique_ptr<TableBuilder>> split_builders;
  std::vector<Entry> unit_entries;
  std::vector<IdRange> ranges;
  for (size_t index = 0; index < file.units().size(); ++index) {
    UnitInfo& unit = file.units()[index];
    if (unit.is_type_unit() || !unit.known_version()) continue;
    unit_entries.clear();
    // A skeleton's variables are in its split unit (.dwo, .dwp), read in the skeleton's place.
    std::pair<DwarfFile*, UnitInfo*> split{nullptr, nullptr};
    if (split_unit_of) split = split_unit_of(index);
    if (split.first != nullptr && split.second != nullptr) {
      std::unique_ptr<TableBuilder>& b = split_builders[split.first];
      if (!b) b = std::make_unique<TableBuilder>(*split.first);
      b->ReadUnit(*split.second, &unit_entries);
    } else {
      builder.ReadUnit(unit, &unit_entries);
    }
    // As a map keyed by start: the last entry with a given start stays; each answers up to
    // the next start of its unit (the lookup takes the greatest start at or below).
    std::stable_sort(unit_entries.begin(), unit_entries.end(),
                     [](const Entry& a, const Entry& b) { return a.low < b.low; });
    for (size_t i = 0; i < unit_entries.size(); ++i) {
      if (i + 1 < unit_entries.size() && unit_entries[i + 1].low == unit_entries[i].low) continue;
      Entry e = unit_entries[i];
      if (i + 1 < unit_entries.size()) e.high = std::min(e.high, unit_entries[i + 1].low);
      if (e.low >= e.high) continue;
      if (table.entries_.size() >= 0x7fffffff) break;
      ranges.push_back({e.low, e.high, static_cast<int32_t>(table.entries_.size())});
      table.entries_.push_back(e);
    }
  }
  // Entries are numbered in unit order: where units overlap, the first unit wins.
  table.segments_ = FlattenByLowestId(std::move(ranges));
  table.segments_.shrink_to_fit();
  table.entries_.shrink_to_fit();
  IndexSegments(table.segments_, &table.index_);
  return table;
}

const VariableTable::Entry* VariableTable::Find(uint64_t address) const {
  int32_t id = FindSegment(segments_, index_, address);
  if (id < 0 || static_cast<size_t>(id) >= entries_.size()) return nullptr;
  return &entries_[static_cast<size_t>(id)];
}

}  // namespace stacksym::dwarf
