#include "elf/relocate.h"

#include <elf.h>

#include <optional>
#include <string>

#include "base/byte_cursor.h"
#include "elf/elf_format.h"

namespace stacksym::elf {

namespace {

// What one relocation type writes: `width` bytes of S + A, minus P when pc-relative.
struct RelocationKind {
  uint8_t width = 0;  // 0: R_*_NONE, nothing to write
  bool pc_relative = false;
};

// The types that appear in debug sections, as LLVM's relocation resolvers take them.
std::optional<RelocationKind> KindOf(uint16_t machine, uint32_t type) {
  switch (machine) {
    case EM_X86_64:
      switch (type) {
        case R_X86_64_NONE:
          return RelocationKind{};
        case R_X86_64_64:
        case R_X86_64_DTPOFF64:
          return RelocationKind{8, false};
        case R_X86_64_32:
        case R_X86_64_32S:
        case R_X86_64_DTPOFF32:
          return RelocationKind{4, false};
        case R_X86_64_PC32:
          return RelocationKind{4, true};
        case R_X86_64_PC64:
          return RelocationKind{8, true};
        default:
          return std::nullopt;
      }
    case EM_AARCH64:
      switch (type) {
        case R_AARCH64_NONE:
        case 256:  // R_AARCH64_NONE's other number (the ABI's "withdrawn" R_AARCH64_NULL)
          return RelocationKind{};
        case R_AARCH64_ABS64:
          return RelocationKind{8, false};
        case R_AARCH64_ABS32:
          return RelocationKind{4, false};
        case R_AARCH64_ABS16:
          return RelocationKind{2, false};
        case R_AARCH64_PREL64:
          return RelocationKind{8, true};
        case R_AARCH64_PREL32:
          return RelocationKind{4, true};
        case R_AARCH64_PREL16:
          return RelocationKind{2, true};
        default:
          return std::nullopt;
      }
    case EM_386:
      switch (type) {
        case R_386_NONE:
          return RelocationKind{};
        case R_386_32:
        case R_386_TLS_LDO_32:
          return RelocationKind{4, false};
        case R_386_PC32:
          return RelocationKind{4, true};
        default:
          return std::nullopt;
      }
    default:
      return std::nullopt;
  }
}

std::string Label(const ElfSection& s) {
  return s.name.empty() ? "[" + std::to_string(s.index) + "]" : std::string(s.name);
}

// The symbol table a relocation section refers to, with its extended section indexes.
struct SymbolSource {
  std::span<const uint8_t> symbols;
  std::span<const uint8_t> xindex;  // SHT_SYMTAB_SHNDX, when present
  size_t entry_size = 0;
};

Result<SymbolSource> SymbolsOf(const ElfFile& elf, const ElfSection& relocations) {
  const auto& sections = elf.sections();
  const size_t min_size = elf.is_64bit() ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
  if (relocations.link == SHN_UNDEF || relocations.link >= sections.size() ||
      (sections[relocations.link].type != SHT_SYMTAB &&
       sections[relocations.link].type != SHT_DYNSYM)) {
    return Error(ErrorCode::kMalformed, "symbol table index " + std::to_string(relocations.link) +
                                            " does not name a symbol table");
  }
  const ElfSection& table = sections[relocations.link];
  if (table.entsize != 0 && table.entsize < min_size) {
    return Error(ErrorCode::kMalformed,
                 "symbol entry size " + std::to_string(table.entsize) + " is too small");
  }
  SymbolSource source;
  source.entry_size = table.entsize != 0 ? table.entsize : min_size;
  Result<std::span<const uint8_t>> data = elf.SectionData(table);
  if (!data) return std::move(data).error();
  source.symbols = *data;
  for (const ElfSection& s : sections) {
    if (s.type == SHT_SYMTAB_SHNDX && s.link == table.index) {
      Result<std::span<const uint8_t>> x = elf.SectionData(s);
      if (!x) return std::move(x).error();
      source.xindex = *x;
      break;
    }
  }
  return source;
}

// S: the symbol's value, plus its section's address (placed by ElfFile: object files have
// none). Undefined symbols are 0, as for a linker that resolves nothing.
Result<uint64_t> SymbolValue(const ElfFile& elf, const SymbolSource& source, uint64_t index) {
  if (index == 0) return uint64_t{0};
  uint64_t at;
  if (!CheckedMul(index, source.entry_size, &at) ||
      !RangeFits(at, source.entry_size, source.symbols.size())) {
    return Error(ErrorCode::kMalformed,
                 "symbol index " + std::to_string(index) + " is past the end of the symbol table");
  }
  ByteCursor c(source.symbols.subspan(at));
  RawSymbol sym = ReadSymbol(c, elf.is_64bit());
  uint32_t shndx = sym.shndx;
  if (shndx == SHN_XINDEX) {
    ByteCursor x(source.xindex);
    x.Seek(index * 4);
    shndx = x.U32();
    if (!x.ok()) {
      return Error(ErrorCode::kMalformed, "symbol " + std::to_string(index) +
                                              " has an extended section index past the end of "
                                              "its SHT_SYMTAB_SHNDX table");
    }
  } else if (shndx == SHN_UNDEF || shndx >= SHN_LORESERVE) {
    return sym.value;  // SHN_ABS, SHN_COMMON: the value itself; undefined: 0
  }
  if (shndx >= elf.sections().size()) {
    return Error(ErrorCode::kMalformed, "symbol " + std::to_string(index) + " has section index " +
                                            std::to_string(shndx) + ", out of range");
  }
  return sym.value + elf.sections()[shndx].addr;
}

// One relocation section's entries applied to `bytes`.
Result<void> ApplySection(const ElfFile& elf, const ElfSection& target,
                          const ElfSection& relocations, std::span<uint8_t> bytes) {
  const bool rela = relocations.type == SHT_RELA;
  const bool is64 = elf.is_64bit();
  const size_t min_size = rela ? (is64 ? sizeof(Elf64_Rela) : sizeof(Elf32_Rela))
                               : (is64 ? sizeof(Elf64_Rel) : sizeof(Elf32_Rel));
  if (relocations.entsize != 0 && relocations.entsize < min_size) {
    return Error(ErrorCode::kMalformed, "relocation entry size " +
                                            std::to_string(relocations.entsize) +
                                            " is smaller than " + std::to_string(min_size));
  }
  const size_t stride = relocations.entsize != 0 ? relocations.entsize : min_size;
  Result<std::span<const uint8_t>> entries = elf.SectionData(relocations);
  if (!entries) return std::move(entries).error();
  Result<SymbolSource> symbols = SymbolsOf(elf, relocations);
  if (!symbols) return std::move(symbols).error();
  const size_t count = entries->size() / stride;
  for (size_t i = 0; i < count; ++i) {
    ByteCursor c(entries->subspan(i * stride, min_size));
    uint64_t offset = is64 ? c.U64() : c.U32();
    uint64_t info = is64 ? c.U64() : c.U32();
    int64_t addend = rela ? (is64 ? c.S64() : c.S32()) : 0;
    const uint32_t type = static_cast<uint32_t>(is64 ? ELF64_R_TYPE(info) : ELF32_R_TYPE(info));
    const uint64_t symbol = is64 ? ELF64_R_SYM(info) : ELF32_R_SYM(info);
    auto fail = [&](ErrorCode code, const std::string& what) -> Result<void> {
      return Error(code, "relocation " + std::to_string(i) + " (type " + std::to_string(type) +
                             ", offset " + Hex(offset) + "): " + what);
    };
    std::optional<RelocationKind> kind = KindOf(elf.machine(), type);
    if (!kind) {
      return fail(ErrorCode::kUnsupported, "type not supported in debug sections of machine " +
                                               std::to_string(elf.machine()));
    }
    if (kind->width == 0) continue;
    if (!RangeFits(offset, kind->width, bytes.size())) {
      return fail(ErrorCode::kMalformed, "runs past the end of " + Label(target) + " (" +
                                             std::to_string(bytes.size()) + " bytes)");
    }
    uint8_t* at = bytes.data() + offset;
    if (!rela) {  // REL: the addend is what the location holds
      ByteCursor implicit(at, kind->width);
      addend = static_cast<int64_t>(implicit.UN(kind->width));
    }
    Result<uint64_t> s = SymbolValue(elf, *symbols, symbol);
    if (!s) return fail(ErrorCode::kMalformed, s.error().message);
    uint64_t value = *s + static_cast<uint64_t>(addend);  // modulo 2^64, as a linker computes
    if (kind->pc_relative) value -= target.addr + offset;
    for (uint8_t b = 0; b < kind->width; ++b) at[b] = static_cast<uint8_t>(value >> (8 * b));
  }
  if (entries->size() % stride != 0) {
    return Error(ErrorCode::kMalformed, "size " + std::to_string(entries->size()) +
                                            " is not a multiple of the entry size " +
                                            std::to_string(stride));
  }
  return {};
}

bool IsDebugTarget(const ElfSection& s) {
  return s.type == SHT_PROGBITS && (s.flags & SHF_ALLOC) == 0;
}

}  // namespace

std::vector<std::vector<uint32_t>> DebugRelocationSections(const ElfFile& elf) {
  std::vector<std::vector<uint32_t>> by_target;
  if (elf.type() != ET_REL) return by_target;
  const auto& sections = elf.sections();
  for (const ElfSection& s : sections) {
    if (s.type != SHT_REL && s.type != SHT_RELA) continue;
    if (s.info == 0 || s.info >= sections.size() || !IsDebugTarget(sections[s.info])) continue;
    if (by_target.empty()) by_target.resize(sections.size());
    by_target[s.info].push_back(s.index);
  }
  return by_target;
}

Result<void> ApplyRelocations(const ElfFile& elf, const ElfSection& target,
                              std::span<const uint32_t> relocation_sections,
                              std::span<uint8_t> bytes) {
  for (uint32_t index : relocation_sections) {
    const ElfSection& relocations = elf.sections()[index];
    Result<void> applied = ApplySection(elf, target, relocations, bytes);
    if (!applied)
      return std::move(applied).error().WithFile(elf.path()).WithSection(Label(relocations));
  }
  return {};
}

}  // namespace stacksym::elf
