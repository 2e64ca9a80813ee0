// FlatTable — a hash table of caller-defined slots: open addressing with linear probing,
// power-of-two capacity, at most half full. One allocation, no nodes: the tables that hold
// hundreds of thousands of names (an index build, a demangle cache) neither allocate per entry
// nor free entry by entry.
//
//   struct Slot {
//     uint64_t hash = 0;  // MixHash(key) or HashBytes(text)
//     Key key;
//     Value value;
//     bool empty() const { return hash == 0; }
//   };
//   FlatTable<Slot> table;
//   Slot& slot = table.Find(h, [&](const Slot& s) { return s.key == key; });
//   if (slot.empty()) {
//     slot = {h, key, value};
//     table.Filled();  // `slot` may be stale after this
//   }
//
// Hashes must never be 0 (MixHash and HashBytes make sure): 0 marks an empty slot.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace stacksym {

// A well-spread 64-bit hash of `x`, never 0.
inline uint64_t MixHash(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x | 1;
}

// A hash of a string's bytes for tables that compare the bytes on a match, never 0. Four
// independent lanes of 8 bytes: long names (C++ templates run to kilobytes) hash several times
// faster than through one multiply chain.
inline uint64_t HashBytes(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  uint64_t lanes[4] = {0x9e3779b97f4a7c15ULL ^ n, 0xc2b2ae3d27d4eb4fULL, 0x165667b19e3779f9ULL,
                       0x27d4eb2f165667c5ULL};
  auto mix = [](uint64_t lane, uint64_t word) {
    lane = (lane ^ word) * 0xff51afd7ed558ccdULL;
    return lane ^ (lane >> 29);
  };
  for (; n >= 32; p += 32, n -= 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t word;
      std::memcpy(&word, p + 8 * k, 8);
      lanes[k] = mix(lanes[k], word);
    }
  }
  for (int k = 0; n >= 8; p += 8, n -= 8, ++k) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    lanes[k] = mix(lanes[k], word);
  }
  uint64_t tail = 0;
  if (n != 0) std::memcpy(&tail, p, n);  // an empty view's data() may be null
  uint64_t h =
      mix(lanes[0], tail) ^ mix(lanes[1], lanes[2]) * 31 ^ lanes[3] * 0x9e3779b97f4a7c15ULL;
  return MixHash(h);
}

template <class Slot>
class FlatTable {
 public:
  explicit FlatTable(size_t expected = 0) {
    if (expected > 0) Grow(expected * 2);
  }
  // The slot for `hash` that `same` accepts, or the empty slot where it would go (filled by
  // the caller, which then calls Filled()).
  template <class Same>
  Slot& Find(uint64_t hash, const Same& same) {
    if (slots_.empty()) Grow(64);
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.empty() || (slot.hash == hash && same(slot))) return slot;
    }
  }
  // After filling the slot Find returned; may move the slots.
  void Filled() {
    if (++used_ * 2 > slots_.size()) Grow(slots_.size() * 2);
  }
  // Room for `count` entries in all (growing by doubling faults in every generation anew).
  void Reserve(size_t count) {
    if (count * 2 > slots_.size()) Grow(count * 2);
  }
  size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  void Grow(size_t capacity) {
    size_t size = 64;
    while (size < capacity) size *= 2;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(size, Slot{});
    size_t mask = size - 1;
    for (const Slot& slot : old) {
      if (slot.empty()) continue;
      size_t i = slot.hash & mask;
      while (!slots_[i].empty()) i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

}  // namespace stacksym
