// CRC32C (Castagnoli) of a byte range: SSE4.2 crc32 instructions when the CPU has them, a
// table otherwise. The cache directory's files (symbol indexes, their name memos, unwind
// tables) are checked with it before their bytes are trusted.
//
//   uint32_t crc = Crc32c(bytes);
#pragma once

#include <cstdint>
#include <span>

namespace stacksym::cache {

uint32_t Crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0);

}  // namespace stacksym::cache
