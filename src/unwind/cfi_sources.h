// cfi_sources.h — where an ELF file's call frame information is: its .eh_frame (with the
// bases its pointer encodings need) and the .debug_frame of the file or of its separate
// debug file. A file without section headers has its .eh_frame found through the
// PT_GNU_EH_FRAME segment (.eh_frame_hdr's pointer), as the runtime finds it.
#pragma once

#include <vector>

#include "stacksym/elf.h"
#include "unwind/cfi_reader.h"

namespace stacksym::unwind {

struct CfiSources {
  std::vector<CfiSectionInfo> sections;  // .eh_frame first, then .debug_frame
  std::span<const uint8_t> eh_frame_hdr;
  uint64_t eh_frame_hdr_vaddr = 0;
  std::vector<Error> problems;  // sections that exist but cannot be read
};

// `elf` must outlive the returned spans and the read_pointer callbacks.
CfiSources FindCfiSources(const ElfFile& elf, const ElfFile* debug_file);

}  // namespace stacksym::unwind
