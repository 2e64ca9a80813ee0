// SymbolTable lookups.
#include <algorithm>

#include "stacksym/elf.h"

namespace stacksym {

template <class ResumeEnd>
const ElfSymbol* SymbolTable::CoverOf(uint64_t addr, size_t symbol_end,
                                      const ResumeEnd& resume_end) const {
  if (symbol_end == 0) return nullptr;
  const ElfSymbol& last = symbols_[symbol_end - 1];
  if (addr - last.address < last.size) return &last;  // the innermost cover, if it covers
  // The last symbol starting at or before addr ended before it. If an enclosing symbol still
  // covers addr, a resume point was recorded where the nested range(s) ended — the last resume
  // point at or before addr names it.
  const size_t r = resume_end();
  if (r == 0) return nullptr;
  const ElfSymbol& outer = symbols_[resumes_[r - 1].index];
  return addr - outer.address < outer.size ? &outer : nullptr;
}

const ElfSymbol* SymbolTable::Find(uint64_t addr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), addr,
                             [](uint64_t a, const ElfSymbol& s) { return a < s.address; });
  return CoverOf(addr, static_cast<size_t>(it - symbols_.begin()), [&] {
    auto r = std::upper_bound(resumes_.begin(), resumes_.end(), addr,
                              [](uint64_t a, const Resume& x) { return a < x.position; });
    return static_cast<size_t>(r - resumes_.begin());
  });
}

const ElfSymbol* SymbolTable::AscendingFinder::Find(uint64_t addr) {
  const std::vector<ElfSymbol>& symbols = table_.symbols_;
  while (next_symbol_ < symbols.size() && symbols[next_symbol_].address <= addr) ++next_symbol_;
  return table_.CoverOf(addr, next_symbol_, [&] {
    const std::vector<Resume>& resumes = table_.resumes_;
    while (next_resume_ < resumes.size() && resumes[next_resume_].position <= addr) {
      ++next_resume_;
    }
    return next_resume_;
  });
}

const ElfSymbol* SymbolTable::FindByName(std::string_view name) const {
  for (const ElfSymbol& s : symbols_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace stacksym
