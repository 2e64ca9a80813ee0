// Hex forms of numbers and bytes, one definition each: build IDs (ToHex/FromHex, public in
// stacksym/hex.h), addresses and offsets in messages and output ("0x" and no padding, as
// printf's "0x%llx", which llvm-symbolizer's output and ours must match byte for byte), and
// fixed-width words in cache file names.
//
//   std::string s = HexU64(0x4a2f0);                     // "0x4a2f0"
//   char buf[kHexU64Size]; out.append(buf, WriteHexU64(0x4a2f0, buf));  // the same, no allocation
//   std::string w = HexU32Padded(0xab);                  // "000000ab"
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "stacksym/hex.h"

namespace stacksym {

inline constexpr char kHexDigits[] = "0123456789abcdef";

// The value of a hex digit (either case), -1 for any other character.
inline int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Room for the longest WriteHexU64 output: "0x" and 16 digits.
inline constexpr size_t kHexU64Size = 18;

// Writes "0x" and the lowercase hex digits of `v` without leading zeros ("0x0" for 0) to
// `out` (kHexU64Size bytes of room), no terminator; returns the number of chars written.
size_t WriteHexU64(uint64_t v, char* out);
// The same as a string.
std::string HexU64(uint64_t v);

// Eight lowercase hex digits, zero-padded, no prefix (printf's "%08x").
std::string HexU32Padded(uint32_t v);

}  // namespace stacksym
