#include "llvm_symbolizer_names.h"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "elf/object_layout.h"

namespace stacksym::cli {
namespace {

struct RawSymbol {
  uint32_t name;
  uint8_t type;
  uint8_t binding;
  uint16_t shndx;
  uint64_t value;
  uint64_t size;
};

// Entry `i` of a symbol table section, in either ELF class; false past the end.
bool ReadSymbol(std::span<const uint8_t> data, size_t stride, bool is_64bit, size_t i,
                RawSymbol* out) {
  size_t need = is_64bit ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
  if (stride < need || data.size() < need || i > (data.size() - need) / stride) return false;
  const uint8_t* p = data.data() + i * stride;
  if (is_64bit) {
    Elf64_Sym s;
    std::memcpy(&s, p, sizeof s);
    *out = {s.st_name,
            static_cast<uint8_t>(ELF64_ST_TYPE(s.st_info)),
            static_cast<uint8_t>(ELF64_ST_BIND(s.st_info)),
            s.st_shndx,
            s.st_value,
            s.st_size};
  } else {
    Elf32_Sym s;
    std::memcpy(&s, p, sizeof s);
    *out = {s.st_name,
            static_cast<uint8_t>(ELF32_ST_TYPE(s.st_info)),
            static_cast<uint8_t>(ELF32_ST_BIND(s.st_info)),
            s.st_shndx,
            s.st_value,
            s.st_size};
  }
  return true;
}

// Symbols LLVM's ELF reader marks format-specific (SF_FormatSpecific), which llvm-symbolizer
// 16 never answers with: AArch64's mapping symbols ($x, $d), ARM's ($a, $t, $d) and its
// empty names, RISC-V's empty names (label differences).
bool IsFormatSpecific(uint16_t machine, std::string_view name) {
  switch (machine) {
    case EM_AARCH64:
      return name.starts_with("$d") || name.starts_with("$x");
    case EM_ARM:
      return name.empty() || name.starts_with("$d") || name.starts_with("$t") ||
             name.starts_with("$a");
    case EM_RISCV:
      return name.empty();
    default:
      return false;
  }
}

}  // namespace

LlvmSymbolNames::LlvmSymbolNames(const ElfFile& elf, bool untag_addresses) : elf_(&elf) {
  // .symtab when it has symbols, else .dynsym (llvm's computeSymbolSizes).
  const ElfSection* table = nullptr;
  for (uint32_t wanted : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
    for (const ElfSection& s : elf.sections()) {
      if (s.type == wanted && s.size > (elf.is_64bit() ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym))) {
        table = &s;
        break;
      }
    }
    if (table) break;
  }
  if (!table || table->link >= elf.sections().size()) return;
  auto data = elf.SectionData(*table);
  auto strings = elf.SectionData(elf.sections()[table->link]);
  if (!data || !strings) return;
  size_t stride =
      table->entsize ? table->entsize : (elf.is_64bit() ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym));
  RawSymbol raw;
  std::string_view file;  // the last STT_FILE symbol seen
  auto name_at = [&](uint32_t offset) {
    const char* name = reinterpret_cast<const char*>(strings->data()) + offset;
    return std::string_view(name, strnlen(name, strings->size() - offset));
  };
  for (size_t i = 0; ReadSymbol(*data, stride, elf.is_64bit(), i, &raw); ++i) {
    if (raw.name >= strings->size()) {  // LLVM reads every symbol's name first, and fails
      char text[128];
      std::snprintf(text, sizeof text,
                    "st_name (0x%x) is past the end of the string table of size 0x%zx", raw.name,
                    strings->size());
      error_ = text;
      entries_.clear();
      any_section_.clear();
      return;
    }
    if (raw.type == STT_FILE) {
      file = raw.name < strings->size() ? name_at(raw.name) : std::string_view();
      continue;
    }
    bool wanted = raw.type == STT_FUNC || raw.type == STT_GNU_IFUNC || raw.type == STT_OBJECT ||
                  raw.type == STT_NOTYPE;
    bool in_section =
        raw.shndx != SHN_UNDEF && (raw.shndx < SHN_LORESERVE || raw.shndx == SHN_XINDEX);
    if (!wanted || !in_section || raw.name >= strings->size()) continue;
    // Symbols of sections that are not loaded (a debug file's .gnu.warning.* notes, all at
    // address 0) name no address of the running program: LLVM 15+ leave them out too.
    if (raw.shndx < elf.sections().size() && (elf.sections()[raw.shndx].flags & SHF_ALLOC) == 0)
      continue;
    std::string_view name = name_at(raw.name);
    if (IsFormatSpecific(elf.machine(), name)) continue;
    // An object's values are offsets into their sections, placed apart by ElfFile.
    const uint64_t placed = elf.type() == ET_REL && raw.shndx < elf.sections().size()
                                ? elf.sections()[raw.shndx].addr
                                : 0;
    auto address = [&](uint64_t value) {
      // ARM and microMIPS functions' low bit marks their instruction set, not their address.
      if ((elf.machine() == EM_ARM || elf.machine() == EM_MIPS) && raw.type == STT_FUNC &&
          raw.shndx != SHN_ABS)
        value &= ~uint64_t{1};
      if (untag_addresses)
        value = static_cast<uint64_t>(static_cast<int64_t>(value << 8) >> 8);  // bit 55 up
      return value;
    };
    const std::string_view symbol_file = raw.binding == STB_LOCAL ? file : std::string_view();
    entries_.push_back({address(raw.value + placed), raw.size, name, symbol_file});
    // (As llvm-symbolizer sees it: every section at 0.)
    if (elf.type() == ET_REL)
      any_section_.push_back({address(raw.value), raw.size, name, symbol_file});
  }
  OnePerAddress(entries_);
  OnePerAddress(any_section_);
}

void LlvmSymbolNames::OnePerAddress(std::vector<Entry>& entries) {
  // Per address the largest size, and the last in the table among equal sizes.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.address != b.address ? a.address < b.address : a.size < b.size;
  });
  size_t out = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i + 1 < entries.size() && entries[i + 1].address == entries[i].address) continue;
    entries[out++] = entries[i];
  }
  entries.resize(out);
}

// llvm-symbolizer's lookup: the last symbol at or below `address`, unless it is sized and
// ends before it (a sizeless one covers everything above it).
const LlvmSymbolNames::Entry* LlvmSymbolNames::Covering(const std::vector<Entry>& entries,
                                                        uint64_t address) {
  auto it = std::upper_bound(entries.begin(), entries.end(), address,
                             [](uint64_t a, const Entry& e) { return a < e.address; });
  if (it == entries.begin()) return nullptr;
  --it;
  if (it->size != 0 && address - it->address >= it->size) return nullptr;  // in a gap
  return &*it;
}

std::optional<LlvmSymbolNames::Entry> LlvmSymbolNames::Find(uint64_t address) const {
  if (elf_->type() != ET_REL) {
    const Entry* e = Covering(entries_, address);
    return e ? std::optional<Entry>(*e) : std::nullopt;
  }
  // A code offset names the text section that holds it, and is looked up among that
  // section's symbols; one that no text section holds names none (elf/object_layout.h).
  const ElfSection* text = elf::ObjectTextSectionAt(*elf_, address);
  if (text == nullptr) return FindData(address);
  const Entry* e = Covering(entries_, text->addr + address);
  // (A sizeless symbol of an earlier section does not reach into this one.)
  if (e == nullptr || e->address < text->addr) return std::nullopt;
  Entry found = *e;
  found.address -= text->addr;
  return found;
}

std::optional<LlvmSymbolNames::Entry> LlvmSymbolNames::FindData(uint64_t address) const {
  // An object's data offset names no section: every section's symbols, each at 0, as
  // llvm-symbolizer looks it up.
  const Entry* e = Covering(elf_->type() == ET_REL ? any_section_ : entries_, address);
  return e ? std::optional<Entry>(*e) : std::nullopt;
}

}  // namespace stacksym::cli
