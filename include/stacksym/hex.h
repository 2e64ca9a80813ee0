// stacksym/hex.h — the lowercase hex form build IDs are printed and looked up in.
//
//   std::string id = ToHex(elf->build_id());                  // "1f0e3c..."
//   std::optional<std::vector<uint8_t>> bytes = FromHex(id);  // back, or nullopt
//
// Public because build IDs cross the public API as bytes (ElfFile::build_id, normalized
// modules, BuildIdSymbolizer) while people and files name them in hex: callers print and parse
// them with these. Defined in src/base/hex.cc, whose header (base/hex.h) adds the library's
// other hex forms (addresses as "0x...", fixed-width words).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace stacksym {

// Two lowercase hex digits per byte, in order.
std::string ToHex(std::span<const uint8_t> bytes);
// Parses hex (even length, either case, no prefix) into bytes; nullopt on bad input.
std::optional<std::vector<uint8_t>> FromHex(std::string_view hex);

}  // namespace stacksym
