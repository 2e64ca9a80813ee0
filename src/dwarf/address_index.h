// AddressIndex — a bucket index over a sorted array of start addresses, so that finding "the
// last element starting at or before an address" reads one bucket entry and a few nearby
// elements instead of binary-searching the whole array (a cache miss per level on the 10^5-
// entry tables of big units). Built alongside a table; derivable from it, so it needs no
// persisting.
//
//   AddressIndex index;
//   index.Build(rows.size(), [&](size_t i) { return rows[i].address; });
//   auto [lo, hi] = index.Candidates(address);   // search rows[lo, hi) only
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace stacksym::dwarf {

class AddressIndex {
 public:
  // start_of(i) must not decrease with i.
  template <class StartOf>
  void Build(size_t n, StartOf start_of) {
    first_.clear();
    count_ = static_cast<uint32_t>(n);
    if (n < kMinElements) return;  // a plain binary search is as fast
    base_ = start_of(0);
    uint64_t span = start_of(n - 1) - base_;
    // About two elements per bucket: the bucket width is the smallest power of two that
    // keeps the bucket count at or below n / 2.
    shift_ = 0;
    while (shift_ < 63 && (span >> shift_) >= n / 2) ++shift_;
    size_t buckets = static_cast<size_t>(span >> shift_) + 1;
    first_.resize(buckets + 1);
    // first_[b]: the last element starting at or before bucket b's low end (0 if none).
    size_t i = 0;
    for (size_t b = 0; b <= buckets; ++b) {
      bool overflows = shift_ > 0 && (static_cast<uint64_t>(b) >> (64 - shift_)) != 0;
      uint64_t offset = overflows ? ~uint64_t{0} : static_cast<uint64_t>(b) << shift_;
      uint64_t low = offset > ~uint64_t{0} - base_ ? ~uint64_t{0} : base_ + offset;
      while (i + 1 < n && start_of(i + 1) <= low) ++i;
      first_[b] = static_cast<uint32_t>(i);
    }
  }

  // [lo, hi): the elements among which the answer for `address` lies (the whole array when
  // no index was built). The caller still searches them for the last start <= address.
  std::pair<uint32_t, uint32_t> Candidates(uint64_t address) const {
    if (first_.empty() || address < base_) return {0, count_};
    uint64_t b = (address - base_) >> shift_;
    if (b + 1 >= first_.size()) return {first_.back(), count_};
    return {first_[b], first_[b + 1] + 1};
  }

  size_t memory_bytes() const { return first_.capacity() * sizeof(uint32_t); }

 private:
  static constexpr size_t kMinElements = 64;
  std::vector<uint32_t> first_;
  uint64_t base_ = 0;
  unsigned shift_ = 0;
  uint32_t count_ = 0;
};

}  // namespace stacksym::dwarf
