// ElfFile: opening, header/section/segment/note parsing, section data, address translation.
#include <elf.h>

#include <cstring>
#include <string>

#include "base/parallel.h"
#include "elf/decompress.h"
#include "elf/elf_format.h"
#include "elf/elf_notes.h"
#include "elf/object_layout.h"
#include "elf/relocate.h"
#include "elf/section_stream.h"
#include "elf/symbol_table_builder.h"
#include "stacksym/elf.h"

namespace stacksym {

using elf::CheckedAdd;
using elf::CheckedMul;
using elf::Hex;
using elf::RangeFits;

// Started at most once (call_once), so concurrent readers never decompress twice; the
// stream is where every reader waits for (or finds) the result.
struct ElfFile::Decompressed {
  std::once_flag once;
  elf::DecompressedBytes data;
  std::shared_ptr<elf::SectionStream> stream = std::make_shared<elf::SectionStream>();
  std::unique_ptr<SpreadThread> worker;  // background decoding (elf::StreamSectionData); joined
                                         // (reset) by ~ElfFile
  std::mutex join_mu;                    // or by the first SectionData call after it ended
};

// The relocated copy of a debug section of an ET_REL file, made once.
struct ElfFile::Relocated {
  std::vector<uint32_t> relocation_sections;  // SHT_REL/SHT_RELA sections aimed at it
  std::once_flag once;
  std::unique_ptr<uint8_t[]> bytes;
  size_t size = 0;
  std::optional<Error> error;
};

namespace {

bool IsLegacyCompressedName(std::string_view name) { return name.starts_with(".zdebug"); }

bool HasNoFileData(const ElfSection& s) { return s.type == SHT_NOBITS || s.type == SHT_NULL; }

bool IsCompressed(const ElfSection& s) {
  if (HasNoFileData(s)) return false;
  return (s.flags & SHF_COMPRESSED) != 0 || IsLegacyCompressedName(s.name);
}

std::string SectionLabel(const ElfSection& s) {
  if (!s.name.empty()) return std::string(s.name);
  return "[" + std::to_string(s.index) + "]";
}

// The table sizes Parse works with, after extended numbering.
struct TableCounts {
  uint64_t shnum = 0;
  uint64_t phnum = 0;
  uint32_t shstrndx = 0;
};

// Extended numbering: counts and the name-table index that do not fit in 16 bits live in
// section 0's header (SHN_XINDEX, PN_XNUM, e_shnum 0).
Result<TableCounts> ReadTableCounts(std::span<const uint8_t> bytes, const elf::ElfHeader& h) {
  TableCounts n{h.shoff == 0 ? 0 : uint64_t{h.shnum}, h.phnum, h.shstrndx};
  if (h.shoff == 0) return n;
  if (h.shentsize < h.shdr_size()) {
    return Error(ErrorCode::kMalformed, "section header entry size " + std::to_string(h.shentsize) +
                                            " is smaller than " + std::to_string(h.shdr_size()));
  }
  if (!RangeFits(h.shoff, h.shentsize, bytes.size())) {
    return Error(ErrorCode::kMalformed, "section header table at " + Hex(h.shoff) +
                                            " lies past the end of the file (" +
                                            std::to_string(bytes.size()) + " bytes)");
  }
  ByteCursor c(bytes.subspan(h.shoff, h.shdr_size()));
  uint32_t unused_name;
  ElfSection first = elf::ReadSectionHeader(c, h.is_64bit, &unused_name);
  if (n.shnum == 0) n.shnum = first.size;
  if (n.shstrndx == SHN_XINDEX) n.shstrndx = first.link;
  if (n.phnum == PN_XNUM) n.phnum = first.info;
  return n;
}

// Both header tables lie whole inside the file, in entries at least as big as a header, so
// that reading them needs no further check.
Result<void> CheckHeaderTables(const elf::ElfHeader& h, const TableCounts& n, uint64_t file_size) {
  uint64_t table_bytes = 0;
  if (n.shnum > 0 && (!CheckedMul(n.shnum, h.shentsize, &table_bytes) ||
                      !RangeFits(h.shoff, table_bytes, file_size))) {
    return Error(ErrorCode::kMalformed, "section header table (" + std::to_string(n.shnum) +
                                            " entries of " + std::to_string(h.shentsize) +
                                            " bytes at " + Hex(h.shoff) +
                                            ") extends past the end of the file (" +
                                            std::to_string(file_size) + " bytes)");
  }
  if (n.phnum == 0) return {};
  if (h.phentsize < h.phdr_size()) {
    return Error(ErrorCode::kMalformed, "program header entry size " + std::to_string(h.phentsize) +
                                            " is smaller than " + std::to_string(h.phdr_size()));
  }
  if (!CheckedMul(n.phnum, h.phentsize, &table_bytes) ||
      !RangeFits(h.phoff, table_bytes, file_size)) {
    return Error(ErrorCode::kMalformed, "program header table (" + std::to_string(n.phnum) +
                                            " entries of " + std::to_string(h.phentsize) +
                                            " bytes at " + Hex(h.phoff) +
                                            ") extends past the end of the file (" +
                                            std::to_string(file_size) + " bytes)");
  }
  return {};
}

// The section headers, unnamed; each one's offset into the name table goes to name_offsets.
std::vector<ElfSection> ReadSectionHeaders(std::span<const uint8_t> bytes, const elf::ElfHeader& h,
                                           uint64_t shnum, std::vector<uint32_t>* name_offsets) {
  name_offsets->assign(shnum, 0);
  std::vector<ElfSection> sections;
  sections.reserve(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    ByteCursor c(bytes.subspan(h.shoff + i * h.shentsize, h.shdr_size()));
    ElfSection s = elf::ReadSectionHeader(c, h.is_64bit, &(*name_offsets)[i]);
    s.index = static_cast<uint32_t>(i);
    sections.push_back(s);
  }
  return sections;
}

// Names the sections from the section name table (none when shstrndx is SHN_UNDEF).
Result<void> NameSections(std::span<const uint8_t> bytes, uint32_t shstrndx,
                          const std::vector<uint32_t>& name_offsets,
                          std::vector<ElfSection>& sections) {
  const uint64_t shnum = sections.size();
  if (shnum == 0 || shstrndx == SHN_UNDEF) return {};
  if (shstrndx >= shnum) {
    return Error(ErrorCode::kMalformed, "section name table index " + std::to_string(shstrndx) +
                                            " is out of range (" + std::to_string(shnum) +
                                            " sections)");
  }
  const ElfSection& names = sections[shstrndx];
  if (HasNoFileData(names) || !RangeFits(names.offset, names.size, bytes.size())) {
    return Error(ErrorCode::kMalformed, "section name table (section " + std::to_string(shstrndx) +
                                            " at " + Hex(names.offset) + ", " +
                                            std::to_string(names.size) +
                                            " bytes) lies outside the file");
  }
  std::span<const uint8_t> table = bytes.subspan(names.offset, names.size);
  for (uint64_t i = 0; i < shnum; ++i) {
    if (!StringAt(table, name_offsets[i], &sections[i].name)) {
      // Section 0 (SHT_NULL) conventionally has name 0, which is fine even in an empty table.
      if (i == 0 && name_offsets[i] == 0) continue;
      return Error(ErrorCode::kMalformed, "name offset " + Hex(name_offsets[i]) + " of section " +
                                              std::to_string(i) +
                                              " is outside the section name table (" +
                                              std::to_string(table.size()) + " bytes)");
    }
  }
  return {};
}

std::vector<ElfSegment> ReadProgramHeaders(std::span<const uint8_t> bytes, const elf::ElfHeader& h,
                                           uint64_t phnum) {
  std::vector<ElfSegment> segments;
  segments.reserve(phnum);
  for (uint64_t i = 0; i < phnum; ++i) {
    ByteCursor c(bytes.subspan(h.phoff + i * h.phentsize, h.phdr_size()));
    segments.push_back(elf::ReadProgramHeader(c, h.is_64bit));
  }
  return segments;
}

// Parses one note area; the first build ID found in any area is the file's.
Result<void> ReadNoteArea(std::span<const uint8_t> area, uint64_t align,
                          std::vector<uint8_t>* build_id) {
  auto notes = elf::ParseNotes(area, align);
  if (!notes) return std::move(notes).error();
  if (build_id->empty()) {
    std::span<const uint8_t> id = elf::FindBuildIdNote(*notes);
    build_id->assign(id.begin(), id.end());
  }
  return {};
}

// Notes come from the SHT_NOTE sections when the file has any: a separate debug file made by
// eu-strip -f (rpm's find-debuginfo) keeps the program headers of the original file, whose
// PT_NOTE offsets point at whatever now lies there. A note section that lies outside the file
// or is malformed is an error: a build ID read from garbage would be a silently wrong answer.
// Without note sections the PT_NOTE segments are read, and one that is broken is skipped (kept
// in problems): it never makes the file unreadable.
Result<void> ReadNotes(std::span<const uint8_t> bytes, const std::vector<ElfSection>& sections,
                       const std::vector<ElfSegment>& segments, std::vector<uint8_t>* build_id,
                       std::vector<Error>* problems) {
  bool has_note_sections = false;
  for (const ElfSection& s : sections) {
    if (s.type != SHT_NOTE) continue;
    has_note_sections = true;
    if (!RangeFits(s.offset, s.size, bytes.size())) {
      return Error(ErrorCode::kMalformed, "note section (" + std::to_string(s.size) + " bytes at " +
                                              Hex(s.offset) + ") lies past the end of the file")
          .WithSection(SectionLabel(s));
    }
    Result<void> read = ReadNoteArea(bytes.subspan(s.offset, s.size), s.addralign, build_id);
    if (!read) return std::move(read).error().WithSection(SectionLabel(s));
  }
  if (has_note_sections) return {};
  for (size_t i = 0; i < segments.size(); ++i) {
    const ElfSegment& seg = segments[i];
    if (seg.type != PT_NOTE) continue;
    std::string label = "PT_NOTE segment " + std::to_string(i);
    if (!RangeFits(seg.offset, seg.filesz, bytes.size())) {
      problems->push_back(Error(ErrorCode::kMalformed,
                                label + " (" + std::to_string(seg.filesz) + " bytes at " +
                                    Hex(seg.offset) + ") lies past the end of the file; skipped"));
      continue;
    }
    Result<void> read = ReadNoteArea(bytes.subspan(seg.offset, seg.filesz), seg.align, build_id);
    if (!read) problems->push_back(std::move(read).error().WithSection(label));
  }
  return {};
}

// Debug links are hints for finding separate debug files; a corrupt one costs only that: it
// is kept in problems, and the link stays unset.
template <typename Link>
void ReadDebugLink(const ElfFile& elf, std::string_view name,
                   Result<Link> (*parse)(std::span<const uint8_t>), std::optional<Link>* link,
                   std::vector<Error>* problems) {
  const ElfSection* s = elf.FindSection(name);
  if (s == nullptr) return;
  Result<std::span<const uint8_t>> data = elf.SectionData(*s);
  Result<Link> parsed = data ? parse(*data) : Result<Link>(data.error());
  if (parsed) {
    *link = std::move(*parsed);
  } else {
    problems->push_back(std::move(parsed).error().WithSection(std::string(name)));
  }
}

}  // namespace

ElfFile::~ElfFile() {
  for (auto& slot : decompressed_) {
    if (!slot) continue;
    slot->stream->Unlimit();  // a decoder paused for a reader that is gone
    slot->worker.reset();
  }
}

Result<std::shared_ptr<ElfFile>> ElfFile::Open(const std::string& path) {
  Result<MappedFile> file = MappedFile::Open(path);
  if (!file) return std::move(file).error();
  return FromMapped(std::move(*file));
}

Result<std::shared_ptr<ElfFile>> ElfFile::FromMapped(MappedFile file) {
  std::shared_ptr<ElfFile> elf(new ElfFile());
  elf->file_ = std::move(file);
  Result<void> parsed = elf->Parse();
  if (!parsed) return std::move(parsed).error().WithFile(elf->file_.path());
  return elf;
}

Result<std::shared_ptr<ElfFile>> ElfFile::FromBytes(std::span<const uint8_t> bytes,
                                                    std::string name) {
  return FromMapped(MappedFile::FromBytes(bytes, std::move(name)));
}

// In the order of the checks the error messages depend on: header, extended counts, both
// header tables' bounds, section headers and names, program headers, notes, debug links.
Result<void> ElfFile::Parse() {
  const std::span<const uint8_t> bytes = file_.bytes();
  Result<elf::ElfHeader> header = elf::ParseElfHeader(bytes);
  if (!header) return std::move(header).error();
  const elf::ElfHeader& h = *header;
  is_64bit_ = h.is_64bit;
  type_ = h.type;
  machine_ = h.machine;

  Result<TableCounts> counts = ReadTableCounts(bytes, h);
  if (!counts) return std::move(counts).error();
  if (Result<void> fit = CheckHeaderTables(h, *counts, bytes.size()); !fit) return fit;

  std::vector<uint32_t> name_offsets;
  sections_ = ReadSectionHeaders(bytes, h, counts->shnum, &name_offsets);
  if (Result<void> named = NameSections(bytes, counts->shstrndx, name_offsets, sections_); !named) {
    return named;
  }
  segments_ = ReadProgramHeaders(bytes, h, counts->phnum);
  // Before the relocations and symbols, whose addresses come from these.
  elf::PlaceObjectSections(type_, sections_);

  // Before the debug links are read: SectionData decompresses through these slots.
  decompressed_.resize(sections_.size());
  for (const ElfSection& s : sections_) {
    if (IsCompressed(s)) decompressed_[s.index] = std::make_unique<Decompressed>();
  }
  std::vector<std::vector<uint32_t>> relocations = elf::DebugRelocationSections(*this);
  relocated_.resize(relocations.size());
  for (size_t i = 0; i < relocations.size(); ++i) {
    if (relocations[i].empty()) continue;
    relocated_[i] = std::make_unique<Relocated>();
    relocated_[i]->relocation_sections = std::move(relocations[i]);
  }

  if (Result<void> notes = ReadNotes(bytes, sections_, segments_, &build_id_, &problems_); !notes) {
    return notes;
  }
  ReadDebugLink(*this, ".gnu_debuglink", &elf::ParseDebugLink, &debuglink_, &problems_);
  ReadDebugLink(*this, ".gnu_debugaltlink", &elf::ParseDebugAltLink, &debugaltlink_, &problems_);
  return {};
}

const ElfSection* ElfFile::FindSection(std::string_view name) const {
  for (const ElfSection& s : sections_) {
    if (s.name == name) return &s;
  }
  if (name.starts_with(".debug_")) {
    for (const ElfSection& s : sections_) {
      if (s.name.size() == name.size() + 1 && s.name.starts_with(".zdebug_") &&
          s.name.substr(2) == name.substr(1)) {
        return &s;
      }
    }
  }
  return nullptr;
}

Result<std::span<const uint8_t>> ElfFile::SectionData(const ElfSection& section) const {
  if (section.index >= sections_.size()) {
    return Error(ErrorCode::kInvalidArgument,
                 "section index " + std::to_string(section.index) + " is not in this file")
        .WithFile(path());
  }
  // Use our own copy of the header: the caller's may be stale or hand-made.
  const ElfSection& s = sections_[section.index];
  Relocated* relocated = s.index < relocated_.size() ? relocated_[s.index].get() : nullptr;
  if (relocated == nullptr || HasNoFileData(s)) return UnrelocatedSectionData(s);
  std::call_once(relocated->once, [&] {
    Result<std::span<const uint8_t>> raw = UnrelocatedSectionData(s);
    if (!raw) {
      relocated->error = std::move(raw).error();
      return;
    }
    relocated->size = raw->size();
    relocated->bytes.reset(new uint8_t[raw->size() + 1]);
    if (!raw->empty()) std::memcpy(relocated->bytes.get(), raw->data(), raw->size());
    heap_bytes_.fetch_add(relocated->size, std::memory_order_relaxed);
    Result<void> applied = elf::ApplyRelocations(*this, s, relocated->relocation_sections,
                                                 {relocated->bytes.get(), relocated->size});
    if (!applied) relocated->error = std::move(applied).error();
  });
  if (relocated->error) return *relocated->error;
  return std::span<const uint8_t>(relocated->bytes.get(), relocated->size);
}

Result<std::span<const uint8_t>> ElfFile::UnrelocatedSectionData(const ElfSection& s) const {
  if (HasNoFileData(s)) return std::span<const uint8_t>();
  const std::span<const uint8_t> bytes = file_.bytes();
  if (!RangeFits(s.offset, s.size, bytes.size())) {
    return Error(ErrorCode::kMalformed, "section data (" + std::to_string(s.size) + " bytes at " +
                                            Hex(s.offset) + ") lies past the end of the file (" +
                                            std::to_string(bytes.size()) + " bytes)")
        .WithFile(path())
        .WithSection(SectionLabel(s));
  }
  std::span<const uint8_t> raw = bytes.subspan(s.offset, s.size);
  Decompressed* slot = decompressed_[s.index].get();
  if (slot == nullptr) return raw;
  StartDecompression(s, raw, *slot, false);
  slot->stream->Unlimit();  // whoever paused the decoder, this caller needs all of it
  Result<std::span<const uint8_t>> data = slot->stream->Wait();
  // A background decoding is over: its thread is joined now rather than at destruction.
  std::lock_guard<std::mutex> lock(slot->join_mu);
  slot->worker.reset();
  return data;
}

void ElfFile::StartDecompression(const ElfSection& s, std::span<const uint8_t> raw,
                                 Decompressed& slot, bool background) const {
  std::call_once(slot.once, [&] {
    auto fail = [&](Error e) {
      slot.stream->Finish(std::move(e).WithFile(path()).WithSection(SectionLabel(s)));
    };
    bool gabi = (s.flags & SHF_COMPRESSED) != 0;
    Result<elf::CompressedPayload> payload = elf::ParseCompressedSection(raw, gabi, is_64bit_);
    if (!payload) return fail(std::move(payload).error());
    payload->stream_is_file_mapping = file_.is_mapping();
    Result<elf::DecompressedBytes> buffer =
        elf::DecompressedBytes::Allocate(static_cast<size_t>(payload->size));
    if (!buffer) return fail(std::move(buffer).error());
    slot.data = std::move(*buffer);
    heap_bytes_.fetch_add(slot.data.size(), std::memory_order_relaxed);
    slot.stream->Reset(slot.data.bytes(), slot.data.mapped());
    auto decode = [this, &s, &slot, p = *payload] {
      elf::SectionStream& stream = *slot.stream;
      Result<void> r = elf::DecompressInto(p, {slot.data.data(), slot.data.size()},
                                           [&](size_t n) { stream.Publish(n); });
      if (r) {
        stream.Finish(std::nullopt);
      } else {
        stream.Finish(std::move(r).error().WithFile(path()).WithSection(SectionLabel(s)));
      }
    };
    if (background) {
      slot.worker = std::make_unique<SpreadThread>(decode);
    } else {
      decode();
    }
  });
}

std::shared_ptr<const elf::SectionStream> elf::StreamSectionData(const ElfFile& elf,
                                                                 const ElfSection& section) {
  auto finished = [](Result<std::span<const uint8_t>> r) {
    auto stream = std::make_shared<elf::SectionStream>();
    if (r) {
      stream->Reset(*r);
      stream->Finish(std::nullopt);
    } else {
      stream->Finish(std::move(r).error());
    }
    return stream;
  };
  if (section.index >= elf.sections_.size()) return finished(elf.SectionData(section));
  const ElfSection& s = elf.sections_[section.index];
  ElfFile::Decompressed* slot = elf.decompressed_[s.index].get();
  // Relocations are applied to the whole section: a relocated one is never streamed.
  const bool relocated = s.index < elf.relocated_.size() && elf.relocated_[s.index] != nullptr;
  if (slot == nullptr || relocated || HasNoFileData(s) ||
      !RangeFits(s.offset, s.size, elf.file_.bytes().size())) {
    return finished(elf.SectionData(section));  // nothing to decode (or the range error)
  }
  elf.StartDecompression(s, elf.file_.bytes().subspan(s.offset, s.size), *slot, true);
  return slot->stream;
}

void ElfFile::DiscardDecompressed(const ElfSection& section) {
  if (section.index < relocated_.size() && relocated_[section.index]) {
    std::unique_ptr<Relocated>& copy = relocated_[section.index];
    auto fresh = std::make_unique<Relocated>();
    fresh->relocation_sections = std::move(copy->relocation_sections);
    heap_bytes_.fetch_sub(copy->size, std::memory_order_relaxed);
    copy = std::move(fresh);
  }
  if (section.index >= decompressed_.size() || !decompressed_[section.index]) return;
  std::unique_ptr<Decompressed>& slot = decompressed_[section.index];
  slot->stream->Unlimit();
  slot->worker.reset();  // a decoding still under way ends first
  heap_bytes_.fetch_sub(slot->data.size(), std::memory_order_relaxed);
  slot = std::make_unique<Decompressed>();  // the old buffer goes with the old slot
}

Result<std::span<const uint8_t>> ElfFile::SectionData(std::string_view name) const {
  const ElfSection* s = FindSection(name);
  if (s == nullptr) return std::span<const uint8_t>();
  return SectionData(*s);
}

std::string ElfFile::build_id_hex() const { return ToHex(build_id_); }

const SymbolTable& ElfFile::symbols() const {
  std::call_once(symbols_once_, [this] {
    elf::SymbolTableBuilder::Build(*this, &symbols_);
    heap_bytes_.fetch_add(symbols_.memory_bytes(), std::memory_order_relaxed);
  });
  return symbols_;
}

const SymbolTable& ElfFile::plt_symbols() const {
  std::call_once(plt_once_, [this] {
    elf::SymbolTableBuilder::BuildPlt(*this, &plt_symbols_);
    heap_bytes_.fetch_add(plt_symbols_.memory_bytes(), std::memory_order_relaxed);
  });
  return plt_symbols_;
}

const SymbolTable& ElfFile::absolute_symbols() const {
  std::call_once(absolute_once_, [this] {
    elf::SymbolTableBuilder::BuildAbsolute(*this, &absolute_symbols_);
    heap_bytes_.fetch_add(absolute_symbols_.memory_bytes(), std::memory_order_relaxed);
  });
  return absolute_symbols_;
}

std::optional<uint64_t> ElfFile::VaddrToFileOffset(uint64_t vaddr) const {
  for (const ElfSegment& seg : segments_) {
    if (seg.type != PT_LOAD || vaddr < seg.vaddr) continue;
    uint64_t delta = vaddr - seg.vaddr;
    uint64_t offset;
    if (delta < seg.filesz && CheckedAdd(seg.offset, delta, &offset)) return offset;
  }
  return std::nullopt;
}

std::optional<uint64_t> ElfFile::FileOffsetToVaddr(uint64_t offset) const {
  for (const ElfSegment& seg : segments_) {
    if (seg.type != PT_LOAD || offset < seg.offset) continue;
    uint64_t delta = offset - seg.offset;
    uint64_t vaddr;
    if (delta < seg.filesz && CheckedAdd(seg.vaddr, delta, &vaddr)) return vaddr;
  }
  return std::nullopt;
}

}  // namespace stacksym
