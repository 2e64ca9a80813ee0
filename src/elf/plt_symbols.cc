// The PLT stubs' symbols (ElfFile::plt_symbols), as perf and objdump name them.
//
// Each x86-64 stub that calls a function jumps through the function's GOT slot:
// `jmp *disp(%rip)` (ff 25 disp32), behind `bnd` (f2) and/or `endbr64` (f3 0f 1e fa) in the
// MPX and IBT layouts. The slot is the r_offset of the function's dynamic relocation
// (R_X86_64_JUMP_SLOT in .rela.plt for .plt and .plt.sec stubs; R_X86_64_GLOB_DAT in .rela.dyn
// for .plt.got ones), whose symbol names the stub "NAME@plt". Decoding the slot (as objdump
// does) rather than pairing entry i with relocation i keeps the names right whatever order
// the linker laid the stubs in (-z now, .plt.got, IBT).
//
// An ifunc's stub (R_X86_64_IRELATIVE, no symbol) is named after the function symbol at the
// resolver's address, the relocation's addend (objdump: "*ABS*+0x...@plt").
//
// PLT0, the lazy resolver, jumps through GOT+16, which no relocation names: it is named ".plt",
// as perf names it, and when .plt.sec (or MPX's .plt.bnd) holds the stubs, the whole of .plt
// (PLT0 and the lazy stubs that push an index and jump to it) is ".plt", as perf extends it.
//
// AArch64 (ReadAarch64Stubs): the stubs of .plt are found by their `adrp x16; ldr x17` pair,
// which gives the GOT slot (JUMP_SLOT, GLOB_DAT, IRELATIVE relocations as on x86-64); PLT0
// is its 32-byte header.
//
// Everything is read through ByteCursor and bounds-checked: a short section, an entry size
// that makes no sense, a relocation whose symbol or name is out of range gives no name.
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_cursor.h"
#include "elf/elf_format.h"
#include "elf/symbol_table_builder.h"

namespace stacksym::elf {

namespace {

constexpr uint64_t kDefaultEntrySize = 16;  // x86-64 .plt, .plt.sec; IBT .plt.got
constexpr uint64_t kMaxEntrySize = 64;

// A GOT slot and the name of the function the relocation that fills it gives.
struct Slot {
  uint64_t address;
  std::string name;
};

// An R_X86_64_IRELATIVE slot (an ifunc called through the PLT of its own binary: static
// executables, and local calls) has no symbol, only the resolver's address in the addend: the
// function symbol there names it, as perf does; else objdump's "*ABS*+0x...".
std::string IfuncName(const ElfFile& elf, uint64_t resolver) {
  const ElfSymbol* s = elf.symbols().Find(resolver);
  if (s != nullptr && s->address == resolver) return std::string(s->name);
  return "*ABS*+" + Hex(resolver);
}

// The GOT slots of the function relocations (JUMP_SLOT, GLOB_DAT, IRELATIVE) of every
// allocated SHT_RELA section (.rela.plt, .rela.dyn, .rela.iplt), sorted by address, first
// relocation first.
struct RelocationTypes {
  uint32_t jump_slot, glob_dat, irelative;
};
constexpr RelocationTypes kX86_64Relocations = {R_X86_64_JUMP_SLOT, R_X86_64_GLOB_DAT,
                                                R_X86_64_IRELATIVE};
constexpr RelocationTypes kAarch64Relocations = {R_AARCH64_JUMP_SLOT, R_AARCH64_GLOB_DAT,
                                                 R_AARCH64_IRELATIVE};

std::vector<Slot> ReadSlots(const ElfFile& elf, const RelocationTypes& types) {
  std::vector<Slot> slots;
  const auto& sections = elf.sections();
  for (const ElfSection& rela : sections) {
    if (rela.type != SHT_RELA || (rela.flags & SHF_ALLOC) == 0) continue;
    if (rela.entsize != 0 && rela.entsize < sizeof(Elf64_Rela)) continue;
    if (rela.link == 0 || rela.link >= sections.size()) continue;
    const ElfSection& symtab = sections[rela.link];
    if (symtab.type != SHT_DYNSYM && symtab.type != SHT_SYMTAB) continue;
    if (symtab.link == 0 || symtab.link >= sections.size()) continue;
    if (symtab.entsize != 0 && symtab.entsize < sizeof(Elf64_Sym)) continue;
    Result<std::span<const uint8_t>> relocs = elf.SectionData(rela);
    Result<std::span<const uint8_t>> symbols = elf.SectionData(symtab);
    Result<std::span<const uint8_t>> strings = elf.SectionData(sections[symtab.link]);
    if (!relocs || !symbols || !strings) continue;
    const uint64_t stride = rela.entsize != 0 ? rela.entsize : sizeof(Elf64_Rela);
    const uint64_t sym_stride = symtab.entsize != 0 ? symtab.entsize : sizeof(Elf64_Sym);
    for (uint64_t at = 0; stride <= relocs->size() - at; at += stride) {
      ByteCursor c(relocs->subspan(at, sizeof(Elf64_Rela)));
      uint64_t offset = c.U64();
      uint64_t info = c.U64();
      uint64_t addend = c.U64();
      if (!c.ok()) break;
      uint32_t type = ELF64_R_TYPE(info);
      if (type == types.irelative) {
        slots.push_back({offset, IfuncName(elf, addend)});
        continue;
      }
      if (type != types.jump_slot && type != types.glob_dat) continue;
      uint64_t index = ELF64_R_SYM(info);
      uint64_t sym_at;
      if (index == 0 || !CheckedMul(index, sym_stride, &sym_at) ||
          !RangeFits(sym_at, sizeof(Elf64_Sym), symbols->size())) {
        continue;
      }
      ByteCursor s(symbols->subspan(sym_at, sizeof(Elf64_Sym)));
      RawSymbol raw = ReadSymbol(s, /*is_64bit=*/true);
      std::string_view name;
      if (!s.ok() || !StringAt(*strings, raw.name, &name) || name.empty()) continue;
      slots.push_back({offset, std::string(name)});
    }
  }
  std::stable_sort(slots.begin(), slots.end(),
                   [](const Slot& a, const Slot& b) { return a.address < b.address; });
  return slots;
}

// The relocation naming GOT slot `slot`, or null.
const Slot* SlotAt(const std::vector<Slot>& slots, uint64_t slot) {
  auto it = std::lower_bound(slots.begin(), slots.end(), slot,
                             [](const Slot& s, uint64_t a) { return s.address < a; });
  return it != slots.end() && it->address == slot ? &*it : nullptr;
}

// The GOT slot a stub at `address` jumps through, or false when `entry` holds no
// `jmp *disp(%rip)` where a stub has one.
bool StubSlot(std::span<const uint8_t> entry, uint64_t address, uint64_t* slot) {
  static constexpr uint8_t kEndbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
  struct Layout {
    size_t jmp;  // where ff 25 starts; the prefix before it is endbr64 and/or bnd
    bool endbr;
    bool bnd;
  };
  static constexpr Layout kLayouts[] = {
      {0, false, false}, {1, false, true}, {4, true, false}, {5, true, true}};
  for (const Layout& l : kLayouts) {
    if (entry.size() < l.jmp + 6) continue;
    if (l.endbr && std::memcmp(entry.data(), kEndbr64, sizeof kEndbr64) != 0) continue;
    if (l.bnd && entry[l.jmp - 1] != 0xf2) continue;
    if (entry[l.jmp] != 0xff || entry[l.jmp + 1] != 0x25) continue;
    ByteCursor c(entry.subspan(l.jmp + 2, 4));
    int64_t disp = static_cast<int32_t>(c.U32());
    // The displacement is from the end of the instruction (wrapping, like the CPU).
    *slot = address + l.jmp + 6 + static_cast<uint64_t>(disp);
    return true;
  }
  return false;
}

// PLT0 starts with `push GOT+8(%rip)` (ff 35), possibly behind endbr64.
bool LooksLikePlt0(std::span<const uint8_t> entry) {
  if (entry.size() >= 2 && entry[0] == 0xff && entry[1] == 0x35) return true;
  return entry.size() >= 6 && entry[0] == 0xf3 && entry[1] == 0x0f && entry[2] == 0x1e &&
         entry[3] == 0xfa && entry[4] == 0xff && entry[5] == 0x35;
}

struct Stub {
  uint64_t address;
  uint64_t size;
  uint32_t section;
  std::string name;
};

bool IsPltSection(const ElfSection& s) {
  return s.type == SHT_PROGBITS && (s.flags & SHF_EXECINSTR) != 0 &&
         (s.name == ".plt" || s.name == ".plt.sec" || s.name == ".plt.got" || s.name == ".plt.bnd");
}

// The named entries of one PLT section.
void ReadStubs(const ElfFile& elf, const ElfSection& plt, const std::vector<Slot>& slots,
               bool second_plt, std::vector<Stub>* out) {
  if (plt.name == ".plt" && second_plt) {
    // The stubs are in .plt.sec: .plt holds PLT0 and the lazy stubs, all ".plt" to perf.
    if (plt.size > 0) out->push_back({plt.addr, plt.size, plt.index, ".plt"});
    return;
  }
  Result<std::span<const uint8_t>> data = elf.SectionData(plt);
  if (!data) return;
  const uint64_t entry_size =
      plt.entsize >= 6 && plt.entsize <= kMaxEntrySize ? plt.entsize : kDefaultEntrySize;
  for (uint64_t at = 0; entry_size <= data->size() - at; at += entry_size) {
    std::span<const uint8_t> entry = data->subspan(at, entry_size);
    uint64_t address;
    if (!CheckedAdd(plt.addr, at, &address)) break;
    uint64_t slot;
    if (StubSlot(entry, address, &slot)) {
      if (const Slot* named = SlotAt(slots, slot)) {
        out->push_back({address, entry_size, plt.index, named->name + "@plt"});
      }
    } else if (at == 0 && plt.name == ".plt" && LooksLikePlt0(entry)) {
      out->push_back({address, entry_size, plt.index, ".plt"});
    }
  }
}

// AArch64: PLT0 (32 bytes: `stp x16, x30, [sp, #-16]!`, behind `bti c` with BTI) is ".plt";
// each stub loads its GOT slot with `adrp x16, page; ldr x17, [x16, #off]` (16 bytes, 24 with
// BTI or PAC, sometimes behind `bti c`), so the stubs are found by that pair rather than by a
// stride: each runs from its pair (or the `bti c` before it) to the next one or the section's
// end.
constexpr uint32_t kA64Stp = 0xa9bf7bf0;  // stp x16, x30, [sp, #-16]!
constexpr uint32_t kA64BtiC = 0xd503245f;
constexpr uint64_t kA64HeaderSize = 32;

void ReadAarch64Stubs(const ElfFile& elf, const ElfSection& plt, const std::vector<Slot>& slots,
                      std::vector<Stub>* out) {
  Result<std::span<const uint8_t>> data = elf.SectionData(plt);
  if (!data) return;
  const size_t words = data->size() / 4;
  auto word = [&](size_t i) {
    ByteCursor c(data->subspan(i * 4, 4));
    return c.U32();
  };
  size_t first = 0;  // the first word after PLT0
  if (words >= kA64HeaderSize / 4 &&
      (word(0) == kA64Stp || (word(0) == kA64BtiC && word(1) == kA64Stp))) {
    out->push_back({plt.addr, kA64HeaderSize, plt.index, ".plt"});
    first = kA64HeaderSize / 4;
  }
  struct Pair {
    size_t start;  // word index of the stub's first instruction
    uint64_t slot;
  };
  std::vector<Pair> pairs;
  for (size_t i = first; i + 1 < words; ++i) {
    uint32_t adrp = word(i), ldr = word(i + 1);
    if ((adrp & 0x9f00001f) != 0x90000010 || (ldr & 0xffc003ff) != 0xf9400211) continue;
    // adrp: a 21-bit signed page count (immhi:immlo) from the instruction's page.
    int64_t pages = static_cast<int64_t>(((adrp >> 5) & 0x7ffff) << 2 | ((adrp >> 29) & 3));
    if (pages & (int64_t{1} << 20)) pages -= int64_t{1} << 21;
    uint64_t pc = plt.addr + i * 4;
    uint64_t slot =
        (pc & ~uint64_t{0xfff}) + static_cast<uint64_t>(pages) * 4096 + ((ldr >> 10) & 0xfff) * 8;
    size_t start = i > first && word(i - 1) == kA64BtiC ? i - 1 : i;
    pairs.push_back({start, slot});
    ++i;
  }
  for (size_t k = 0; k < pairs.size(); ++k) {
    const Slot* named = SlotAt(slots, pairs[k].slot);
    if (named == nullptr) continue;
    size_t end = k + 1 < pairs.size() ? pairs[k + 1].start : words;
    out->push_back({plt.addr + pairs[k].start * 4, (end - pairs[k].start) * 4, plt.index,
                    named->name + "@plt"});
  }
}

}  // namespace

void SymbolTableBuilder::BuildPlt(const ElfFile& elf, SymbolTable* table) {
  if (!elf.is_64bit() || (elf.machine() != EM_X86_64 && elf.machine() != EM_AARCH64)) return;
  const bool aarch64 = elf.machine() == EM_AARCH64;
  bool any = false, second_plt = false;
  for (const ElfSection& s : elf.sections()) {
    if (!IsPltSection(s)) continue;
    any = true;
    second_plt |= s.name == ".plt.sec" || s.name == ".plt.bnd";
  }
  if (!any) return;
  const std::vector<Slot> slots =
      ReadSlots(elf, aarch64 ? kAarch64Relocations : kX86_64Relocations);
  std::vector<Stub> stubs;
  for (const ElfSection& s : elf.sections()) {
    if (!IsPltSection(s)) continue;
    if (!aarch64) {
      ReadStubs(elf, s, slots, second_plt, &stubs);
    } else if (s.name == ".plt") {
      ReadAarch64Stubs(elf, s, slots, &stubs);
    }
  }
  std::stable_sort(stubs.begin(), stubs.end(),
                   [](const Stub& a, const Stub& b) { return a.address < b.address; });
  // One symbol per address, none overlapping the next (sections may overlap in a bad file).
  size_t kept = 0;
  for (size_t i = 0; i < stubs.size(); ++i) {
    if (kept > 0 && stubs[kept - 1].address == stubs[i].address) continue;
    if (kept != i) stubs[kept] = std::move(stubs[i]);  // (a self-move would empty the name)
    ++kept;
  }
  stubs.resize(kept);
  size_t name_bytes = 0;
  for (size_t i = 0; i < stubs.size(); ++i) {
    if (i + 1 < stubs.size() && stubs[i + 1].address - stubs[i].address < stubs[i].size) {
      stubs[i].size = stubs[i + 1].address - stubs[i].address;
    }
    name_bytes += stubs[i].name.size();
  }
  // The names in one string, reserved first: the symbols' views into it stay valid.
  table->owned_names_.reserve(name_bytes);
  table->symbols_.reserve(stubs.size());
  for (const Stub& stub : stubs) {
    size_t at = table->owned_names_.size();
    table->owned_names_ += stub.name;
    ElfSymbol sym;
    sym.address = stub.address;
    sym.size = stub.size;
    sym.type = STT_FUNC;
    sym.binding = STB_GLOBAL;
    sym.section = stub.section;
    sym.sizeless = false;
    table->symbols_.push_back(sym);
    table->symbols_.back().name =
        std::string_view(table->owned_names_).substr(at, stub.name.size());
  }
}

}  // namespace stacksym::elf
