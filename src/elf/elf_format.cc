#include "elf/elf_format.h"

#include <cstring>
#include <string>

namespace stacksym::elf {

Result<ElfHeader> ParseElfHeader(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return Error(ErrorCode::kMalformed, "not an ELF file: the file is empty");
  if (bytes.size() < SELFMAG || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) {
    return Error(ErrorCode::kMalformed, "not an ELF file: bad magic number");
  }
  if (bytes.size() < EI_NIDENT) {
    return Error(ErrorCode::kMalformed,
                 "truncated ELF header: " + std::to_string(bytes.size()) + " bytes");
  }
  ElfHeader h;
  switch (bytes[EI_CLASS]) {
    case ELFCLASS32:
      h.is_64bit = false;
      break;
    case ELFCLASS64:
      h.is_64bit = true;
      break;
    default:
      return Error(ErrorCode::kMalformed,
                   "bad ELF class " + std::to_string(bytes[EI_CLASS]) + " (neither 32 nor 64 bit)");
  }
  switch (bytes[EI_DATA]) {
    case ELFDATA2LSB:
      break;
    case ELFDATA2MSB:
      return Error(ErrorCode::kUnsupported, "big-endian ELF files are not supported");
    default:
      return Error(ErrorCode::kMalformed, "bad ELF byte order " + std::to_string(bytes[EI_DATA]));
  }
  if (bytes[EI_VERSION] != EV_CURRENT) {
    return Error(ErrorCode::kUnsupported,
                 "unknown ELF version " + std::to_string(bytes[EI_VERSION]));
  }
  size_t header_size = h.is_64bit ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
  if (bytes.size() < header_size) {
    return Error(ErrorCode::kMalformed, "truncated ELF header: " + std::to_string(bytes.size()) +
                                            " of " + std::to_string(header_size) + " bytes");
  }
  ByteCursor c(bytes.data(), header_size);
  c.Skip(EI_NIDENT);
  h.type = c.U16();
  h.machine = c.U16();
  c.U32();  // e_version
  if (h.is_64bit) {
    c.U64();  // e_entry
    h.phoff = c.U64();
    h.shoff = c.U64();
  } else {
    c.U32();
    h.phoff = c.U32();
    h.shoff = c.U32();
  }
  c.U32();  // e_flags
  c.U16();  // e_ehsize
  h.phentsize = c.U16();
  h.phnum = c.U16();
  h.shentsize = c.U16();
  h.shnum = c.U16();
  h.shstrndx = c.U16();
  if (!c.ok()) return Error(ErrorCode::kInternal, "ELF header decoding overran");
  return h;
}

ElfSegment ReadProgramHeader(ByteCursor& c, bool is_64bit) {
  ElfSegment s;
  if (is_64bit) {
    s.type = c.U32();
    s.flags = c.U32();
    s.offset = c.U64();
    s.vaddr = c.U64();
    c.U64();  // p_paddr
    s.filesz = c.U64();
    s.memsz = c.U64();
    s.align = c.U64();
  } else {
    s.type = c.U32();
    s.offset = c.U32();
    s.vaddr = c.U32();
    c.U32();  // p_paddr
    s.filesz = c.U32();
    s.memsz = c.U32();
    s.flags = c.U32();
    s.align = c.U32();
  }
  return s;
}

ElfSection ReadSectionHeader(ByteCursor& c, bool is_64bit, uint32_t* name_offset) {
  ElfSection s;
  *name_offset = c.U32();
  if (is_64bit) {
    s.type = c.U32();
    s.flags = c.U64();
    s.addr = c.U64();
    s.offset = c.U64();
    s.size = c.U64();
    s.link = c.U32();
    s.info = c.U32();
    s.addralign = c.U64();
    s.entsize = c.U64();
  } else {
    s.type = c.U32();
    s.flags = c.U32();
    s.addr = c.U32();
    s.offset = c.U32();
    s.size = c.U32();
    s.link = c.U32();
    s.info = c.U32();
    s.addralign = c.U32();
    s.entsize = c.U32();
  }
  return s;
}

RawSymbol ReadSymbol(ByteCursor& c, bool is_64bit) {
  RawSymbol s;
  s.name = c.U32();
  if (is_64bit) {
    s.info = c.U8();
    s.other = c.U8();
    s.shndx = c.U16();
    s.value = c.U64();
    s.size = c.U64();
  } else {
    s.value = c.U32();
    s.size = c.U32();
    s.info = c.U8();
    s.other = c.U8();
    s.shndx = c.U16();
  }
  return s;
}

CompressionHeader ReadCompressionHeader(ByteCursor& c, bool is_64bit) {
  CompressionHeader h;
  h.type = c.U32();
  if (is_64bit) {
    c.U32();  // ch_reserved
    h.size = c.U64();
    h.addralign = c.U64();
  } else {
    h.size = c.U32();
    h.addralign = c.U32();
  }
  return h;
}

}  // namespace stacksym::elf
