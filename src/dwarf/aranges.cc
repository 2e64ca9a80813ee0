#include "dwarf/aranges.h"

#include "base/byte_cursor.h"
#include "dwarf/dwarf_error.h"

namespace stacksym::dwarf {

Result<void> ParseAranges(std::span<const uint8_t> section, std::vector<ArangeEntry>* out,
                          std::vector<std::string>* warnings) {
  constexpr const char* kSection = ".debug_aranges";
  ByteCursor c(section);
  while (!c.at_end()) {
    uint64_t set_offset = c.offset();
    uint64_t length = c.U32();
    uint8_t offset_size = 4;
    if (length == 0xffffffffu) {
      length = c.U64();
      offset_size = 8;
    } else if (length >= 0xfffffff0u) {
      return Malformed(kSection, set_offset, "reserved length " + HexU64(length));
    }
    if (!c.ok() || length > c.remaining()) {
      return Malformed(kSection, set_offset, "set extends past the end of the section");
    }
    size_t header_size = c.offset() - set_offset;
    ByteCursor set = c.Sub(static_cast<size_t>(length));
    uint16_t version = set.U16();
    uint64_t unit_offset = set.UN(offset_size);
    uint8_t address_size = set.U8();
    uint8_t segment_size = set.U8();
    if (!set.ok()) return Malformed(kSection, set_offset, "truncated set header");
    if (version != 2) continue;  // unknown version: step over the set
    if ((address_size != 4 && address_size != 8) || segment_size != 0) {
      return Malformed(kSection, set_offset, "unsupported address or segment size");
    }
    // Tuples start at a multiple of twice the address size from the start of the set.
    size_t tuple_size = 2u * address_size;
    size_t here = header_size + set.offset();
    size_t pad = (tuple_size - here % tuple_size) % tuple_size;
    set.Skip(pad);
    while (set.remaining() >= tuple_size) {
      uint64_t entry_offset = header_size + set.offset() + set_offset;
      uint64_t start = set.UN(address_size);
      uint64_t len = set.UN(address_size);
      if (start == 0 && len == 0) {
        if (set.remaining() == 0) break;
        // A terminator before the set's end: the entries after it are read all the same, as
        // LLVM reads them (and warns in these words).
        if (warnings != nullptr) {
          warnings->push_back("address range table at offset " + HexU64(set_offset) +
                              " has a premature terminator entry at offset " +
                              HexU64(entry_offset));
        }
        continue;
      }
      if (len != 0 && start + len > start) out->push_back({start, start + len, unit_offset});
    }
    if (!set.ok()) return Malformed(kSection, set_offset, "truncated set");
  }
  return {};
}

}  // namespace stacksym::dwarf
