// The local variables of a function as llvm-symbolizer 16 answers FRAME requests
// (DWARFContext::getLocalsForAddress): every DW_TAG_variable and DW_TAG_formal_parameter in
// the subtree of the innermost subroutine DIE holding the address (inlined subroutines and
// lexical blocks included, in DIE order), each with the short name of the function it belongs
// to, its name, declaration file:line, frame offset (a location expression that is exactly
// DW_OP_fbreg N, or DW_OP_breg<frame base register> N, optionally followed by DW_OP_deref),
// type size and DW_AT_LLVM_tag_offset.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "dwarf/dwarf_file.h"
#include "dwarf/line_table.h"
#include "stacksym/frame.h"

namespace stacksym::dwarf {

// Appends the locals of the subroutine DIE at `die_offset` of `file` to `out`. Declaration
// files are resolved with `line` (the unit's line table, may be null) and `comp_dir`, with
// LLVM 15+'s path rule. Bad DWARF ends the walk (what was read stays).
void ReadFrameLocals(DwarfFile& file, uint64_t die_offset, const LineTable* line,
                     std::string_view comp_dir, std::vector<FrameLocal>* out);

}  // namespace stacksym::dwarf
