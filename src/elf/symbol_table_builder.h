// elf/symbol_table_builder.h — turns .symtab/.dynsym into a SymbolTable.
//
// Keeps STT_FUNC, STT_GNU_IFUNC, STT_OBJECT and STT_NOTYPE (assembly without .type; in loaded
// sections, no mapping symbols or .L labels) symbols defined in a real section, sorts them
// once, keeps one entry per address (global > weak > local, then functions over objects over
// untyped labels, then sized over sizeless, then by name), gives sizeless symbols the extent
// up to the next symbol or their section's end, and records where enclosing symbols resume
// after nested ones so Find returns the innermost cover in O(log n).
// Names are views into the mapped string tables: no allocation per symbol.
#pragma once

#include "stacksym/elf.h"

namespace stacksym::elf {

class SymbolTableBuilder {
 public:
  static void Build(const ElfFile& elf, SymbolTable* table);
  // The PLT stubs' made-up symbols (ElfFile::plt_symbols; elf/plt_symbols.cc).
  static void BuildPlt(const ElfFile& elf, SymbolTable* table);
  // The SHN_ABS symbols (ElfFile::absolute_symbols): sizeless ones cover their address only.
  static void BuildAbsolute(const ElfFile& elf, SymbolTable* table);

 private:
  static void SortAndMergeAliases(std::vector<ElfSymbol>& syms);
  static void FindResumePoints(SymbolTable& table);
};

}  // namespace stacksym::elf
