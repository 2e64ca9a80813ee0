// elf/elf_format.h — decoding of the raw ELF records (file header, program and section
// headers) for both classes, shared by ElfFile and the pread-based build-ID reader.
//
// Decoding only: these functions check that the bytes they are handed are long enough, not
// that the offsets inside the records make sense for a particular file.
#pragma once

#include <elf.h>

#include <cstdint>
#include <span>
#include <string>

#include "base/byte_cursor.h"
#include "base/hex.h"
#include "stacksym/elf.h"
#include "stacksym/result.h"

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2  // glibc < 2.37 lacks it; the value is fixed by the gABI.
#endif

namespace stacksym::elf {

// Enough bytes to hold either class's file header.
inline constexpr size_t kMaxHeaderSize = sizeof(Elf64_Ehdr);

struct ElfHeader {
  bool is_64bit = false;
  uint16_t type = 0;
  uint16_t machine = 0;
  uint64_t phoff = 0;
  uint64_t shoff = 0;
  uint16_t phentsize = 0;
  uint16_t shentsize = 0;
  uint16_t phnum = 0;     // raw e_phnum (PN_XNUM means "see section 0's sh_info")
  uint16_t shnum = 0;     // raw e_shnum (0 with shoff != 0 means "see section 0's sh_size")
  uint16_t shstrndx = 0;  // raw (SHN_XINDEX means "see section 0's sh_link")

  size_t phdr_size() const { return is_64bit ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr); }
  size_t shdr_size() const { return is_64bit ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr); }
  size_t sym_size() const { return is_64bit ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym); }
  size_t chdr_size() const { return is_64bit ? sizeof(Elf64_Chdr) : sizeof(Elf32_Chdr); }
};

// Validates e_ident (magic, class, byte order, version) and decodes the file header.
// `bytes` is the start of the file; it may be shorter than kMaxHeaderSize only for errors.
Result<ElfHeader> ParseElfHeader(std::span<const uint8_t> bytes);

// Decode one record at the cursor (which must hold at least phdr_size()/shdr_size() bytes;
// otherwise the cursor fails).
ElfSegment ReadProgramHeader(ByteCursor& cursor, bool is_64bit);
// The name is left empty; its offset into the section-name table goes to *name_offset.
ElfSection ReadSectionHeader(ByteCursor& cursor, bool is_64bit, uint32_t* name_offset);

// One raw symbol-table entry.
struct RawSymbol {
  uint32_t name = 0;
  uint8_t info = 0;
  uint8_t other = 0;
  uint16_t shndx = 0;
  uint64_t value = 0;
  uint64_t size = 0;
};
RawSymbol ReadSymbol(ByteCursor& cursor, bool is_64bit);

// The compression header of an SHF_COMPRESSED section.
struct CompressionHeader {
  uint32_t type = 0;  // ELFCOMPRESS_*
  uint64_t size = 0;  // decompressed size
  uint64_t addralign = 0;
};
CompressionHeader ReadCompressionHeader(ByteCursor& cursor, bool is_64bit);

// a + b, or false if it overflows.
inline bool CheckedAdd(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
inline bool CheckedMul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
// [offset, offset + size) lies inside a buffer of `total` bytes.
inline bool RangeFits(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

// elf_file.cc's name for HexU64 (base/hex.h), which the rest of elf/ calls directly.
inline std::string Hex(uint64_t value) { return HexU64(value); }

}  // namespace stacksym::elf
