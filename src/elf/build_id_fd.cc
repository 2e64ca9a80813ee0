// ReadBuildIdFromFd: the build ID of an open file from a few small preads (header, program
// headers, note segments), for callers that must not map or read whole files.
#include <elf.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "elf/elf_format.h"
#include "elf/elf_notes.h"
#include "stacksym/elf.h"

namespace stacksym {

namespace {

// Header tables and note areas are small in real files; larger claims are refused rather than
// read, so a hostile header cannot make us read a whole file.
constexpr uint64_t kMaxTableBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxNoteBytes = uint64_t{1} << 20;

// Reads exactly `size` bytes at `offset`; a short read means the file ends early.
Result<std::vector<uint8_t>> ReadExactly(int fd, uint64_t offset, uint64_t size, const char* what) {
  std::vector<uint8_t> buf(size);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, buf.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, std::string("cannot read ") + what);
    }
    if (n == 0) {
      return Error(ErrorCode::kMalformed, std::string(what) + " (" + std::to_string(size) +
                                              " bytes at " + HexU64(offset) +
                                              ") lies past the end of the file");
    }
    done += static_cast<size_t>(n);
  }
  return buf;
}

Result<std::vector<uint8_t>> ReadTable(int fd, uint64_t offset, uint64_t count, uint64_t entry_size,
                                       const char* what) {
  uint64_t bytes;
  if (!elf::CheckedMul(count, entry_size, &bytes) || bytes > kMaxTableBytes) {
    return Error(ErrorCode::kMalformed, std::string(what) + " is implausibly large (" +
                                            std::to_string(count) + " entries)");
  }
  return ReadExactly(fd, offset, bytes, what);
}

// Build ID from one note area; empty if the area has none.
Result<std::vector<uint8_t>> BuildIdFromNotes(int fd, uint64_t offset, uint64_t size,
                                              uint64_t align, const char* what) {
  if (size > kMaxNoteBytes) {
    return Error(ErrorCode::kMalformed,
                 std::string(what) + " is implausibly large (" + std::to_string(size) + " bytes)");
  }
  Result<std::vector<uint8_t>> area = ReadExactly(fd, offset, size, what);
  if (!area) return std::move(area).error();
  auto notes = elf::ParseNotes(*area, align);
  if (!notes) return std::move(notes).error().WithSection(what);
  std::span<const uint8_t> id = elf::FindBuildIdNote(*notes);
  return std::vector<uint8_t>(id.begin(), id.end());
}

}  // namespace

Result<std::vector<uint8_t>> ReadBuildIdFromFd(int fd) {
  std::vector<uint8_t> head(elf::kMaxHeaderSize);
  ssize_t got;
  do {
    got = ::pread(fd, head.data(), head.size(), 0);
  } while (got < 0 && errno == EINTR);
  if (got < 0) return ErrnoError(errno, "cannot read the ELF header");
  head.resize(static_cast<size_t>(got));
  Result<elf::ElfHeader> header = elf::ParseElfHeader(head);
  if (!header) return std::move(header).error();
  const elf::ElfHeader& h = *header;

  // Section 0 holds the real counts under extended numbering; read only when needed, so a
  // file whose tail (where section headers usually live) is missing still gives its ID.
  auto read_first_section = [&]() -> Result<std::optional<ElfSection>> {
    if (h.shoff == 0) return std::optional<ElfSection>();
    if (h.shentsize < h.shdr_size()) {
      return Error(ErrorCode::kMalformed,
                   "section header entry size " + std::to_string(h.shentsize) + " is too small");
    }
    auto raw = ReadExactly(fd, h.shoff, h.shdr_size(), "section header 0");
    if (!raw) return std::move(raw).error();
    ByteCursor c(*raw);
    uint32_t unused_name;
    return std::optional<ElfSection>(elf::ReadSectionHeader(c, h.is_64bit, &unused_name));
  };
  uint64_t phnum = h.phnum;
  if (phnum == PN_XNUM) {
    auto first = read_first_section();
    if (!first) return std::move(first).error();
    if (*first) phnum = (*first)->info;
  }

  bool read_note_segment = false;  // and it had no GNU build ID
  if (phnum > 0) {
    if (h.phentsize < h.phdr_size()) {
      return Error(ErrorCode::kMalformed,
                   "program header entry size " + std::to_string(h.phentsize) + " is too small");
    }
    auto table = ReadTable(fd, h.phoff, phnum, h.phentsize, "program header table");
    if (!table) return std::move(table).error();
    for (uint64_t i = 0; i < phnum; ++i) {
      ByteCursor c(std::span<const uint8_t>(*table).subspan(i * h.phentsize, h.phdr_size()));
      ElfSegment seg = elf::ReadProgramHeader(c, h.is_64bit);
      if (seg.type != PT_NOTE) continue;
      auto id = BuildIdFromNotes(fd, seg.offset, seg.filesz, seg.align, "PT_NOTE segment");
      // A broken or stale PT_NOTE (eu-strip -f keeps the original program headers) is
      // skipped: the note sections below may still hold the ID.
      if (id && !id->empty()) return id;
      read_note_segment = read_note_segment || id.ok();
    }
  }
  if (h.shoff == 0) return std::vector<uint8_t>();

  // No GNU note in a (readable) note segment: relocatable objects, some debug files, and Go
  // binaries linked with -B, whose one PT_NOTE covers only .note.go.buildid. Look at the SHT_NOTE
  // sections, as ElfFile does. Where a note segment was read, a file whose section headers are
  // gone (a truncated tail) has no build ID rather than an error.
  auto first = read_first_section();
  if (!first) {
    if (read_note_segment) return std::vector<uint8_t>();
    return std::move(first).error();
  }
  uint64_t shnum = h.shnum == 0 ? (*first)->size : h.shnum;
  auto table = ReadTable(fd, h.shoff, shnum, h.shentsize, "section header table");
  if (!table) {
    if (read_note_segment) return std::vector<uint8_t>();
    return std::move(table).error();
  }
  for (uint64_t i = 0; i < shnum; ++i) {
    ByteCursor c(std::span<const uint8_t>(*table).subspan(i * h.shentsize, h.shdr_size()));
    uint32_t unused_name;
    ElfSection s = elf::ReadSectionHeader(c, h.is_64bit, &unused_name);
    if (s.type != SHT_NOTE) continue;
    auto id = BuildIdFromNotes(fd, s.offset, s.size, s.addralign, "note section");
    if (!id) return std::move(id).error();
    if (!id->empty()) return id;
  }
  return std::vector<uint8_t>();
}

}  // namespace stacksym
