// CRC32C (Castagnoli) of a byte range: SSE4.2 crc32 instructions when the CPU has them, a
// table otherwise. The index checks every section with it before trusting its bytes.
//
//   uint32_t crc = Crc32c(bytes);
#pragma once

#include <cstdint>
#include <span>

namespace stacksym::symindex {

uint32_t Crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0);

}  // namespace stacksym::symindex
