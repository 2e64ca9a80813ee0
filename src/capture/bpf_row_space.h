// BpfRowSpace — which rows of the BPF unwind-rows array are free. Tables are placed first-fit
// and given back when evicted; neighbouring free ranges merge, so a table that was evicted
// leaves room for any table at most its size.
//
//   BpfRowSpace space(1 << 20);
//   std::optional<uint32_t> at = space.Allocate(rows);   // nullopt: no free range that big
//   ...
//   space.Release(*at, rows);
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace stacksym::capture {

class BpfRowSpace {
 public:
  explicit BpfRowSpace(uint32_t rows);

  // The first row of `count` consecutive free rows (lowest such start), now taken.
  std::optional<uint32_t> Allocate(uint32_t count);
  // Gives back rows that Allocate returned. Releasing rows that are free is a bug and ignored.
  void Release(uint32_t start, uint32_t count);

  uint32_t capacity() const { return capacity_; }
  uint32_t free_rows() const { return free_rows_; }
  uint32_t used_rows() const { return capacity_ - free_rows_; }
  size_t free_ranges() const { return free_.size(); }

 private:
  uint32_t capacity_;
  uint32_t free_rows_;
  std::map<uint32_t, uint32_t> free_;  // start → count; disjoint and never adjacent
};

}  // namespace stacksym::capture
