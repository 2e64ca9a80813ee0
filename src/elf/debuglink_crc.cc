// DebugLinkCrc32: the checksum .gnu_debuglink stores for its debug file (zlib's CRC-32).
#include <zlib.h>

#include "stacksym/elf.h"

namespace stacksym {

uint32_t DebugLinkCrc32(std::span<const uint8_t> bytes) {
  return static_cast<uint32_t>(crc32_z(0, bytes.data(), bytes.size()));
}

}  // namespace stacksym
