// Go's build ID (ElfFile::go_build_id): the note Go's linker writes, or the string older
// linkers put at the start of the text.
#include <elf.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "elf/elf_notes.h"
#include "stacksym/elf.h"

namespace stacksym {

namespace {

// The ".note.go.buildid" note: owner "Go", type 4 (cmd/link's ELF_NOTE_GOBUILDID_TAG).
std::string FromNote(const ElfFile& elf) {
  constexpr uint32_t kGoBuildIdNote = 4;
  const ElfSection* section = elf.FindSection(".note.go.buildid");
  if (section == nullptr) return {};
  auto data = elf.SectionData(*section);
  if (!data) return {};
  auto notes = elf::ParseNotes(*data, section->addralign);
  if (!notes) return {};
  for (const elf::ElfNote& note : *notes) {
    if (note.name == "Go" && note.type == kGoBuildIdNote) {
      std::string_view id(reinterpret_cast<const char*>(note.desc.data()), note.desc.size());
      return std::string(id.substr(0, id.find('\0')));
    }
  }
  return {};
}

// Before Go 1.10's note: "\xff Go build ID: \"<id>\"\n \xff" in the first bytes of the text.
std::string FromText(const ElfFile& elf) {
  static constexpr std::string_view kPrefix = "\xff Go build ID: \"";
  std::span<const uint8_t> bytes;
  const ElfSection* text = elf.FindSection(".text");
  if (text != nullptr && text->type != SHT_NOBITS && text->offset <= elf.bytes().size()) {
    bytes = elf.bytes().subspan(static_cast<size_t>(text->offset));
  } else {
    for (const ElfSegment& s : elf.segments()) {
      if (s.type == PT_LOAD && (s.flags & PF_X) && s.offset < elf.bytes().size()) {
        bytes = elf.bytes().subspan(static_cast<size_t>(s.offset));
        break;
      }
    }
  }
  bytes = bytes.first(std::min<size_t>(bytes.size(), 4096));
  std::string_view head(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  size_t at = head.find(kPrefix);
  if (at == std::string_view::npos) return {};
  std::string_view rest = head.substr(at + kPrefix.size());
  size_t quote = rest.find('"');
  if (quote == std::string_view::npos) return {};
  return std::string(rest.substr(0, quote));
}

}  // namespace

std::string ElfFile::go_build_id() const {
  std::string id = FromNote(*this);
  return id.empty() ? FromText(*this) : id;
}

}  // namespace stacksym
