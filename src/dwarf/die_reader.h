// Reading the attributes of one DIE given its abbreviation: either each value in turn, or a
// skip over all of them (one step when the abbreviation's size is fixed).
#pragma once

#include "base/byte_cursor.h"
#include "dwarf/abbrev_table.h"
#include "dwarf/dwarf_file.h"
#include "dwarf/dwarf_form.h"

namespace stacksym::dwarf {

// Calls on_attr(uint16_t name, const AttrValue&) per attribute; false on bad data.
template <class OnAttr>
bool ReadDieAttrs(ByteCursor& c, const AbbrevTable& table, const Abbrev& abbrev,
                  const FormContext& ctx, OnAttr&& on_attr) {
  for (const AttrSpec& spec : table.specs(abbrev)) {
    AttrValue v;
    if (!ReadAttrValue(c, spec.form, spec.implicit_const, ctx, &v)) return false;
    on_attr(spec.name, v);
  }
  return true;
}

// Moves past one attribute value: one step when its size is fixed.
inline bool SkipSpec(ByteCursor& c, const AttrSpec& spec, const FormContext& ctx) {
  if (spec.size >= 0) {
    c.Skip(static_cast<size_t>(spec.size));
    return c.ok();
  }
  return SkipAttrValue(c, spec.form, ctx);
}

inline bool SkipDieAttrs(ByteCursor& c, const AbbrevTable& table, const Abbrev& abbrev,
                         const FormContext& ctx) {
  if (abbrev.fixed_size >= 0) {
    c.Skip(static_cast<size_t>(abbrev.fixed_size));
    return c.ok();
  }
  for (const AttrSpec& spec : table.specs(abbrev)) {
    if (!SkipSpec(c, spec, ctx)) return false;
  }
  return true;
}

// Calls on_attr(name, value) only for the attributes `wanted(name)` accepts; the others are
// skipped without decoding (most attributes of a DIE are of no interest to a given reader).
template <class Wanted, class OnAttr>
bool ReadSelectedDieAttrs(ByteCursor& c, const AbbrevTable& table, const Abbrev& abbrev,
                          const FormContext& ctx, Wanted&& wanted, OnAttr&& on_attr) {
  for (const AttrSpec& spec : table.specs(abbrev)) {
    if (!wanted(spec.name)) {
      if (!SkipSpec(c, spec, ctx)) return false;
      continue;
    }
    AttrValue v;
    if (!ReadAttrValue(c, spec.form, spec.implicit_const, ctx, &v)) return false;
    on_attr(spec.name, v);
  }
  return true;
}

// Skips the attributes, reading only DW_AT_sibling (a unit-relative offset) when present.
// *sibling is 0 when the DIE has none.
inline bool SkipDieAttrsFindSibling(ByteCursor& c, const AbbrevTable& table, const Abbrev& abbrev,
                                    const FormContext& ctx, uint64_t* sibling) {
  *sibling = 0;
  if (!abbrev.has_sibling) return SkipDieAttrs(c, table, abbrev, ctx);
  for (const AttrSpec& spec : table.specs(abbrev)) {
    if (spec.name == 0x01 /* DW_AT_sibling */) {
      AttrValue v;
      if (!ReadAttrValue(c, spec.form, spec.implicit_const, ctx, &v)) return false;
      if (v.kind == ValueKind::kUnitRef) *sibling = v.value;
    } else if (!SkipSpec(c, spec, ctx)) {
      return false;
    }
  }
  return true;
}

// Deeper DIE nesting than this is not real compiler output; readers stop rather than grow
// without end.
inline constexpr size_t kMaxDieDepth = 4096;

// Moves the cursor past the children of a DIE whose attributes were just read. Uses
// DW_AT_sibling (unit-relative) when given and sane, otherwise reads through the subtree
// (itself jumping over inner subtrees that have siblings).
inline bool SkipChildren(ByteCursor& c, const AbbrevTable& abbrevs, const UnitInfo& unit,
                         uint64_t sibling) {
  if (sibling != 0) {
    uint64_t target = unit.offset + sibling;
    if (target > c.offset() && target <= unit.end) {
      c.Seek(static_cast<size_t>(target));
      return true;
    }
  }
  size_t depth = 1;
  while (depth > 0) {
    uint64_t code = c.Uleb128();
    if (!c.ok()) return false;
    if (code == 0) {
      --depth;
      continue;
    }
    const Abbrev* abbrev = abbrevs.Find(code);
    if (abbrev == nullptr) return false;
    uint64_t inner_sibling = 0;
    if (!SkipDieAttrsFindSibling(c, abbrevs, *abbrev, unit.ctx, &inner_sibling)) return false;
    if (!abbrev->has_children) continue;
    uint64_t target = unit.offset + inner_sibling;
    if (inner_sibling != 0 && target > c.offset() && target <= unit.end) {
      c.Seek(static_cast<size_t>(target));
    } else if (++depth > kMaxDieDepth) {
      return false;
    }
  }
  return c.ok();
}

}  // namespace stacksym::dwarf
