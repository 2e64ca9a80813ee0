// elf/elf_notes.h — parsing of ELF note areas (PT_NOTE segments, SHT_NOTE sections) and of
// the .gnu_debuglink / .gnu_debugaltlink section contents.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym::elf {

struct ElfNote {
  std::string_view name;  // without the terminating NUL ("GNU")
  uint32_t type = 0;      // NT_*
  std::span<const uint8_t> desc;
};

// All notes of one note area. `align` is the section's sh_addralign or the segment's p_align:
// 8 means 8-byte padding of name and descriptor (as in .note.gnu.property); anything else is
// the classic 4. Errors name the note's offset inside the area.
Result<std::vector<ElfNote>> ParseNotes(std::span<const uint8_t> area, uint64_t align);

// The descriptor of the first NT_GNU_BUILD_ID note owned by "GNU" (empty span if none).
std::span<const uint8_t> FindBuildIdNote(const std::vector<ElfNote>& notes);

// .gnu_debuglink: NUL-terminated file name, padding to 4, CRC32 (little-endian here).
Result<DebugLink> ParseDebugLink(std::span<const uint8_t> data);
// .gnu_debugaltlink: NUL-terminated file name followed by the build ID bytes.
Result<DebugAltLink> ParseDebugAltLink(std::span<const uint8_t> data);

}  // namespace stacksym::elf
