#include "dwarf/function_table.h"

#include <algorithm>

#include "base/byte_cursor.h"
#include "dwarf/die_reader.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf/dwarf_error.h"

namespace stacksym::dwarf {

namespace {

constexpr const char* kInfo = ".debug_info";
constexpr size_t kMaxDepth = kMaxDieDepth;

bool IsSubroutine(uint16_t tag) {
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

// Tags whose children can be functions with code at the top level of a unit.
bool HoldsTopLevelFunctions(uint16_t tag) {
  return tag == DW_TAG_namespace || tag == DW_TAG_module;
}

// Tags whose children can be code-bearing subroutines inside a function. gcc puts the member
// function definitions of a local class inside the class DIE (within the enclosing function),
// so class types count here. Everything else (variables, parameters, call sites, enumerations,
// ...) is skipped as a whole. At the top level of a unit class types are skipped: there both
// compilers place definitions outside the class (DW_AT_specification).
bool HoldsNestedCode(uint16_t tag) {
  return IsSubroutine(tag) || tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
         tag == DW_TAG_catch_block || tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
         tag == DW_TAG_union_type || tag == DW_TAG_namespace;
}

struct SubroutineAttrs {
  AttrValue low_pc, high_pc, ranges;
  bool has_low = false, has_high = false, has_ranges = false;
  uint64_t sibling = 0;
};

// `file` and `unit` (optional): where the DIE is, to resolve its abstract origin.
bool ReadSubroutineAttrs(ByteCursor& c, const AbbrevTable& abbrevs, const Abbrev& abbrev,
                         const FormContext& ctx, SubroutineAttrs* out, FunctionNode* node,
                         DwarfFile* file = nullptr, const UnitInfo* unit = nullptr) {
  auto wanted = [](uint16_t at) {
    return at == DW_AT_low_pc || at == DW_AT_high_pc || at == DW_AT_ranges || at == DW_AT_sibling ||
           at == DW_AT_call_file || at == DW_AT_call_line || at == DW_AT_call_column ||
           at == DW_AT_abstract_origin || at == DW_AT_GNU_discriminator || at == DW_AT_name ||
           at == DW_AT_linkage_name || at == DW_AT_MIPS_linkage_name || at == DW_AT_specification ||
           at == DW_AT_decl_file || at == DW_AT_decl_line;
  };
  return ReadSelectedDieAttrs(
      c, abbrevs, abbrev, ctx, wanted, [&](uint16_t at, const AttrValue& v) {
        switch (at) {
          // As DieChain reads the DIE (a reference it cannot resolve leaves the last one).
          case DW_AT_abstract_origin:
            if (DieRef ref; file != nullptr && file->Reference(*unit, v, &ref)) {
              bool here = ref.file == file;
              node->origin = here ? ref.offset : 0;
              node->flags =
                  static_cast<uint8_t>(here ? node->flags & ~FunctionNode::kOriginElsewhere
                                            : node->flags | FunctionNode::kOriginElsewhere);
            }
            break;
          case DW_AT_GNU_discriminator:
            node->call_discriminator =
                static_cast<uint32_t>(std::min<uint64_t>(v.value, 0xffffffff));
            break;
          case DW_AT_name:
          case DW_AT_linkage_name:
          case DW_AT_MIPS_linkage_name:
          case DW_AT_specification:
          case DW_AT_decl_file:
          case DW_AT_decl_line:
            node->flags |= FunctionNode::kDescribesItself;
            break;
          case DW_AT_low_pc:
            out->low_pc = v;
            out->has_low = true;
            break;
          case DW_AT_high_pc:
            out->high_pc = v;
            out->has_high = true;
            break;
          case DW_AT_ranges:
            out->ranges = v;
            out->has_ranges = true;
            break;
          case DW_AT_sibling:
            if (v.kind == ValueKind::kUnitRef) out->sibling = v.value;
            break;
          case DW_AT_call_file:
            node->call_file = static_cast<uint32_t>(v.value);
            break;
          case DW_AT_call_line:
            node->call_line = static_cast<uint32_t>(v.value);
            break;
          case DW_AT_call_column:
            node->call_column = static_cast<uint16_t>(std::min<uint64_t>(v.value, 0xffff));
            break;
          default:
            break;
        }
      });
}

bool HoldsWanted(std::span<const AddressRange> ranges, std::span<const uint64_t> wanted) {
  for (const AddressRange& r : ranges) {
    auto it = std::lower_bound(wanted.begin(), wanted.end(), r.low);
    if (it != wanted.end() && *it < r.high) return true;
  }
  return false;
}

}  // namespace

Result<FunctionTable> FunctionTable::Build(DwarfFile& file, UnitInfo& unit,
                                           std::span<const uint64_t> wanted) {
  if (wanted.empty()) return Walk(file, unit, wanted, Coverage::kFull);
  Result<FunctionTable> table = Walk(file, unit, wanted, Coverage::kShallow);
  if (!table) return table;
  // A wanted address that no walked subprogram covers may lie in code whose definition is
  // nested in a skipped subprogram (gcc puts local classes' and lambdas' member functions
  // inside the enclosing function's DIE), or in no function at all (thunks have line rows
  // but no DIE): the deep walk, which looks inside every subprogram, tells which.
  for (uint64_t a : wanted) {
    if (table->Find(a) < 0) return Walk(file, unit, wanted, Coverage::kDeep);
  }
  return table;
}

Result<FunctionTable> FunctionTable::Walk(DwarfFile& file, UnitInfo& unit,
                                          std::span<const uint64_t> wanted, Coverage mode) {
  if (Result<void> r = file.ReadUnitDie(unit); !r) return std::move(r).error();
  Result<const AbbrevTable*> abbrevs_or = file.Abbrevs(unit);
  if (!abbrevs_or) return std::move(abbrevs_or).error();
  const AbbrevTable& abbrevs = **abbrevs_or;
  FunctionTable table;
  table.file_ = &file;
  table.unit_ = &unit;
  table.coverage_ = mode;

  ByteCursor c(file.sections().info.data(), static_cast<size_t>(unit.end));
  c.Seek(static_cast<size_t>(unit.die_offset));
  const Abbrev* unit_abbrev = abbrevs.Find(c.Uleb128());
  if (!c.ok() || unit_abbrev == nullptr) return Malformed(kInfo, unit.die_offset, "bad unit DIE");
  if (!SkipDieAttrs(c, abbrevs, *unit_abbrev, unit.ctx)) {
    return Malformed(kInfo, unit.die_offset, "truncated unit DIE");
  }
  // The thread's own, reused unit after unit (an index build walks thousands on each
  // thread): grown once instead of faulted in anew for every unit.
  static thread_local std::vector<TreeRange> ranges;
  ranges.clear();
  std::vector<AddressRange> die_ranges;
  size_t depth = unit_abbrev->has_children ? 1 : 0;
  while (depth > 0 && !c.at_end()) {
    uint64_t die_offset = c.offset();
    uint64_t code = c.Uleb128();
    if (!c.ok()) return Malformed(kInfo, die_offset, "truncated DIE");
    if (code == 0) {
      --depth;
      continue;
    }
    const Abbrev* abbrev = abbrevs.Find(code);
    if (abbrev == nullptr) {
      return Malformed(kInfo, die_offset, "unknown abbreviation code " + std::to_string(code));
    }
    if (IsSubroutine(abbrev->tag)) {
      if (mode == Coverage::kShallow) {
        // Read the subprogram's own ranges; one that holds no wanted address is jumped over.
        SubroutineAttrs attrs;
        FunctionNode ignored;
        if (!ReadSubroutineAttrs(c, abbrevs, *abbrev, unit.ctx, &attrs, &ignored)) {
          return Malformed(kInfo, die_offset, "truncated DIE attributes");
        }
        die_ranges.clear();
        (void)file.DieRanges(unit, attrs.has_low ? &attrs.low_pc : nullptr,
                             attrs.has_high ? &attrs.high_pc : nullptr,
                             attrs.has_ranges ? &attrs.ranges : nullptr, &die_ranges);
        if (!HoldsWanted(die_ranges, wanted)) {
          if (abbrev->has_children && !SkipChildren(c, abbrevs, unit, attrs.sibling)) {
            return Malformed(kInfo, die_offset, "corrupt DIE tree");
          }
          continue;
        }
      }
      // The whole subtree, even of a function without code: gcc nests the definitions of
      // local classes' member functions (and lambdas in them) inside it, with their own code.
      c.Seek(static_cast<size_t>(die_offset));
      if (Result<void> r = table.WalkSubroutine(
              c, abbrevs, mode == Coverage::kFull ? std::span<const uint64_t>() : wanted, &ranges);
          !r) {
        return r.error();
      }
      continue;
    }
    uint64_t sibling = 0;
    if (!SkipDieAttrsFindSibling(c, abbrevs, *abbrev, unit.ctx, &sibling)) {
      return Malformed(kInfo, die_offset, "truncated DIE attributes");
    }
    if (!abbrev->has_children) continue;
    if (HoldsTopLevelFunctions(abbrev->tag)) {
      if (++depth > kMaxDepth) return Malformed(kInfo, die_offset, "DIE tree too deep");
    } else if (!SkipChildren(c, abbrevs, unit, sibling)) {
      return Malformed(kInfo, die_offset, "corrupt DIE tree");
    }
  }
  // (Not shrunk to fit: that copied every table once more, and the capacity past the end is
  // never touched, so it costs address space, not memory.)
  table.segments_ = FlattenNested(ranges);
  IndexSegments(table.segments_, &table.index_);
  // Only the walk needs them; the table must not keep pointers to a unit that may move.
  table.file_ = nullptr;
  table.unit_ = nullptr;
  return table;
}

Result<void> FunctionTable::WalkSubroutine(ByteCursor& c, const AbbrevTable& abbrevs,
                                           std::span<const uint64_t> wanted,
                                           std::vector<TreeRange>* ranges) {
  const UnitInfo& unit = *unit_;
  // The thread's own, reused subroutine after subroutine (a full walk meets one per
  // function of the unit): no allocation per subroutine.
  static thread_local std::vector<AddressRange> die_ranges;
  // parents[d] = node enclosing the DIEs at depth d + 1; under_subprogram[d]: whether a
  // DW_TAG_subprogram DIE (with a node or not) encloses them.
  static thread_local std::vector<int32_t> parents;
  static thread_local std::vector<uint8_t> under_subprogram;
  die_ranges.clear();
  parents.clear();
  under_subprogram.clear();
  int32_t current_parent = -1;
  bool current_under_subprogram = false;
  bool first = true;
  // Reset per subroutine DIE below, only in the fields read back: zeroing the whole of them
  // for each (a `rep stos`) was a fifth of this function's own time.
  SubroutineAttrs attrs;
  FunctionNode node;
  while (first || !parents.empty()) {
    uint64_t die_offset = c.offset();
    uint64_t code = c.Uleb128();
    if (!c.ok()) return Malformed(kInfo, die_offset, "truncated DIE");
    if (code == 0) {
      if (parents.empty()) return Malformed(kInfo, die_offset, "unexpected end of children");
      current_parent = parents.back();
      parents.pop_back();
      current_under_subprogram = under_subprogram.back() != 0;
      under_subprogram.pop_back();
      continue;
    }
    const Abbrev* abbrev = abbrevs.Find(code);
    if (abbrev == nullptr) {
      return Malformed(kInfo, die_offset, "unknown abbreviation code " + std::to_string(code));
    }
    first = false;
    int32_t node_for_children = current_parent;
    if (IsSubroutine(abbrev->tag)) {
      attrs.has_low = attrs.has_high = attrs.has_ranges = false;  // the values: only if set
      attrs.sibling = 0;
      node = FunctionNode{};
      node.die_offset = die_offset;
      node.parent = current_parent;
      // An inlined subroutine no subprogram encloses (invalid DWARF: right under the unit)
      // has no caller to name: LLVM's inline chain ends at it, so it is the out-of-line
      // function of its chain here too.
      node.inlined = abbrev->tag == DW_TAG_inlined_subroutine &&
                     (current_parent >= 0 || current_under_subprogram);
      if (!ReadSubroutineAttrs(c, abbrevs, *abbrev, unit.ctx, &attrs, &node, file_, &unit)) {
        return Malformed(kInfo, die_offset, "truncated DIE attributes");
      }
      die_ranges.clear();
      (void)file_->DieRanges(unit, attrs.has_low ? &attrs.low_pc : nullptr,
                             attrs.has_high ? &attrs.high_pc : nullptr,
                             attrs.has_ranges ? &attrs.ranges : nullptr, &die_ranges);
      if (!die_ranges.empty() && !wanted.empty() && !HoldsWanted(die_ranges, wanted)) {
        // Code none of the wanted addresses is in: no node. Its ranges are marked so that a
        // later lookup there completes the table instead of stopping at the enclosing
        // function. An inlined subtree is jumped over; a subprogram's is still read, since
        // out-of-line definitions (local classes, lambdas) can be nested in it.
        for (const AddressRange& r : die_ranges) {
          ranges->push_back({r.low, r.high, kIncomplete, static_cast<uint32_t>(ranges->size())});
        }
        if (abbrev->tag == DW_TAG_inlined_subroutine) {
          if (abbrev->has_children && !SkipChildren(c, abbrevs, unit, attrs.sibling)) {
            return Malformed(kInfo, die_offset, "corrupt DIE tree");
          }
          continue;
        }
        die_ranges.clear();  // no node: the children keep the enclosing one
      }
      // Subroutines without code (declarations, abstract instances) get no node; their
      // children keep the enclosing one.
      if (!die_ranges.empty()) {
        if (nodes_.size() >= 0x7fffffff) return Malformed(kInfo, die_offset, "too many functions");
        int32_t index = static_cast<int32_t>(nodes_.size());
        nodes_.push_back(node);
        for (const AddressRange& r : die_ranges) {
          // Depth-first visit order: where ranges overlap, the later (deeper) one wins.
          ranges->push_back({r.low, r.high, index, static_cast<uint32_t>(ranges->size())});
        }
        node_for_children = index;
      }
    } else {
      uint64_t sibling = 0;
      if (!SkipDieAttrsFindSibling(c, abbrevs, *abbrev, unit.ctx, &sibling)) {
        return Malformed(kInfo, die_offset, "truncated DIE attributes");
      }
      if (abbrev->has_children && !HoldsNestedCode(abbrev->tag)) {
        if (!SkipChildren(c, abbrevs, unit, sibling)) {
          return Malformed(kInfo, die_offset, "corrupt DIE tree");
        }
        continue;
      }
    }
    if (abbrev->has_children) {
      if (parents.size() >= kMaxDepth) return Malformed(kInfo, die_offset, "DIE tree too deep");
      parents.push_back(current_parent);
      under_subprogram.push_back(current_under_subprogram ? 1 : 0);
      current_parent = node_for_children;
      current_under_subprogram |= abbrev->tag == DW_TAG_subprogram;
    }
  }
  return {};
}

FunctionRun FunctionTable::OutermostRun(uint64_t address) const {
  FunctionRun run;
  auto [lo, hi] = index_.Candidates(address);
  const size_t in_candidates =
      FindSegmentPosition(std::span(segments_).subspan(lo, hi - lo), address);
  if (in_candidates == kNoSegment) return run;
  const size_t found = lo + in_candidates;
  auto at = [&](size_t i, uint64_t* start, int32_t* id) {
    *start = segments_[i].start;
    *id = segments_[i].id;
    return true;
  };
  auto outer = [&](int32_t id) {
    for (size_t guard = 0; id >= 0 && nodes_[static_cast<size_t>(id)].inlined; ++guard) {
      if (guard == 4096) return kNoId - 1;
      id = nodes_[static_cast<size_t>(id)].parent;
    }
    return id;
  };
  dwarf::OutermostRun(found, segments_.size(), at, outer, &run);
  return run;
}

}  // namespace stacksym::dwarf
