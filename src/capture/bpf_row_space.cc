#include "capture/bpf_row_space.h"

#include <iterator>

namespace stacksym::capture {

BpfRowSpace::BpfRowSpace(uint32_t rows) : capacity_(rows), free_rows_(rows) {
  if (rows > 0) free_.emplace(0, rows);
}

std::optional<uint32_t> BpfRowSpace::Allocate(uint32_t count) {
  if (count == 0) return std::nullopt;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < count) continue;
    uint32_t start = it->first;
    uint32_t left = it->second - count;
    free_.erase(it);
    if (left > 0) free_.emplace(start + count, left);
    free_rows_ -= count;
    return start;
  }
  return std::nullopt;
}

void BpfRowSpace::Release(uint32_t start, uint32_t count) {
  if (count == 0 || start >= capacity_ || count > capacity_ - start) return;
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first < start + count) return;  // overlaps a free range
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > start) return;  // overlaps a free range
    if (prev->first + prev->second == start) {       // merge with the range before
      start = prev->first;
      count += prev->second;
      free_rows_ -= prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && next->first == start + count) {  // and with the one after
    count += next->second;
    free_rows_ -= next->second;
    free_.erase(next);
  }
  free_.emplace(start, count);
  free_rows_ += count;
}

}  // namespace stacksym::capture
