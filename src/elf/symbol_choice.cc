#include "elf/symbol_choice.h"

namespace stacksym::elf {

const SymbolTable* FallbackSymbolTable(const ElfFile& binary, const ElfFile* debug_file) {
  if (binary.symbols().has_symtab()) return nullptr;
  if (debug_file != nullptr && debug_file != &binary) {
    const SymbolTable& separate = debug_file->symbols();
    if (separate.has_symtab() && !separate.empty()) return &separate;
  }
  if (const ElfFile* mini = binary.mini_debug_info(); mini != nullptr) {
    const SymbolTable& embedded = mini->symbols();
    if (embedded.has_symtab() && !embedded.empty()) return &embedded;
  }
  return nullptr;
}

const SymbolTable* AbsoluteSymbolTable(const ElfFile& binary) {
  const SymbolTable& absolute = binary.absolute_symbols();
  return absolute.empty() ? nullptr : &absolute;
}

const SymbolTable* PltSymbolTable(const ElfFile& binary) {
  const SymbolTable& plt = binary.plt_symbols();
  return plt.empty() ? nullptr : &plt;
}

}  // namespace stacksym::elf
