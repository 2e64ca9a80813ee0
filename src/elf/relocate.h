// elf/relocate.h — the relocations of a relocatable file's (ET_REL: .o, .ko) debug sections.
//
// In an object file the debug sections' addresses and cross-section offsets (DW_AT_low_pc,
// DW_LNE_set_address, DW_FORM_strp, DW_AT_stmt_list...) are left as zeros for the linker,
// which finds the real values in .rela.debug_* / .rel.debug_*. Read unrelocated, every string
// offset is 0 (".debug_str"'s first string, "clang version ...", becomes every name) and every
// function starts at 0. ElfFile::SectionData applies them to a private copy, once, so every
// reader (DWARF, .debug_frame) sees the bytes a linker would have written.
//
// A symbol's value is its st_value plus its section's address: the one ElfFile placed the
// section at (elf/object_layout.h), so that the functions of different text sections, all at
// offset 0 of their own, get distinct addresses. Relocation types: those that compilers and
// assemblers put in debug sections (the set LLVM's DWARF reader resolves) for x86-64, AArch64 and
// i386; any other type, or another machine, is an error naming it rather than a silently wrong
// answer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym::elf {

// For each section of `elf`, the SHT_REL/SHT_RELA sections whose relocations are to be applied
// to its contents before it is read: empty unless the file is ET_REL and the section is a
// non-allocated SHT_PROGBITS section (the debug sections; code and .eh_frame are left alone).
std::vector<std::vector<uint32_t>> DebugRelocationSections(const ElfFile& elf);

// Applies the relocations of `relocation_sections` (from DebugRelocationSections) to `bytes`,
// the contents of `target` (decompressed). Every offset, symbol index and section index is
// checked; the first bad one is an error naming the relocation section and entry.
Result<void> ApplyRelocations(const ElfFile& elf, const ElfSection& target,
                              std::span<const uint32_t> relocation_sections,
                              std::span<uint8_t> bytes);

}  // namespace stacksym::elf
