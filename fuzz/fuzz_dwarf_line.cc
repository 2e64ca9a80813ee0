// libFuzzer target for .debug_line programs (versions 2–5): the input is a .debug_line
// section (also used as .debug_line_str and .debug_str, so v5 string forms resolve to
// something). Every table in the section is parsed, looked up and its file paths built.
// Seeds: .debug_line sections of the test fixtures (fuzz/seeds/fuzz_dwarf_line.sh).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "dwarf/line_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stacksym::dwarf;
  std::span<const uint8_t> bytes(data, size);
  LineSections sections{bytes, bytes, bytes, bytes, 0};
  uint64_t offset = 0;
  int tables = 0;
  while (offset + 4 <= size && tables++ < 64) {
    uint32_t length32;
    std::memcpy(&length32, data + offset, 4);
    uint64_t length = length32;
    uint64_t header = 4;
    if (length32 == 0xffffffffu) {
      if (offset + 12 > size) break;
      std::memcpy(&length, data + offset + 4, 8);
      header = 12;
    }
    auto table = LineTable::Parse(sections, offset, 8);
    if (table) {
      std::string path;
      for (size_t i = 0; i <= table->files().size(); ++i) (void)table->FilePath(i, "/comp", &path);
      for (const LineRow& row : table->rows()) {
        (void)table->Find(row.address);
        (void)table->Find(row.address - 1);
      }
    }
    if (length > size - offset - header) break;
    offset += header + length;
  }
  return 0;
}
