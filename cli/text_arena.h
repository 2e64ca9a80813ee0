// TextArena — append-only storage for rendered answers kept until they can be written in
// input order. Its memory comes in 2 MiB regions (huge pages where the kernel has them), each
// region's pages populated with one madvise(MADV_POPULATE_WRITE) when the region is opened:
// a warm `symbolize elf` of 5000 libceph-common addresses renders 7 MB of text, and faulting
// those fresh pages in one by one (1800 faults) cost more than all its lookups.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace stacksym::cli {

class TextArena {
 public:
  TextArena() = default;
  ~TextArena();
  TextArena(const TextArena&) = delete;
  TextArena& operator=(const TextArena&) = delete;

  // A copy of `text`, valid until the arena goes.
  std::string_view Add(std::string_view text);

 private:
  struct Region {
    char* data = nullptr;
    size_t size = 0;
    bool mapped = false;  // else new[]
  };
  void Open(size_t at_least);

  std::vector<Region> regions_;
  size_t used_ = 0;  // in the last region
};

}  // namespace stacksym::cli
