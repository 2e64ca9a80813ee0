#include "elf/elf_notes.h"

#include <elf.h>

#include <string>

#include "base/byte_cursor.h"
#include "elf/elf_format.h"

namespace stacksym::elf {

namespace {

constexpr size_t kNoteHeaderSize = 12;  // namesz, descsz, type: 4 bytes each in both classes

uint64_t AlignUp(uint64_t value, uint64_t align) { return (value + align - 1) & ~(align - 1); }

}  // namespace

Result<std::vector<ElfNote>> ParseNotes(std::span<const uint8_t> area, uint64_t align) {
  const uint64_t a = align == 8 ? 8 : 4;
  std::vector<ElfNote> notes;
  uint64_t pos = 0;
  // Fewer than a header's worth of trailing bytes is padding, not a note.
  while (area.size() - pos >= kNoteHeaderSize) {
    ByteCursor c(area.subspan(pos));
    uint32_t namesz = c.U32();
    uint32_t descsz = c.U32();
    uint32_t type = c.U32();
    uint64_t name_start = pos + kNoteHeaderSize;
    uint64_t desc_start = AlignUp(name_start + namesz, a);
    uint64_t desc_end = desc_start + descsz;  // cannot overflow: 32-bit sizes, bounded pos
    if (name_start + namesz > area.size() || desc_end > area.size()) {
      return Error(ErrorCode::kMalformed, "truncated note: name size " + std::to_string(namesz) +
                                              ", descriptor size " + std::to_string(descsz) +
                                              " run past the end of the " +
                                              std::to_string(area.size()) + "-byte note area")
          .WithOffset(pos);
    }
    ElfNote note;
    note.type = type;
    const char* name = reinterpret_cast<const char*>(area.data() + name_start);
    size_t name_len = namesz;
    while (name_len > 0 && name[name_len - 1] == '\0') --name_len;
    note.name = std::string_view(name, name_len);
    note.desc = area.subspan(desc_start, descsz);
    notes.push_back(note);
    pos = AlignUp(desc_end, a);
    if (pos >= area.size()) break;
  }
  return notes;
}

std::span<const uint8_t> FindBuildIdNote(const std::vector<ElfNote>& notes) {
  for (const ElfNote& note : notes) {
    if (note.type == NT_GNU_BUILD_ID && note.name == "GNU" && !note.desc.empty()) {
      return note.desc;
    }
  }
  return {};
}

Result<DebugLink> ParseDebugLink(std::span<const uint8_t> data) {
  ByteCursor c(data);
  std::string_view name = c.CStr();
  if (!c.ok()) return Error(ErrorCode::kMalformed, "debug link file name is not NUL-terminated");
  if (name.empty()) return Error(ErrorCode::kMalformed, "debug link file name is empty");
  c.Seek(AlignUp(c.offset(), 4));
  uint32_t crc = c.U32();
  if (!c.ok()) return Error(ErrorCode::kMalformed, "debug link is missing its CRC32");
  return DebugLink{std::string(name), crc};
}

Result<DebugAltLink> ParseDebugAltLink(std::span<const uint8_t> data) {
  ByteCursor c(data);
  std::string_view name = c.CStr();
  if (!c.ok()) {
    return Error(ErrorCode::kMalformed, "debug alt link file name is not NUL-terminated");
  }
  if (name.empty()) return Error(ErrorCode::kMalformed, "debug alt link file name is empty");
  std::span<const uint8_t> id = c.Bytes(c.remaining());
  if (id.empty()) return Error(ErrorCode::kMalformed, "debug alt link has no build ID");
  return DebugAltLink{std::string(name), std::vector<uint8_t>(id.begin(), id.end())};
}

}  // namespace stacksym::elf
