// libFuzzer target for the CFI reader, the DW_CFA interpreter and the unwind-table compiler.
// The input is one section's bytes: read as .eh_frame and as .debug_frame, every FDE
// interpreted; then wrapped into a minimal ELF (as .eh_frame, .debug_frame and .eh_frame_hdr)
// and compiled into an UnwindTable; and read as .eh_frame_hdr of an ELF file with program
// headers only, whose pointer leads to the .eh_frame (found as in a file without section
// headers). Checks: interpreted rows never go backwards nor leave the
// FDE, table rows are strictly sorted with no equal neighbours, Find() returns the row that
// covers the address, nothing outside [base_pc, end_pc).
#include <elf.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "stacksym/unwind.h"
#include "unwind/cfa_program.h"
#include "unwind/cfi_reader.h"

namespace {

using stacksym::UnwindRow;
namespace unwind = stacksym::unwind;

void Check(bool ok) {
  if (!ok) std::abort();
}

constexpr uint64_t kSectionVaddr = 0x10000;

void InterpretAll(std::span<const uint8_t> data, unwind::CfiSectionKind kind) {
  unwind::CfiSectionInfo info;
  info.kind = kind;
  info.data = data;
  info.vaddr = kind == unwind::CfiSectionKind::kEhFrame ? kSectionVaddr : 0;
  info.read_pointer = [data](uint64_t vaddr) -> std::optional<uint64_t> {
    if (vaddr < kSectionVaddr || vaddr - kSectionVaddr + 8 > data.size()) return std::nullopt;
    uint64_t v;
    std::memcpy(&v, data.data() + (vaddr - kSectionVaddr), 8);
    return v;
  };
  unwind::CfiEntries entries = unwind::ReadCfiSection(info);
  unwind::CfaInterpreter interpreter;
  for (const unwind::Fde& fde : entries.fdes) {
    Check(fde.cie_index < entries.cies.size());
    Check(fde.pc_begin <= fde.pc_end);
    uint64_t last = fde.pc_begin;
    auto run = interpreter.Run(entries.cies[fde.cie_index], fde,
                               [&](uint64_t pc, const unwind::CfaState&) {
                                 Check(pc >= last && pc <= fde.pc_end);
                                 last = pc;
                               });
    if (!run) Check(!run.error().message.empty());
  }
  for (const unwind::CfiProblem& p : entries.problems) Check(!p.message.empty());
}

// An x86_64 ELF64 shared-object header with no sections or segments yet.
Elf64_Ehdr X86_64Header() {
  Elf64_Ehdr eh = {};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  return eh;
}

// ELF64 header + sections: null, .text, .eh_frame, .eh_frame_hdr, .debug_frame, .shstrtab.
std::vector<uint8_t> WrapInElf(std::span<const uint8_t> data) {
  const char names[] = "\0.text\0.eh_frame\0.eh_frame_hdr\0.debug_frame\0.shstrtab";
  const uint32_t name_at[] = {0, 1, 7, 17, 31, 44};
  std::vector<uint8_t> out(sizeof(Elf64_Ehdr));
  auto append = [&](const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  };
  while (out.size() % 8) out.push_back(0);
  const uint64_t data_off = out.size();
  append(data.data(), data.size());
  const uint64_t names_off = out.size();
  append(names, sizeof names);
  while (out.size() % 8) out.push_back(0);
  const uint64_t shoff = out.size();
  Elf64_Shdr sh[6] = {};
  sh[1] = {name_at[1], SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000, data_off, 0x1000, 0, 0,
           16,         0};
  sh[2] = {name_at[2], SHT_PROGBITS, SHF_ALLOC, kSectionVaddr, data_off, data.size(), 0, 0, 8, 0};
  sh[3] = {name_at[3], SHT_PROGBITS, SHF_ALLOC, kSectionVaddr, data_off, data.size(), 0, 0, 4, 0};
  sh[4] = {name_at[4], SHT_PROGBITS, 0, 0, data_off, data.size(), 0, 0, 8, 0};
  sh[5] = {name_at[5], SHT_STRTAB, 0, 0, names_off, sizeof names, 0, 0, 1, 0};
  append(sh, sizeof sh);
  Elf64_Ehdr eh = X86_64Header();
  eh.e_shoff = shoff;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 6;
  eh.e_shstrndx = 5;
  std::memcpy(out.data(), &eh, sizeof eh);
  return out;
}

// ELF64 header + program headers only (no section headers, as after llvm-objcopy
// --strip-sections): one executable PT_LOAD over the whole file and PT_GNU_EH_FRAME over the
// input, which is read as .eh_frame_hdr; its pointer leads to the .eh_frame inside the load.
std::vector<uint8_t> WrapInSegments(std::span<const uint8_t> data) {
  constexpr uint64_t kLoadVaddr = 0x10000;
  std::vector<uint8_t> out(sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr));
  const uint64_t data_off = out.size();
  out.insert(out.end(), data.begin(), data.end());
  Elf64_Phdr ph[2] = {};
  ph[0] = {PT_LOAD, PF_R | PF_X, 0, kLoadVaddr, kLoadVaddr, out.size(), out.size(), 0x1000};
  ph[1] = {PT_GNU_EH_FRAME,       PF_R,        data_off,    kLoadVaddr + data_off,
           kLoadVaddr + data_off, data.size(), data.size(), 4};
  std::memcpy(out.data() + sizeof(Elf64_Ehdr), ph, sizeof ph);
  Elf64_Ehdr eh = X86_64Header();
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 2;
  std::memcpy(out.data(), &eh, sizeof eh);
  return out;
}

void CheckTable(const stacksym::UnwindTable& table) {
  std::span<const UnwindRow> rows = table.rows();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) {
      Check(rows[i - 1].pc < rows[i].pc);
      UnwindRow prev = rows[i - 1];
      prev.pc = rows[i].pc;
      Check(!(prev == rows[i]));
    }
    const uint64_t at = table.base_pc() + rows[i].pc;
    Check(at < table.end_pc());
    Check(table.Find(at) == &rows[i]);
    if (rows[i].pc > 0) Check(table.Find(at - 1) == &rows[i - 1]);
  }
  if (!rows.empty()) {
    Check(rows[0].pc == 0);
    Check(table.Find(table.end_pc()) == nullptr);
    Check(table.Find(table.end_pc() - 1) == &rows.back());
    if (table.base_pc() > 0) Check(table.Find(table.base_pc() - 1) == nullptr);
  }
}

// Builds the image's table and checks it (a failure must say why); the cache must hold it.
void BuildAndCheck(const std::vector<uint8_t>& image, const char* name) {
  auto elf = stacksym::ElfFile::FromBytes(image, name);
  if (!elf) return;
  auto table = stacksym::UnwindTable::Build(**elf);
  if (!table) {
    Check(!table.error().message.empty());
    return;
  }
  CheckTable(**table);
  stacksym::UnwindTableCache cache({.max_bytes = 1024});
  Check(cache.Get(**elf) != nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  InterpretAll(bytes, unwind::CfiSectionKind::kEhFrame);
  InterpretAll(bytes, unwind::CfiSectionKind::kDebugFrame);
  BuildAndCheck(WrapInElf(bytes), "fuzz-cfi");
  BuildAndCheck(WrapInSegments(bytes), "fuzz-cfi-segments");
  return 0;
}
