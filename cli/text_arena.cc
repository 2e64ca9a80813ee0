#include "text_arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <new>

namespace stacksym::cli {
namespace {

constexpr size_t kRegion = size_t{2} << 20;  // one huge page

}  // namespace

TextArena::~TextArena() {
  for (const Region& r : regions_) {
    if (r.mapped) {
      ::munmap(r.data, r.size);
    } else {
      delete[] r.data;
    }
  }
}

void TextArena::Open(size_t at_least) {
  size_t size = (at_least + kRegion - 1) / kRegion * kRegion;
  Region region;
  region.size = size;
  // Huge pages need 2 MiB-aligned addresses: map one region extra and trim both ends.
  void* p =
      ::mmap(nullptr, size + kRegion, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    uintptr_t base = reinterpret_cast<uintptr_t>(p);
    uintptr_t aligned = (base + kRegion - 1) & ~uintptr_t{kRegion - 1};
    size_t head = aligned - base;
    if (head != 0) ::munmap(p, head);
    if (kRegion - head != 0) ::munmap(reinterpret_cast<char*>(aligned) + size, kRegion - head);
    region.data = reinterpret_cast<char*>(aligned);
    region.mapped = true;
    ::madvise(region.data, size, MADV_HUGEPAGE);
    // Advice only: where it is refused the pages fault in as they are written.
    ::madvise(region.data, size, MADV_POPULATE_WRITE);
  } else {
    region.data = new char[size];
  }
  regions_.push_back(region);
  used_ = 0;
}

std::string_view TextArena::Add(std::string_view text) {
  if (regions_.empty() || regions_.back().size - used_ < text.size()) Open(text.size());
  char* at = regions_.back().data + used_;
  if (!text.empty()) std::memcpy(at, text.data(), text.size());
  used_ += text.size();
  return {at, text.size()};
}

}  // namespace stacksym::cli
