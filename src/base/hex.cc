#include "base/hex.h"

#include <bit>

namespace stacksym {

std::string ToHex(std::span<const uint8_t> bytes) {
  std::string out(bytes.size() * 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kHexDigits[bytes[i] >> 4];
    out[2 * i + 1] = kHexDigits[bytes[i] & 0xf];
  }
  return out;
}

std::optional<std::vector<uint8_t>> FromHex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = HexDigit(hex[2 * i]);
    int lo = HexDigit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}

size_t WriteHexU64(uint64_t v, char* out) {
  // Digits needed: one per started nibble, at least one (for 0).
  const int digits = v == 0 ? 1 : (64 - std::countl_zero(v) + 3) / 4;
  out[0] = '0';
  out[1] = 'x';
  for (int i = digits - 1; i >= 0; --i) {
    out[2 + i] = kHexDigits[v & 0xf];
    v >>= 4;
  }
  return 2 + static_cast<size_t>(digits);
}

std::string HexU64(uint64_t v) {
  char buf[kHexU64Size];
  return std::string(buf, WriteHexU64(v, buf));
}

std::string HexU32Padded(uint32_t v) {
  std::string out(8, '0');
  for (int i = 7; i >= 0; --i) {
    out[static_cast<size_t>(i)] = kHexDigits[v & 0xf];
    v >>= 4;
  }
  return out;
}

}  // namespace stacksym
