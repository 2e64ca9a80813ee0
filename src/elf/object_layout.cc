#include "elf/object_layout.h"

#include <elf.h>

namespace stacksym::elf {

void PlaceObjectSections(uint16_t elf_type, std::vector<ElfSection>& sections) {
  if (elf_type != ET_REL) return;
  uint64_t next = 0;
  bool full = false;  // an end would pass 2^64 (a damaged file): the rest stay at 0
  for (ElfSection& s : sections) {
    if ((s.flags & SHF_ALLOC) == 0) continue;
    s.addr = 0;
    if (s.size == 0 || full) continue;
    // A bad alignment (not a power of two, or absurd) is taken as none.
    const uint64_t align =
        s.addralign > 1 && (s.addralign & (s.addralign - 1)) == 0 && s.addralign <= (1u << 16)
            ? s.addralign
            : 1;
    uint64_t start, end;
    if (__builtin_add_overflow(next, align - 1, &start) ||
        __builtin_add_overflow(start & ~(align - 1), s.size, &end)) {
      full = true;
      continue;
    }
    s.addr = start & ~(align - 1);
    next = end;
  }
}

const ElfSection* ObjectTextSectionAt(const ElfFile& elf, uint64_t offset) {
  if (elf.type() != ET_REL) return nullptr;
  for (const ElfSection& s : elf.sections()) {
    if ((s.flags & SHF_EXECINSTR) == 0 || s.type == SHT_NOBITS) continue;
    if (offset < s.size) return &s;
  }
  return nullptr;
}

std::vector<uint64_t> ObjectOffsetAnywhere(const ElfFile& elf, uint64_t offset) {
  std::vector<uint64_t> places;
  if (elf.type() != ET_REL) return places;
  bool bare_is_placed = false;
  for (const ElfSection& s : elf.sections()) {
    if ((s.flags & SHF_ALLOC) == 0 || s.size == 0) continue;
    if (offset < s.size) places.push_back(s.addr + offset);
    if (offset >= s.addr && offset - s.addr < s.size) bare_is_placed = true;
  }
  if (!bare_is_placed) places.push_back(offset);
  return places;
}

uint64_t ObjectOffsetOf(const ElfFile& elf, uint64_t address) {
  for (const ElfSection& s : elf.sections()) {
    if ((s.flags & SHF_ALLOC) == 0 || s.size == 0) continue;
    if (address >= s.addr && address - s.addr < s.size) return address - s.addr;
  }
  return address;
}

}  // namespace stacksym::elf
