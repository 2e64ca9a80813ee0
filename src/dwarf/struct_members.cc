#include "dwarf/struct_members.h"

#include <map>
#include <unordered_set>
#include <utility>

#include "base/byte_cursor.h"
#include "dwarf/die_reader.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf/variable_table.h"

namespace stacksym::dwarf {

namespace {

// Structs nest structs as deep as this in real code many times over; typedef and qualifier
// chains are short.
constexpr int kMaxNesting = 16;
constexpr int kMaxTypeChain = 32;

bool IsStructTag(uint16_t tag) {
  return tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_class_type;
}

// DW_AT_data_member_location: a constant, or (DWARF 2 producers) an expression
// `DW_OP_plus_uconst N` / `DW_OP_constu N`.
std::optional<uint64_t> MemberOffset(const AttrValue& v) {
  if (v.kind == ValueKind::kUnsigned) return v.value;
  if (v.kind == ValueKind::kSigned) {
    if (static_cast<int64_t>(v.value) < 0) return std::nullopt;
    return v.value;
  }
  if (v.kind != ValueKind::kBlock || v.data == nullptr) return std::nullopt;
  ByteCursor e(v.data, static_cast<size_t>(v.value));
  uint8_t op = e.U8();
  if (op != DW_OP_plus_uconst && op != DW_OP_constu) return std::nullopt;
  uint64_t offset = e.Uleb128();
  if (!e.ok() || !e.at_end()) return std::nullopt;
  return offset;
}

// The attributes of a member DIE that say where it is.
struct MemberAttrs {
  std::string_view name;
  std::optional<uint64_t> location;  // DW_AT_data_member_location
  std::optional<uint64_t> data_bit_offset;
  std::optional<uint64_t> bit_offset;  // DWARF 2-3, counted from the storage unit's MSB
  uint64_t bit_size = 0;
  uint64_t byte_size = 0;  // the storage unit's, for DW_AT_bit_offset
  bool has_type = false;
  AttrValue type;
};

// Where a member lies, as bytes and a bit field's bits from its least significant end.
std::optional<MemberLocation> LocationOf(const MemberAttrs& m) {
  uint64_t bits = 0;
  if (m.data_bit_offset) {
    bits = *m.data_bit_offset + m.location.value_or(0) * 8;
  } else if (m.bit_offset && m.bit_size != 0) {
    // Big-endian numbering within a storage unit of byte_size bytes at the member location.
    uint64_t unit_bits = m.byte_size * 8;
    if (unit_bits < *m.bit_offset + m.bit_size) return std::nullopt;
    bits = m.location.value_or(0) * 8 + (unit_bits - *m.bit_offset - m.bit_size);
  } else {
    bits = m.location.value_or(0) * 8;  // union members have no location: 0
  }
  if (m.bit_size > 64 || bits / 8 > (uint64_t{1} << 40)) return std::nullopt;
  return MemberLocation{bits / 8, static_cast<uint32_t>(bits % 8),
                        static_cast<uint32_t>(m.bit_size)};
}

}  // namespace

// Reads struct definitions into a StructMembers, each DIE once.
class StructReader {
 public:
  explicit StructReader(StructMembers* out) : out_(*out) {}

  // The struct or union defined at `ref` (an index into structs_), or -1 when it is a
  // declaration, not a struct, or unreadable.
  int32_t ReadStruct(DieRef ref, int depth) {
    if (depth > kMaxNesting || ref.file == nullptr) return -1;
    auto key = std::make_pair(ref.file, ref.offset);
    if (auto it = read_.find(key); it != read_.end()) return it->second;
    read_[key] = -1;  // while it is being read: a cycle gives "not a struct"
    OpenedDie die;
    if (!OpenDie(*ref.file, ref.offset, &die) || !IsStructTag(die.abbrev->tag)) return -1;
    std::optional<uint64_t> size;
    bool declaration = false;
    bool ok = ReadDieAttrs(die.cursor, *die.abbrevs, *die.abbrev, die.unit->ctx,
                           [&](uint16_t at, const AttrValue& v) {
                             if (at == DW_AT_byte_size) size = AsUnsignedConstant(v);
                             if (at == DW_AT_declaration) declaration = v.value != 0;
                           });
    if (!ok || declaration || !die.abbrev->has_children) return -1;
    std::vector<StructMembers::Field> fields;
    if (!ReadFields(*ref.file, die, depth, &fields)) return -1;
    int32_t index = static_cast<int32_t>(out_.structs_.size());
    out_.structs_.push_back({size, std::move(fields)});
    read_[key] = index;
    return index;
  }

  // Follows typedefs and qualifiers from the type DIE `ref` to a struct or union definition.
  int32_t StructOfType(DieRef ref, int depth) {
    for (int i = 0; i < kMaxTypeChain && ref.file != nullptr; ++i) {
      OpenedDie die;
      if (!OpenDie(*ref.file, ref.offset, &die)) return -1;
      uint16_t tag = die.abbrev->tag;
      if (IsStructTag(tag)) return ReadStruct(ref, depth);
      if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
          tag != DW_TAG_atomic_type && tag != DW_TAG_restrict_type) {
        return -1;
      }
      AttrValue type;
      bool has_type = false;
      if (!ReadDieAttrs(die.cursor, *die.abbrevs, *die.abbrev, die.unit->ctx,
                        [&](uint16_t at, const AttrValue& v) {
                          if (at == DW_AT_type) type = v, has_type = true;
                        })) {
        return -1;
      }
      DieRef next;
      if (!has_type || !ref.file->Reference(*die.unit, type, &next)) return -1;
      ref = next;
    }
    return -1;
  }

 private:
  // The members of the struct whose attributes `die` was just read past.
  bool ReadFields(DwarfFile& file, OpenedDie& die, int depth,
                  std::vector<StructMembers::Field>* fields) {
    ByteCursor& c = die.cursor;
    const UnitInfo& unit = *die.unit;
    while (true) {
      uint64_t code = c.Uleb128();
      if (!c.ok()) return false;
      if (code == 0) return true;
      const Abbrev* child = die.abbrevs->Find(code);
      if (child == nullptr) return false;
      if (child->tag != DW_TAG_member) {
        uint64_t sibling = 0;
        if (!SkipDieAttrsFindSibling(c, *die.abbrevs, *child, unit.ctx, &sibling)) return false;
        if (child->has_children && !SkipChildren(c, *die.abbrevs, unit, sibling)) return false;
        continue;
      }
      MemberAttrs m;
      bool ok =
          ReadDieAttrs(c, *die.abbrevs, *child, unit.ctx, [&](uint16_t at, const AttrValue& v) {
            switch (at) {
              case DW_AT_name:
                if (!file.String(unit, v, &m.name)) m.name = {};
                break;
              case DW_AT_data_member_location:
                m.location = MemberOffset(v);
                break;
              case DW_AT_data_bit_offset:
                m.data_bit_offset = AsUnsignedConstant(v);
                break;
              case DW_AT_bit_offset:
                m.bit_offset = AsUnsignedConstant(v);
                break;
              case DW_AT_bit_size:
                m.bit_size = AsUnsignedConstant(v).value_or(0);
                break;
              case DW_AT_byte_size:
                m.byte_size = AsUnsignedConstant(v).value_or(0);
                break;
              case DW_AT_type:
                m.type = v, m.has_type = true;
                break;
            }
          });
      if (!ok) return false;
      if (child->has_children && !SkipChildren(c, *die.abbrevs, unit, 0)) return false;
      std::optional<MemberLocation> location = LocationOf(m);
      if (!location) continue;
      int32_t type = -1;
      DieRef ref;
      if (m.has_type && file.Reference(unit, m.type, &ref)) type = StructOfType(ref, depth + 1);
      fields->push_back({std::string(m.name), *location, type});
    }
  }

  StructMembers& out_;
  std::map<std::pair<const DwarfFile*, uint64_t>, int32_t> read_;
};

namespace {

// One top-level DIE of a unit that may name a wanted struct.
struct TopLevelDie {
  std::string_view name;
  bool declaration = false;
  bool has_type = false;
  AttrValue type;
  uint64_t sibling = 0;
};

bool ReadTopLevelDie(DwarfFile& file, ByteCursor& c, const AbbrevTable& abbrevs,
                     const Abbrev& abbrev, const UnitInfo& unit, TopLevelDie* out) {
  return ReadDieAttrs(c, abbrevs, abbrev, unit.ctx, [&](uint16_t at, const AttrValue& v) {
    if (at == DW_AT_name && !file.String(unit, v, &out->name)) out->name = {};
    if (at == DW_AT_declaration) out->declaration = v.value != 0;
    if (at == DW_AT_type) out->type = v, out->has_type = true;
    if (at == DW_AT_sibling && v.kind == ValueKind::kUnitRef) out->sibling = v.value;
  });
}

}  // namespace

StructMembers StructMembers::Find(DwarfFile& file, std::span<const std::string_view> names) {
  StructMembers out;
  StructReader reader(&out);
  std::unordered_set<std::string_view> wanted(names.begin(), names.end());
  for (UnitInfo& unit : file.units()) {
    if (wanted.empty()) break;
    if (unit.is_type_unit() || !unit.known_version() || !file.ReadUnitDie(unit)) continue;
    Result<const AbbrevTable*> abbrevs_or = file.Abbrevs(unit);
    if (!abbrevs_or) continue;
    const AbbrevTable& abbrevs = **abbrevs_or;
    ByteCursor c(file.sections().info.data(), static_cast<size_t>(unit.end));
    c.Seek(static_cast<size_t>(unit.die_offset));
    const Abbrev* unit_abbrev = abbrevs.Find(c.Uleb128());
    if (!c.ok() || unit_abbrev == nullptr || !unit_abbrev->has_children) continue;
    if (!SkipDieAttrs(c, abbrevs, *unit_abbrev, unit.ctx)) continue;
    // The unit's top-level DIEs, each subtree skipped after its head is looked at.
    while (!wanted.empty() && c.ok() && !c.at_end()) {
      uint64_t die_offset = c.offset();
      uint64_t code = c.Uleb128();
      if (!c.ok() || code == 0) break;
      const Abbrev* abbrev = abbrevs.Find(code);
      if (abbrev == nullptr) break;
      bool candidate = IsStructTag(abbrev->tag) || abbrev->tag == DW_TAG_typedef;
      TopLevelDie die;
      if (candidate) {
        if (!ReadTopLevelDie(file, c, abbrevs, *abbrev, unit, &die)) break;
      } else if (!SkipDieAttrsFindSibling(c, abbrevs, *abbrev, unit.ctx, &die.sibling)) {
        break;
      }
      if (candidate && !die.declaration && wanted.count(die.name) != 0) {
        int32_t index = -1;
        if (abbrev->tag == DW_TAG_typedef) {
          DieRef ref;
          if (die.has_type && file.Reference(unit, die.type, &ref)) {
            index = reader.StructOfType(ref, 0);
          }
        } else {
          index = reader.ReadStruct(DieRef{&file, die_offset}, 0);
        }
        if (index >= 0) {
          out.named_.emplace(std::string(die.name), static_cast<size_t>(index));
          wanted.erase(die.name);
        }
      }
      if (abbrev->has_children && !SkipChildren(c, abbrevs, unit, die.sibling)) break;
    }
  }
  return out;
}

std::optional<uint64_t> StructMembers::Size(std::string_view name) const {
  auto it = named_.find(std::string(name));
  if (it == named_.end()) return std::nullopt;
  return structs_[it->second].size;
}

// The field `name` of struct `index`, looking through anonymous members; *type is its struct.
std::optional<MemberLocation> StructMembers::FindField(size_t index, std::string_view name,
                                                       int depth, int32_t* type) const {
  if (depth > kMaxNesting) return std::nullopt;
  for (const Field& f : structs_[index].fields) {
    if (f.name == name) {
      *type = f.type;
      return f.location;
    }
  }
  for (const Field& f : structs_[index].fields) {
    if (!f.name.empty() || f.type < 0) continue;
    std::optional<MemberLocation> inner =
        FindField(static_cast<size_t>(f.type), name, depth + 1, type);
    if (inner) {
      inner->offset += f.location.offset;
      return inner;
    }
  }
  return std::nullopt;
}

std::optional<MemberLocation> StructMembers::Member(std::string_view name,
                                                    std::string_view path) const {
  auto it = named_.find(std::string(name));
  if (it == named_.end() || path.empty()) return std::nullopt;
  int32_t current = static_cast<int32_t>(it->second);
  MemberLocation total;
  while (true) {
    if (current < 0) return std::nullopt;  // a path through a member that is not a struct
    size_t dot = path.find('.');
    std::string_view part = path.substr(0, dot);
    int32_t type = -1;
    std::optional<MemberLocation> field = FindField(static_cast<size_t>(current), part, 0, &type);
    if (!field) return std::nullopt;
    total.offset += field->offset;
    total.bit_offset = field->bit_offset;
    total.bit_size = field->bit_size;
    if (dot == std::string_view::npos) return total;
    path.remove_prefix(dot + 1);
    current = type;
  }
}

}  // namespace stacksym::dwarf
