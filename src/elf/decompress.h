// elf/decompress.h — inflating compressed ELF sections (SHF_COMPRESSED with zlib or zstd, and
// the legacy GNU .zdebug_* form).
//
// The declared size is a claim by the file: output never grows past it, a stream that ends
// early or runs long is an error, and declared sizes no real compressor could reach from the
// given input are refused before anything is allocated.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::elf {

enum class Compression { kZlib, kZstd };

// Decompresses `input` (a bare zlib or zstd stream) that must expand to exactly
// `declared_size` bytes.
Result<std::vector<uint8_t>> Decompress(Compression kind, std::span<const uint8_t> input,
                                        uint64_t declared_size);

// The contents of a whole compressed section: the Elf32/64_Chdr form when `gabi` is true,
// otherwise the legacy "ZLIB" + 8-byte big-endian size form.
Result<std::vector<uint8_t>> DecompressSection(std::span<const uint8_t> raw, bool gabi,
                                               bool is_64bit);

}  // namespace stacksym::elf
