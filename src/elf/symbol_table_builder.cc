#include "elf/symbol_table_builder.h"

#include <elf.h>

#include <algorithm>
#include <string>

#include "base/byte_cursor.h"
#include "elf/elf_format.h"

namespace stacksym::elf {

namespace {

int BindingRank(uint8_t binding) {
  switch (binding) {
    case STB_GLOBAL:
    case STB_GNU_UNIQUE:
      return 0;
    case STB_WEAK:
      return 1;
    case STB_LOCAL:
      return 2;
    default:
      return 3;
  }
}

// Among aliases of one binding: a function's type first, then an object's, then a label's.
int TypeRank(uint8_t type) {
  switch (type) {
    case STT_FUNC:
    case STT_GNU_IFUNC:
      return 0;
    case STT_OBJECT:
      return 1;
    default:
      return 2;
  }
}

// An untyped symbol names code or data only in a loaded section (labels in debug sections name
// no address of the program), and not as an ARM/AArch64 mapping symbol ($x, $d, $a, $t, which
// mark instruction sets, not functions) or an assembler-local .L label, as llvm-symbolizer
// leaves those out.
bool WantedNotype(std::string_view name, const ElfSection& section) {
  if ((section.flags & SHF_ALLOC) == 0) return false;
  return !name.starts_with('$') && !name.starts_with(".L");
}

// Strict order: address, then the preferred alias first. A typed symbol beats an untyped
// label at its address whatever their bindings (a global marker such as _stext or one added
// with objcopy --add-symbol does not rename a local function there), as in eu-addr2line and
// llvm-symbolizer.
bool Before(const ElfSymbol& a, const ElfSymbol& b) {
  if (a.address != b.address) return a.address < b.address;
  const bool a_untyped = a.type == STT_NOTYPE, b_untyped = b.type == STT_NOTYPE;
  if (a_untyped != b_untyped) return b_untyped;
  int ra = BindingRank(a.binding), rb = BindingRank(b.binding);
  if (ra != rb) return ra < rb;
  ra = TypeRank(a.type), rb = TypeRank(b.type);
  if (ra != rb) return ra < rb;
  if (a.sizeless != b.sizeless) return !a.sizeless;
  if (a.name != b.name) return a.name < b.name;
  return a.size > b.size;
}

uint64_t EndOf(const ElfSymbol& s) {
  uint64_t end;
  return __builtin_add_overflow(s.address, s.size, &end) ? UINT64_MAX : end;
}

struct TableCounts {
  size_t bad_section = 0;
  size_t bad_name = 0;
};

// Appends the wanted symbols of one SHT_SYMTAB/SHT_DYNSYM section.
// `absolute`: the SHN_ABS symbols only (ElfFile::absolute_symbols), instead of those defined in a
// section.
void ReadTable(const ElfFile& elf, const ElfSection& table, bool absolute,
               std::vector<ElfSymbol>* out, std::vector<Error>* problems, size_t* skipped) {
  const std::string label = table.name.empty() ? "symbol table" : std::string(table.name);
  const auto& sections = elf.sections();
  const size_t entry_size = elf.is_64bit() ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
  if (table.entsize != 0 && table.entsize < entry_size) {
    problems->push_back(
        Error(ErrorCode::kMalformed, "symbol entry size " + std::to_string(table.entsize) +
                                         " is smaller than " + std::to_string(entry_size))
            .WithFile(elf.path())
            .WithSection(label));
    return;
  }
  const size_t stride = table.entsize != 0 ? table.entsize : entry_size;
  Result<std::span<const uint8_t>> data = elf.SectionData(table);
  if (!data) {
    problems->push_back(data.error());
    return;
  }
  if (table.link >= sections.size()) {
    problems->push_back(
        Error(ErrorCode::kMalformed,
              "string table index " + std::to_string(table.link) + " is out of range")
            .WithFile(elf.path())
            .WithSection(label));
    return;
  }
  Result<std::span<const uint8_t>> strings = elf.SectionData(sections[table.link]);
  if (!strings) {
    problems->push_back(strings.error());
    return;
  }
  // Section indexes >= SHN_LORESERVE are kept in a parallel SHT_SYMTAB_SHNDX table.
  std::span<const uint8_t> xindex;
  for (const ElfSection& s : sections) {
    if (s.type == SHT_SYMTAB_SHNDX && s.link == table.index) {
      Result<std::span<const uint8_t>> x = elf.SectionData(s);
      if (x) xindex = *x;
      break;
    }
  }

  TableCounts counts;
  const size_t count = data->size() / stride;
  out->reserve(out->size() + count);
  for (size_t i = 1; i < count; ++i) {  // entry 0 is the reserved null symbol
    ByteCursor c(data->subspan(i * stride, entry_size));
    elf::RawSymbol raw = elf::ReadSymbol(c, elf.is_64bit());
    uint8_t type = ELF64_ST_TYPE(raw.info);
    // STT_NOTYPE too: functions written in assembly without .type are that, and
    // llvm-symbolizer and eu-addr2line name addresses from them as from STT_FUNC.
    if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT && type != STT_NOTYPE) {
      continue;
    }
    uint32_t shndx = raw.shndx;
    if (absolute) {
      ElfSymbol sym;
      if (shndx != SHN_ABS || !StringAt(*strings, raw.name, &sym.name) || sym.name.empty()) {
        continue;
      }
      sym.address = raw.value;
      sym.size = raw.size;
      sym.type = type;
      sym.binding = ELF64_ST_BIND(raw.info);
      sym.section = SHN_ABS;
      sym.sizeless = raw.size == 0;
      out->push_back(sym);
      continue;
    }
    if (shndx == SHN_UNDEF) continue;
    if (shndx == SHN_XINDEX) {
      ByteCursor x(xindex);
      x.Seek(i * 4);
      shndx = x.U32();
      if (!x.ok()) {
        ++counts.bad_section;
        continue;
      }
    } else if (shndx >= SHN_LORESERVE) {
      continue;  // SHN_ABS, SHN_COMMON, processor-specific: no section to place them in
    }
    if (shndx >= sections.size() || shndx == SHN_UNDEF) {
      ++counts.bad_section;
      continue;
    }
    ElfSymbol sym;
    if (!StringAt(*strings, raw.name, &sym.name)) {
      ++counts.bad_name;
      continue;
    }
    if (sym.name.empty()) continue;
    if (type == STT_NOTYPE && !WantedNotype(sym.name, sections[shndx])) continue;
    // An object file's values are offsets into their section, placed by ElfFile.
    sym.address = raw.value + (elf.type() == ET_REL ? sections[shndx].addr : 0);
    sym.size = raw.size;
    sym.type = type;
    sym.binding = ELF64_ST_BIND(raw.info);
    sym.section = shndx;
    sym.sizeless = raw.size == 0;
    out->push_back(sym);
  }
  if (data->size() % stride != 0) {
    problems->push_back(Error(ErrorCode::kMalformed, "size " + std::to_string(data->size()) +
                                                         " is not a multiple of the entry size " +
                                                         std::to_string(stride) +
                                                         "; the partial entry is ignored")
                            .WithFile(elf.path())
                            .WithSection(label));
  }
  if (counts.bad_section > 0) {
    problems->push_back(Error(ErrorCode::kMalformed,
                              std::to_string(counts.bad_section) +
                                  " symbols have a section index out of range and were skipped")
                            .WithFile(elf.path())
                            .WithSection(label));
  }
  if (counts.bad_name > 0) {
    problems->push_back(
        Error(ErrorCode::kMalformed, std::to_string(counts.bad_name) +
                                         " symbols have a name offset outside the string table and "
                                         "were skipped")
            .WithFile(elf.path())
            .WithSection(label));
  }
  *skipped += counts.bad_section + counts.bad_name;
}

}  // namespace

void SymbolTableBuilder::Build(const ElfFile& elf, SymbolTable* table) {
  std::vector<ElfSymbol>& syms = table->symbols_;
  for (const ElfSection& s : elf.sections()) {
    if (s.type == SHT_SYMTAB) table->has_symtab_ = true;
    if (s.type == SHT_DYNSYM) table->has_dynsym_ = true;
    if (s.type == SHT_SYMTAB || s.type == SHT_DYNSYM) {
      ReadTable(elf, s, false, &syms, &table->problems_, &table->skipped_);
    }
  }
  SortAndMergeAliases(syms);

  // Sizeless symbols extend to the next symbol, but never past the end of their section.
  const auto& sections = elf.sections();
  for (size_t i = 0; i < syms.size(); ++i) {
    ElfSymbol& s = syms[i];
    if (!s.sizeless) continue;
    const ElfSection& sec = sections[s.section];
    uint64_t sec_end;
    if (__builtin_add_overflow(sec.addr, sec.size, &sec_end)) sec_end = UINT64_MAX;
    if (s.address < sec.addr || s.address >= sec_end) {
      s.size = 0;  // outside its own section: claim nothing
      continue;
    }
    uint64_t end = sec_end;
    if (i + 1 < syms.size()) end = std::min(end, syms[i + 1].address);
    s.size = end - s.address;
  }
  FindResumePoints(*table);
}

void SymbolTableBuilder::BuildAbsolute(const ElfFile& elf, SymbolTable* table) {
  std::vector<ElfSymbol>& syms = table->symbols_;
  for (const ElfSection& s : elf.sections()) {
    if (s.type == SHT_SYMTAB || s.type == SHT_DYNSYM) {
      ReadTable(elf, s, true, &syms, &table->problems_, &table->skipped_);
    }
  }
  SortAndMergeAliases(syms);
  // No section bounds them: a sizeless one names its own address only.
  for (ElfSymbol& s : syms) {
    if (s.sizeless && s.address != UINT64_MAX) s.size = 1;
  }
  FindResumePoints(*table);
}

void SymbolTableBuilder::SortAndMergeAliases(std::vector<ElfSymbol>& syms) {
  // A lambda (not a function pointer) so the comparison inlines into the sort.
  std::sort(syms.begin(), syms.end(),
            [](const ElfSymbol& a, const ElfSymbol& b) { return Before(a, b); });

  // One entry per address: the first of each run is the preferred alias. A sizeless winner
  // takes the size of a sized alias, if there is one.
  size_t kept = 0;
  for (size_t i = 0; i < syms.size(); ++i) {
    if (kept > 0 && syms[kept - 1].address == syms[i].address) {
      ElfSymbol& winner = syms[kept - 1];
      if (winner.size == 0 && syms[i].size != 0) {
        winner.size = syms[i].size;
        winner.sizeless = false;
      }
      continue;
    }
    syms[kept++] = syms[i];
  }
  syms.resize(kept);
  syms.shrink_to_fit();
}

// Resume points: sweep the ranges in start order with a stack of open ones (as in matching
// parentheses). When the innermost open range ends and an enclosing one is still open, the
// enclosing one covers again from that end on. Ranges that ended below the top of the stack
// (partial overlaps) are dropped when they surface.
void SymbolTableBuilder::FindResumePoints(SymbolTable& table) {
  const std::vector<ElfSymbol>& syms = table.symbols_;
  std::vector<SymbolTable::Resume>& resumes = table.resumes_;
  std::vector<uint32_t> open;
  auto close_until = [&](uint64_t position) {
    while (!open.empty() && EndOf(syms[open.back()]) <= position) {
      uint64_t end = EndOf(syms[open.back()]);
      open.pop_back();
      while (!open.empty() && EndOf(syms[open.back()]) <= end) open.pop_back();
      if (!open.empty()) resumes.push_back({end, open.back()});
    }
  };
  for (size_t i = 0; i < syms.size(); ++i) {
    close_until(syms[i].address);
    if (syms[i].size > 0) {
      open.push_back(static_cast<uint32_t>(i));
    } else if (!open.empty()) {
      resumes.push_back({syms[i].address, open.back()});  // an empty range inside another
    }
  }
  close_until(UINT64_MAX);
  resumes.shrink_to_fit();
}

}  // namespace stacksym::elf
