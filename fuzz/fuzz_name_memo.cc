// libFuzzer target for the demangled-name memo reader (src/index/name_memo.h): arbitrary bytes
// as a memo file, parsed with and without checksum verification (without, mutations reach the
// size, order and bounds checks), bound to the index its header names so that the entries are
// read; then every entry's text is read. Must never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "index/name_memo.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stacksym::index;
  std::vector<uint64_t> aligned((size + 7) / 8);  // as NameMemo::Load reads a file
  if (size > 0) std::memcpy(aligned.data(), data, size);
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(aligned.data()), size);
  NameMemoBinding binding;
  if (size >= sizeof(NameMemoHeader)) {
    NameMemoHeader header;
    std::memcpy(&header, data, sizeof(header));
    binding = {header.index_crc, header.index_size};
  }
  for (bool verify : {false, true}) {
    bool stale = false;
    auto view = ParseNameMemo(bytes, binding, &stale, verify);
    if (!view) continue;
    // Each entry's text, copied out as NameMemo::Find does (ASan sees any read past the input).
    std::string text;
    for (const NameMemoEntry& e : view->entries) text.assign(view->text.substr(e.offset, e.size));
  }
  return 0;
}
