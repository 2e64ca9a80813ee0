#include "dwarf/die_chain.h"

#include <algorithm>

#include "dwarf/die_reader.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf/variable_table.h"

namespace stacksym::dwarf {

DieChain::DieChain(DwarfFile& file, uint64_t die_offset) : file_(file) {
  Read({&file, die_offset}, &dies_[0], &start_);
  die_count_ = 1;
  start_.abstract_origin = dies_[0].abstract_origin;
}

void DieChain::Read(DieRef ref, Die* out, SubroutineStart* start) {
  *out = Die();
  out->ref = ref;
  OpenedDie die;
  if (!OpenDie(*ref.file, ref.offset, &die) || !ref.file->ReadUnitDie(*die.unit)) return;
  out->unit = die.unit;
  DwarfFile& file = *ref.file;
  const UnitInfo& unit = *die.unit;
  out->ok = ReadDieAttrs(
      die.cursor, *die.abbrevs, *die.abbrev, unit.ctx, [&](uint16_t at, const AttrValue& v) {
        switch (at) {
          case DW_AT_linkage_name:
          case DW_AT_MIPS_linkage_name:
            if (out->linkage_name.empty()) file.String(unit, v, &out->linkage_name);
            break;
          case DW_AT_name:
            if (out->name.empty()) file.String(unit, v, &out->name);
            break;
          case DW_AT_abstract_origin:
            file.Reference(unit, v, &out->abstract_origin);
            break;
          case DW_AT_specification:
            file.Reference(unit, v, &out->specification);
            break;
          case DW_AT_decl_file:
            if (!out->has_decl_file) out->decl_file = v, out->has_decl_file = true;
            break;
          case DW_AT_decl_line:
            if (!out->has_decl_line) out->decl_line = v, out->has_decl_line = true;
            break;
          default:
            break;
        }
        if (start == nullptr) return;
        if (at == DW_AT_low_pc) {
          if (!start->has_low_pc) start->has_low_pc = file.Address(unit, v, &start->low_pc);
        } else if (at == DW_AT_GNU_discriminator) {
          start->call_discriminator =
              static_cast<uint32_t>(std::min<uint64_t>(v.value, 0xffffffff));
        } else if (at == DW_AT_name || at == DW_AT_linkage_name || at == DW_AT_MIPS_linkage_name ||
                   at == DW_AT_specification || at == DW_AT_decl_file || at == DW_AT_decl_line) {
          start->describes_itself = true;
        }
      });
}

const DieChain::Die& DieChain::Get(DieRef ref) {
  for (size_t i = 0; i < die_count_; ++i) {
    if (dies_[i].ref.file == ref.file && dies_[i].ref.offset == ref.offset) return dies_[i];
  }
  Die* slot = die_count_ < kKept ? &dies_[die_count_++] : &overflow_;
  Read(ref, slot);
  return *slot;
}

// LLVM's findRecursively: `take` sees the chain's readable DIEs in its order until it says
// stop. `follow_any_file`: references into any file are followed (names); else only within
// this file, or into its supplementary file when `follow_supplementary`.
template <class Take>
void DieChain::Walk(bool follow_any_file, bool follow_supplementary, const Take& take) {
  DieRef worklist[kMaxChain * 2];
  DieRef seen[kMaxChain];
  size_t worklist_size = 0, seen_size = 0;
  worklist[worklist_size++] = dies_[0].ref;
  seen[seen_size++] = dies_[0].ref;
  while (worklist_size > 0) {
    const Die& die = Get(worklist[--worklist_size]);
    if (!die.ok) continue;
    if (take(die)) return;
    // Copied: a DIE past the kept ones is overwritten by the next read.
    const DieRef next_refs[] = {die.abstract_origin, die.specification};
    for (const DieRef& next : next_refs) {
      if (next.file == nullptr) continue;
      bool followed = follow_any_file || next.file == &file_ ||
                      (follow_supplementary && next.file == file_.supplementary());
      if (!followed) continue;
      auto same = [&](const DieRef& r) { return r.file == next.file && r.offset == next.offset; };
      if (std::find_if(seen, seen + seen_size, same) != seen + seen_size) continue;
      if (seen_size == kMaxChain) continue;
      seen[seen_size++] = next;
      worklist[worklist_size++] = next;
    }
  }
}

std::string_view DieChain::Name(bool short_name) {
  std::string_view found, first_name;
  Walk(true, false, [&](const Die& die) {
    if (!short_name && !die.linkage_name.empty()) {
      found = die.linkage_name;
      return true;
    }
    if (short_name && !die.name.empty()) {
      found = die.name;
      return true;
    }
    if (first_name.empty()) first_name = die.name;
    return false;
  });
  return found.empty() ? first_name : found;
}

void DieChain::Decl(DeclAttrs* out, bool follow_supplementary) {
  *out = DeclAttrs();
  Walk(false, follow_supplementary, [&](const Die& die) {
    if (!die.has_decl_file) return false;
    if (std::optional<uint64_t> index = AsUnsignedConstant(die.decl_file)) {
      out->has_file = true;
      out->file_index = *index;
      out->file_unit = die.unit;
      out->file_file = die.ref.file;
      out->file_implicit_const = die.decl_file.form == DW_FORM_implicit_const;
    }
    return true;
  });
  Walk(false, follow_supplementary, [&](const Die& die) {
    if (!die.has_decl_line) return false;
    out->line = AsUnsignedConstant(die.decl_line).value_or(0);
    return true;
  });
}

}  // namespace stacksym::dwarf
