// elf/object_layout.h — addresses for the sections of a relocatable object (ET_REL: .o, .ko).
//
// In an object file every sh_addr is 0: a code address is an offset into its section, and with
// several text sections (C++ inline functions and templates in COMDAT groups, gcc's
// .text.startup and .text.unlikely, -ffunction-sections) each offset is in several of them.
// ElfFile therefore places each allocated section at an address of its own, in header order as
// a linker would (libdwfl does the same for eu-addr2line), so that symbols, relocated DWARF
// (elf/relocate.h) and lookups never overlap.
//
// Addresses given to and reported by the symbolizer stay llvm-symbolizer's: an offset into the
// first text section, in header order, that is long enough to hold it (LLVM's
// SymbolizableObjectFile::getModuleSectionIndexForAddress).
//
// The one rule for which section an offset is looked up in is LLVM's SectionedAddress: a code
// address names the text section ObjectTextSectionAt finds, and every lookup (lines, inline
// chain, symbols, locals) is of that section's contents. A data address, or a code address no
// text section holds, names no section ("UndefSection"): it is then an offset into any
// section, and is looked up at each place ObjectOffsetAnywhere lists.
#pragma once

#include <cstdint>
#include <vector>

#include "stacksym/elf.h"

namespace stacksym::elf {

// Gives each allocated section of an ET_REL file an address range of its own (aligned as its
// sh_addralign asks, in header order, from 0), whatever its sh_addr (0 but in an object placed
// by a linker script). Other files are left as they are.
void PlaceObjectSections(uint16_t elf_type, std::vector<ElfSection>& sections);

// The text section (SHF_EXECINSTR, with file data) that llvm-symbolizer reads `offset` of an
// ET_REL file in: the first in header order whose size exceeds it. Null when none does.
const ElfSection* ObjectTextSectionAt(const ElfFile& elf, uint64_t offset);

// The places an offset that names no section stands for in an ET_REL file, in the order they
// are asked: where ElfFile placed it in each allocated section that holds it, in header order,
// then the offset's bare value when no section was placed there (DWARF addresses no relocation
// tied to a section, as hand-written DWARF has, keep their bare values). Empty for other files.
std::vector<uint64_t> ObjectOffsetAnywhere(const ElfFile& elf, uint64_t offset);

// The other way: the offset a placed address of an ET_REL file is in llvm-symbolizer's view
// (every section at 0): into the allocated section placed there, else its bare value.
uint64_t ObjectOffsetOf(const ElfFile& elf, uint64_t address);

}  // namespace stacksym::elf
