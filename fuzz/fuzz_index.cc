// libFuzzer target for the symbol index reader: arbitrary bytes as an index file, opened with
// and without checksum verification (without, mutations reach every record the lookups
// follow), then answers for addresses where the tables change and for words of the input, in
// every option variant, and the Go pclntab's answers kept there (AnswerGo). Must never crash,
// hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "index/symbol_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using stacksym::index::SymbolIndex;
  for (bool verify : {false, true}) {
    SymbolIndex::OpenOptions open;
    open.verify_checksums = verify;
    auto index = SymbolIndex::FromBytes(std::span<const uint8_t>(data, size), open);
    if (!index) continue;
    std::vector<uint64_t> addresses = {0, 1, ~uint64_t{0}};
    for (const auto& s : (*index)->symbol_segments()) {
      if (addresses.size() > 256) break;
      addresses.push_back(s.start);
      addresses.push_back(s.start + 1);
    }
    for (uint64_t start : (*index)->function_segment_starts(128)) {
      addresses.push_back(start);
      addresses.push_back(start - 1);
    }
    for (size_t i = 0; i + 8 <= size && i < 512; i += 8) {
      uint64_t word;
      std::memcpy(&word, data + i, 8);
      addresses.push_back(word);
    }
    for (int variant = 0; variant < 4; ++variant) {
      stacksym::index::AnswerOptions options;
      options.demangle = variant != 1;
      options.inlines = variant != 2;
      options.linkage_names = variant != 3;
      for (uint64_t a : addresses) {
        stacksym::SymbolizedAddress out;
        out.vaddr = a;
        (void)(*index)->Answer(a, options, out);
      }
    }
    stacksym::index::GoAnswer go;
    for (uint64_t a : addresses) {
      for (bool inlines : {true, false}) {
        if ((*index)->AnswerGo(a, inlines, &go) && go.found && go.frame_count == 0)
          __builtin_trap();
      }
    }
    (void)(*index)->identity();
    (void)(*index)->build_id();
  }
  return 0;
}
