// Where a stripped binary's missing symbols come from: its separate debug file's .symtab, or
// its MiniDebugInfo's. A binary without a .symtab of its own (stripped: .dynsym at most) names
// most addresses from .dynsym or DWARF; the addresses neither names (the startup code, _start;
// local functions without DWARF) are named from the debug file's .symtab, which the stripping
// kept, or from the .symtab embedded in .gnu_debugdata. Only those: the binary's own names,
// and DWARF's, stay as they were (and as llvm-symbolizer gives them). The direct path
// (ElfSymbolizer) and the persisted index (IndexBuilder) both ask here, so that they answer
// alike.
#pragma once

#include "stacksym/elf.h"

namespace stacksym::elf {

// When `binary` has no .symtab: the symbol table of `debug_file` (a separate file, not the
// binary itself) if it has one, else that of the binary's MiniDebugInfo (.gnu_debugdata, as
// Fedora and RHEL ship every binary: the function symbols .dynsym lacks) if it has one; else
// null. The debug file's comes first: it holds every symbol, MiniDebugInfo only functions.
const SymbolTable* FallbackSymbolTable(const ElfFile& binary, const ElfFile* debug_file);

// The names of the binary's PLT stubs ("puts@plt", ElfFile::plt_symbols), which name an address
// that neither its symbol tables (nor the debug file's, above) nor DWARF name; null when it has
// none. Asked after FallbackSymbolTable, by the direct path and the persisted index alike.
// llvm-symbolizer and addr2line name no PLT stub: their drop-in leaves these out
// (SymbolizeOptions::plt_names).
const SymbolTable* PltSymbolTable(const ElfFile& binary);

// The binary's absolute symbols (SHN_ABS; ElfFile::absolute_symbols), which name an address
// that neither its symbol tables, DWARF nor FallbackSymbolTable name, before the PLT stubs'
// names: eu-addr2line names such an address from them (a sizeless one: its exact address
// only); llvm-symbolizer does not, and its drop-in leaves them out with the debug file's
// symbols (SymbolizeOptions::symbols_from_debug_file). Null when there are none.
const SymbolTable* AbsoluteSymbolTable(const ElfFile& binary);

}  // namespace stacksym::elf
