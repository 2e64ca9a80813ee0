// DemangleCache — each distinct mangled name demangled once, however many frames carry it.
//
//   DemangleCache cache;
//   std::string_view pretty = cache.Get(raw);  // valid as long as `cache` and `raw`'s memory
//
// A name that is not mangled (C names: MaybeMangled) is its own demangled form: Get() returns
// `raw` itself, without a copy or a lock (a C binary's index build asks for every name).
// Keys are the names' addresses, not their text: callers pass views into memory that outlives
// the cache and holds NUL-terminated names (string tables, .debug_str), so one address is one
// name and a lookup hashes a pointer instead of a long template name.
// Thread-safety: Get() may be called from several threads; demangling runs outside the locks,
// and the names are spread over shards with a lock each (an index build asks from every core).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>

#include "base/flat_table.h"

namespace stacksym {

class DemangleCache {
 public:
  std::string_view Get(std::string_view raw);
  size_t memory_bytes() const;

 private:
  static constexpr size_t kShards = 32;
  struct Slot {
    uint64_t hash = 0;
    const char* key = nullptr;
    const std::string* name = nullptr;
    bool empty() const { return hash == 0; }
  };
  struct Shard {
    mutable std::mutex mu;
    FlatTable<Slot> slots;
    std::deque<std::string> names;  // grows at the end only: references stay valid
  };
  static uint64_t HashOf(const char* key);
  Shard& ShardOf(uint64_t hash) { return shards_[(hash >> 40) % kShards]; }
  Shard shards_[kShards];
};

}  // namespace stacksym
