#include "elf/symbol_choice.h"

namespace stacksym::elf {

const SymbolTable* FallbackSymbolTable(const ElfFile& binary, const ElfFile* debug_file) {
  if (debug_file == nullptr || debug_file == &binary || binary.symbols().has_symtab()) {
    return nullptr;
  }
  const SymbolTable& separate = debug_file->symbols();
  return separate.has_symtab() && !separate.empty() ? &separate : nullptr;
}

const SymbolTable* PltSymbolTable(const ElfFile& binary) {
  const SymbolTable& plt = binary.plt_symbols();
  return plt.empty() ? nullptr : &plt;
}

}  // namespace stacksym::elf
