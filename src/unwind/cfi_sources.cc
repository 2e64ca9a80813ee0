#include "unwind/cfi_sources.h"

#include <elf.h>

#include <cstring>

#include "unwind/eh_frame_hdr.h"

namespace stacksym::unwind {
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

// The bytes of `data` up to and including the zero terminator that ends .eh_frame (crtend's),
// walking the entries' lengths; without one, every whole entry (the reader reports the ones
// that do not parse).
size_t EntriesUpToTerminator(std::span<const uint8_t> data) {
  size_t at = 0;
  while (data.size() - at >= 4) {
    uint32_t length = 0;
    std::memcpy(&length, data.data() + at, 4);
    if (length == 0) return at + 4;
    uint64_t header = 4, body = length;
    if (length == 0xffffffffu) {
      if (data.size() - at < 12) break;
      std::memcpy(&body, data.data() + at + 4, 8);
      header = 12;
    }
    if (body > data.size() - at - header) break;
    at += header + body;
  }
  return at;
}

// A file without section headers (llvm-objcopy --strip-sections, sstrip, an image copied
// from memory): .eh_frame found as the runtime finds it, through PT_GNU_EH_FRAME's pointer,
// and as long as its entries up to the terminator, within the loaded bytes of its segment.
bool ReadEhFrameThroughHeader(const ElfFile& elf, CfiSources* out, CfiSectionInfo* eh) {
  const std::span<const uint8_t> bytes = elf.bytes();
  for (const ElfSegment& hdr_segment : elf.segments()) {
    if (hdr_segment.type != PT_GNU_EH_FRAME) continue;
    if (hdr_segment.filesz == 0 || hdr_segment.offset > bytes.size() ||
        bytes.size() - hdr_segment.offset < hdr_segment.filesz) {
      out->problems.push_back(
          MakeError(ErrorCode::kMalformed, "PT_GNU_EH_FRAME lies outside the file")
              .WithFile(elf.path()));
      return false;
    }
    std::span<const uint8_t> hdr = bytes.subspan(hdr_segment.offset, hdr_segment.filesz);
    Result<EhFrameHdr> parsed = ReadEhFrameHdr(hdr, hdr_segment.vaddr);
    if (!parsed) {
      out->problems.push_back(std::move(Error(parsed.error()).WithFile(elf.path())));
      return false;
    }
    const uint64_t at = parsed->eh_frame_vaddr;
    for (const ElfSegment& load : elf.segments()) {
      if (load.type != PT_LOAD || at < load.vaddr || at - load.vaddr >= load.filesz) continue;
      if (load.offset > bytes.size() || bytes.size() - load.offset < load.filesz) break;
      std::span<const uint8_t> rest =
          bytes.subspan(load.offset, load.filesz).subspan(at - load.vaddr);
      eh->data = rest.first(EntriesUpToTerminator(rest));
      eh->vaddr = at;
      out->eh_frame_hdr = hdr;
      out->eh_frame_hdr_vaddr = hdr_segment.vaddr;
      return !eh->data.empty();
    }
    out->problems.push_back(
        MakeError(ErrorCode::kMalformed, ".eh_frame_hdr points outside the loaded segments")
            .WithFile(elf.path()));
    return false;
  }
  return false;
}

}  // namespace

CfiSources FindCfiSources(const ElfFile& elf, const ElfFile* debug_file) {
  CfiSources out;
  const uint8_t address_size = elf.is_64bit() ? 8 : 4;
  CfiSectionInfo eh;
  eh.kind = CfiSectionKind::kEhFrame;
  eh.address_size = address_size;
  const bool has_section = ReadSection(elf, ".eh_frame", &out, &eh.data, &eh.vaddr);
  if (has_section ||
      (elf.FindSection(".eh_frame") == nullptr && ReadEhFrameThroughHeader(elf, &out, &eh))) {
    // (Without section headers there is no .text or .got: x86_64 compilers encode pointers
    // pc-relative, not text- or data-relative.)
    eh.text_vaddr = SectionAddress(elf, ".text");
    eh.data_vaddr = SectionAddress(elf, ".got");
    eh.read_pointer = [&elf](uint64_t vaddr) { return ReadPointerAt(elf, vaddr); };
    out.sections.push_back(std::move(eh));
    if (has_section)
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

}  // namespace stacksym::unwind
