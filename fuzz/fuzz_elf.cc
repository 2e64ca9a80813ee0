// libFuzzer target for the ELF reader: parse, read every section (decompressing, both on this
// thread and streamed on a background one, which must agree, and again after a discard),
// build the symbol table and look addresses up, translate addresses, read notes — and check
// the invariants the rest of stacksym relies on (sorted unique symbols, Find returns a cover,
// the ascending finder answers as Find), the PLT stubs' symbols made up from the dynamic
// relocations, the absolute symbols, and a relocatable object's placed sections (its debug
// sections' relocations are applied by SectionData above).
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "elf/object_layout.h"
#include "elf/section_stream.h"
#include "stacksym/elf.h"

using stacksym::ElfFile;
using stacksym::ElfSymbol;

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckFind(const stacksym::SymbolTable& table, uint64_t addr) {
  const ElfSymbol* s = table.Find(addr);
  if (s != nullptr) Check(addr >= s->address && addr - s->address < s->size);
}

void ReadViaFd(const uint8_t* data, size_t size) {
  int fd = memfd_create("fuzz_elf", MFD_CLOEXEC);
  if (fd < 0) return;
  if (write(fd, data, size) == static_cast<ssize_t>(size)) {
    (void)stacksym::ReadBuildIdFromFd(fd);
  }
  close(fd);
}

// An object's allocated sections are placed apart in header order (those after an end past
// 2^64 left at 0), and an offset is read in a text section that holds it.
void CheckObjectLayout(const ElfFile& elf) {
  uint64_t end = 0;
  bool full = false;
  for (const stacksym::ElfSection& s : elf.sections()) {
    if ((s.flags & SHF_ALLOC) == 0 || s.size == 0) continue;
    if (full || (end != 0 && s.addr == 0)) {
      Check(s.addr == 0);
      full = true;
      continue;
    }
    Check(s.addr >= end);
    full = __builtin_add_overflow(s.addr, s.size, &end);
  }
  for (uint64_t offset : {uint64_t{0}, uint64_t{1}, uint64_t{0x40}, uint64_t{0x1000}}) {
    const stacksym::ElfSection* text = stacksym::elf::ObjectTextSectionAt(elf, offset);
    if (text != nullptr) Check(offset < text->size && (text->flags & SHF_EXECINSTR) != 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ReadViaFd(data, size);
  auto opened = ElfFile::FromBytes({data, size}, "fuzz-input");
  if (!opened) {
    Check(!opened.error().message.empty());
    return 0;
  }
  const ElfFile& elf = **opened;

  uint64_t checksum = 0;
  for (const stacksym::ElfSection& section : elf.sections()) {
    auto bytes = elf.SectionData(section);
    if (bytes && !bytes->empty()) checksum += (*bytes)[0] + bytes->back();
    auto again = elf.SectionData(section);  // cached: same answer, same bytes
    Check(bytes.ok() == again.ok());
    if (bytes && again) Check(bytes->data() == again->data() && bytes->size() == again->size());
  }
  (void)elf.SectionData(".debug_info");

  // Streamed decoding (a background thread, progress front to back) must agree with the
  // synchronous one: same success, same bytes, and progress never past what is final.
  if (auto streamed_file = ElfFile::FromBytes({data, size}, "fuzz-input-streamed")) {
    const ElfFile& other = **streamed_file;
    for (const stacksym::ElfSection& section : other.sections()) {
      auto stream = stacksym::elf::StreamSectionData(other, section);
      size_t half = stream->buffer().size() / 2;
      size_t final_bytes = stream->WaitFor(half);
      Check(final_bytes <= stream->buffer().size());
      auto streamed = stream->Wait();
      auto direct = elf.SectionData(section);
      Check(streamed.ok() == direct.ok());
      if (streamed && direct) {
        Check(streamed->size() == direct->size());
        for (size_t i = 0; i < streamed->size(); ++i) Check((*streamed)[i] == (*direct)[i]);
      }
      auto later = other.SectionData(section);  // the same decoding, joined
      Check(later.ok() == streamed.ok());
    }
    // A discarded section decompresses again to the same outcome and bytes.
    std::shared_ptr<ElfFile> discarding = *streamed_file;
    for (const stacksym::ElfSection& section : discarding->sections()) {
      discarding->DiscardDecompressed(section);
      auto anew = discarding->SectionData(section);
      auto direct = elf.SectionData(section);
      Check(anew.ok() == direct.ok());
      if (anew && direct) {
        Check(anew->size() == direct->size());
        for (size_t i = 0; i < anew->size(); ++i) Check((*anew)[i] == (*direct)[i]);
      }
    }
  }
  (void)elf.build_id_hex();
  if (elf.debuglink()) checksum += elf.debuglink()->crc;
  if (elf.debugaltlink()) checksum += elf.debugaltlink()->build_id.size();

  const stacksym::SymbolTable& table = elf.symbols();
  auto symbols = table.symbols();
  for (size_t i = 0; i < symbols.size() && i < 2000; ++i) {
    const ElfSymbol& s = symbols[i];
    if (i > 0) Check(symbols[i - 1].address < s.address);
    CheckFind(table, s.address);
    CheckFind(table, s.address + s.size / 2);
    CheckFind(table, s.address + s.size);
    if (s.size > 0) CheckFind(table, s.address + s.size - 1);
  }
  for (uint64_t addr : {uint64_t{0}, uint64_t{0x1000}, uint64_t{0x401000}, ~uint64_t{0}}) {
    CheckFind(table, addr);
  }
  // Every symbol boundary and the addresses around them, ascending, as an index build asks.
  std::vector<uint64_t> bounds;
  for (size_t i = 0; i < symbols.size() && i < 2000; ++i) {
    const ElfSymbol& s = symbols[i];
    for (uint64_t a : {s.address - 1, s.address, s.address + s.size - 1, s.address + s.size}) {
      bounds.push_back(a);
    }
  }
  std::sort(bounds.begin(), bounds.end());
  stacksym::SymbolTable::AscendingFinder ascending(table);
  for (uint64_t addr : bounds) Check(ascending.Find(addr) == table.Find(addr));

  // The PLT stubs' made-up symbols: sorted, unique, disjoint, each named "...@plt" or ".plt",
  // and found where they are.
  const stacksym::SymbolTable& plt = elf.plt_symbols();
  auto stubs = plt.symbols();
  for (size_t i = 0; i < stubs.size(); ++i) {
    const ElfSymbol& s = stubs[i];
    Check(s.size > 0);
    Check(s.name == ".plt" || (s.name.size() > 4 && s.name.ends_with("@plt")));
    if (i > 0) Check(stubs[i - 1].address + stubs[i - 1].size <= s.address);
    Check(plt.Find(s.address) == &s);
    CheckFind(plt, s.address + s.size - 1);
    CheckFind(plt, s.address + s.size);
    checksum += s.name.size();
  }

  // The absolute symbols: sorted and unique, each found at its own address or inside a cover.
  const stacksym::SymbolTable& absolute = elf.absolute_symbols();
  auto absolutes = absolute.symbols();
  for (size_t i = 0; i < absolutes.size(); ++i) {
    if (i > 0) Check(absolutes[i - 1].address < absolutes[i].address);
    CheckFind(absolute, absolutes[i].address);
    CheckFind(absolute, absolutes[i].address + 1);
  }

  if (elf.type() == ET_REL) CheckObjectLayout(elf);

  for (const stacksym::ElfSegment& seg : elf.segments()) {
    for (uint64_t delta : {uint64_t{0}, seg.filesz / 2, seg.filesz}) {
      auto offset = elf.VaddrToFileOffset(seg.vaddr + delta);
      if (offset) (void)elf.FileOffsetToVaddr(*offset);
    }
    (void)elf.FileOffsetToVaddr(seg.offset);
  }
  return checksum == 0xdeadbeefcafeULL ? 1 : 0;
}
