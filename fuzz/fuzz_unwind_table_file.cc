// libFuzzer target for the persisted unwind table reader (src/unwind/unwind_table_file.cc):
// arbitrary bytes as a .unwtab file. Whatever Parse accepts must hold the invariants the
// unwinders rely on (rows sorted, inside [base, end), known rules), answer Find() everywhere,
// and write back to the same bytes. Must never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "unwind/unwind_table_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stacksym;
  std::span<const uint8_t> bytes(data, size);
  auto loaded = unwfile::Parse(bytes);
  if (!loaded) return 0;
  const UnwindTable& t = *loaded->table;
  std::span<const UnwindRow> rows = t.rows();
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].pc <= rows[i - 1].pc) std::abort();
  }
  if (!rows.empty() && t.base_pc() + rows.back().pc >= t.end_pc()) std::abort();
  for (size_t i = 0; i < rows.size() && i < 4096; ++i) {
    const uint64_t pc = t.base_pc() + rows[i].pc;
    if (t.Find(pc) != &rows[i]) std::abort();
    (void)t.Find(pc - 1);
  }
  for (size_t i = 0; i + 8 <= size && i < 512; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, 8);
    (void)t.Find(word);
  }
  // What was accepted is exactly what the writer makes of it.
  std::vector<uint8_t> again = unwfile::Serialize(t, loaded->identity);
  if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
  return 0;
}
