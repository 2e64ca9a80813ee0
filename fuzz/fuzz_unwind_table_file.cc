// libFuzzer target for the persisted unwind table reader (src/unwind/unwind_table_file.cc):
// arbitrary bytes as a .unwtab file, as they are and with their checksums made right (so that
// mutations reach the structure and row checks behind them). Whatever Parse accepts must hold the
// invariants the unwinders rely on (rows sorted, inside [base, end), known rules), answer Find()
// everywhere, and write back to the same bytes. Must never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "cache/checksum.h"
#include "unwind/unwind_table_file.h"

namespace {

using namespace stacksym;

uint32_t U32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
void PutU32(std::vector<uint8_t>& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }

// The input with its three checksums made right (when its sizes allow), so that mutations
// reach the checks behind them: the meta section's structure and the rows' invariants.
std::vector<uint8_t> WithChecksums(const uint8_t* data, size_t size) {
  std::vector<uint8_t> b(data, data + size);
  if (size < unwind::kHeaderSize) return b;
  const uint64_t meta_size = U32(b, 44);
  const uint64_t rows_offset = (unwind::kHeaderSize + meta_size + 15) & ~uint64_t{15};
  const uint64_t rows_bytes = uint64_t{U32(b, 40)} * sizeof(UnwindRow);
  if (rows_offset + rows_bytes > size) return b;
  PutU32(b, 48, cache::Crc32c({b.data() + unwind::kHeaderSize, meta_size}));
  PutU32(b, 52, cache::Crc32c({b.data() + rows_offset, rows_bytes}));
  PutU32(b, 56, cache::Crc32c({b.data(), 56}));
  return b;
}

void Check(std::span<const uint8_t> bytes) {
  const uint8_t* data = bytes.data();
  const size_t size = bytes.size();
  auto loaded = unwind::Parse(bytes);
  if (!loaded) return;
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
  std::vector<uint8_t> again = unwind::Serialize(t, loaded->identity);
  if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Check({data, size});
  std::vector<uint8_t> fixed = WithChecksums(data, size);
  Check(fixed);
  return 0;
}
