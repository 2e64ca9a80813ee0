#include "unwind/cfi_sources.h"

#include <elf.h>

#include <cstring>

namespace stacksym::cfi {
namespace {

uint64_t SectionAddress(const ElfFile& elf, std::string_view name) {
  const ElfSection* s = elf.FindSection(name);
  return s != nullptr ? s->addr : 0;
}

// Reads a pointer stored in the file at `vaddr` (DW_EH_PE_indirect).
std::optional<uint64_t> ReadPointerAt(const ElfFile& elf, uint64_t vaddr) {
  std::optional<uint64_t> offset = elf.VaddrToFileOffset(vaddr);
  std::span<const uint8_t> bytes = elf.bytes();
  const size_t size = elf.is_64bit() ? 8 : 4;
  if (!offset || *offset > bytes.size() || bytes.size() - *offset < size) return std::nullopt;
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + *offset, size);
  return v;
}

// A present, readable section with contents (SHT_NOBITS in a debug file has none).
bool ReadSection(const ElfFile& elf, std::string_view name, CfiSources* out,
                 std::span<const uint8_t>* data, uint64_t* vaddr) {
  const ElfSection* s = elf.FindSection(name);
  if (s == nullptr || s->type == SHT_NOBITS) return false;
  Result<std::span<const uint8_t>> bytes = elf.SectionData(*s);
  if (!bytes) {
    out->problems.push_back(std::move(Error(bytes.error()).WithFile(elf.path())));
    return false;
  }
  if (bytes->empty()) return false;
  *data = *bytes;
  *vaddr = s->addr;
  return true;
}

}  // namespace

CfiSources FindCfiSources(const ElfFile& elf, const ElfFile* debug_file) {
  CfiSources out;
  const uint8_t address_size = elf.is_64bit() ? 8 : 4;
  CfiSectionInfo eh;
  eh.kind = CfiSectionKind::kEhFrame;
  eh.address_size = address_size;
  if (ReadSection(elf, ".eh_frame", &out, &eh.data, &eh.vaddr)) {
    eh.text_vaddr = SectionAddress(elf, ".text");
    eh.data_vaddr = SectionAddress(elf, ".got");
    eh.read_pointer = [&elf](uint64_t vaddr) { return ReadPointerAt(elf, vaddr); };
    out.sections.push_back(std::move(eh));
    (void)ReadSection(elf, ".eh_frame_hdr", &out, &out.eh_frame_hdr, &out.eh_frame_hdr_vaddr);
  }
  CfiSectionInfo debug;
  debug.kind = CfiSectionKind::kDebugFrame;
  debug.address_size = address_size;
  uint64_t unused_vaddr = 0;
  if (ReadSection(elf, ".debug_frame", &out, &debug.data, &unused_vaddr) ||
      (debug_file != nullptr &&
       ReadSection(*debug_file, ".debug_frame", &out, &debug.data, &unused_vaddr))) {
    out.sections.push_back(std::move(debug));  // not loaded: no pcrel bases
  }
  return out;
}

}  // namespace stacksym::cfi
