#include "dwarf/function_table.h"

#include <algorithm>

#include "base/byte_cursor.h"
#include "dwarf/die_reader.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf/dwarf_error.h"

namespace stacksym::dwarf {

namespace {

constexpr const char* kInfo = ".debug_info";
// Deeper DIE nesting than this is not real compiler output; stop rather than grow without end.
constexpr size_t kMaxDepth = 4096;

}  // namespace

Result<FunctionTable> FunctionTable::Build(DwarfFile& file, UnitInfo& unit) {
  if (Result<void> r = file.ReadUnitDie(unit); !r) return std::move(r).error();
  Result<const AbbrevTable*> abbrevs_or = file.Abbrevs(unit);
  if (!abbrevs_or) return std::move(abbrevs_or).error();
  const AbbrevTable& abbrevs = **abbrevs_or;

  FunctionTable table;
  std::vector<TreeRange> ranges;
  std::vector<AddressRange> die_ranges;
  // parents[d] = node enclosing the DIEs at depth d + 1 (-1: none).
  std::vector<int32_t> parents;
  parents.reserve(64);

  ByteCursor c(file.sections().info.data(), static_cast<size_t>(unit.end));
  c.Seek(static_cast<size_t>(unit.die_offset));
  const FormContext& ctx = unit.ctx;
  int32_t current_parent = -1;
  bool first = true;
  while (!c.at_end()) {
    uint64_t die_offset = c.offset();
    uint64_t code = c.Uleb128();
    if (!c.ok()) return Malformed(kInfo, die_offset, "truncated DIE");
    if (code == 0) {
      if (parents.empty()) break;  // padding after the unit DIE's children
      current_parent = parents.back();
      parents.pop_back();
      if (parents.empty()) break;  // end of the unit DIE's children
      continue;
    }
    const Abbrev* abbrev = abbrevs.Find(code);
    if (abbrev == nullptr) {
      return Malformed(kInfo, die_offset, "unknown abbreviation code " + std::to_string(code));
    }
    bool is_subroutine =
        abbrev->tag == DW_TAG_subprogram || abbrev->tag == DW_TAG_inlined_subroutine;
    int32_t node_for_children = current_parent;
    if (is_subroutine && !first) {
      AttrValue low_pc, high_pc, range_attr;
      bool has_low = false, has_high = false, has_ranges = false;
      FunctionNode node;
      node.die_offset = die_offset;
      node.parent = current_parent;
      node.inlined = abbrev->tag == DW_TAG_inlined_subroutine;
      bool ok = ReadDieAttrs(c, abbrevs, *abbrev, ctx, [&](uint16_t at, const AttrValue& v) {
        switch (at) {
          case DW_AT_low_pc:
            low_pc = v;
            has_low = true;
            break;
          case DW_AT_high_pc:
            high_pc = v;
            has_high = true;
            break;
          case DW_AT_ranges:
            range_attr = v;
            has_ranges = true;
            break;
          case DW_AT_call_file:
            node.call_file = static_cast<uint32_t>(v.value);
            break;
          case DW_AT_call_line:
            node.call_line = static_cast<uint32_t>(v.value);
            break;
          case DW_AT_call_column:
            node.call_column = static_cast<uint16_t>(std::min<uint64_t>(v.value, 0xffff));
            break;
          default:
            break;
        }
      });
      if (!ok) return Malformed(kInfo, die_offset, "truncated DIE attributes");
      die_ranges.clear();
      // A DIE with unreadable ranges is left out; the rest of the unit still answers.
      (void)file.DieRanges(unit, has_low ? &low_pc : nullptr, has_high ? &high_pc : nullptr,
                           has_ranges ? &range_attr : nullptr, &die_ranges);
      // Nodes without code (declarations, abstract instances) are not kept, but their
      // children are still walked with the same enclosing node.
      if (!die_ranges.empty()) {
        int32_t index = static_cast<int32_t>(table.nodes_.size());
        if (table.nodes_.size() >= 0x7fffffff)
          return Malformed(kInfo, die_offset, "too many functions");
        table.nodes_.push_back(node);
        for (const AddressRange& r : die_ranges) {
          ranges.push_back({r.low, r.high, index, static_cast<uint32_t>(index)});
        }
        node_for_children = index;
      }
    } else {
      if (!SkipDieAttrs(c, abbrevs, *abbrev, ctx)) {
        return Malformed(kInfo, die_offset, "truncated DIE attributes");
      }
    }
    first = false;
    if (abbrev->has_children) {
      if (parents.size() >= kMaxDepth) return Malformed(kInfo, die_offset, "DIE tree too deep");
      parents.push_back(current_parent);
      current_parent = node_for_children;
    }
  }
  table.nodes_.shrink_to_fit();
  table.segments_ = FlattenNested(std::move(ranges));
  table.segments_.shrink_to_fit();
  return table;
}

}  // namespace stacksym::dwarf
