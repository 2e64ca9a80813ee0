// SymbolTable lookups.
#include <algorithm>

#include "stacksym/elf.h"

namespace stacksym {

const ElfSymbol* SymbolTable::Find(uint64_t addr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), addr,
                             [](uint64_t a, const ElfSymbol& s) { return a < s.address; });
  if (it == symbols_.begin()) return nullptr;
  uint32_t i = static_cast<uint32_t>(it - symbols_.begin() - 1);
  // The last symbol starting at or before addr may be a nested one that ends before addr;
  // then one of the ranges enclosing it may still cover addr.
  while (i != kNone) {
    const ElfSymbol& s = symbols_[i];
    if (addr - s.address < s.size) return &s;
    i = enclosing_[i];
  }
  return nullptr;
}

const ElfSymbol* SymbolTable::FindByName(std::string_view name) const {
  for (const ElfSymbol& s : symbols_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace stacksym
