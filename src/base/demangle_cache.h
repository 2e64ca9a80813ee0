// DemangleCache — each distinct mangled name demangled once, however many frames carry it.
//
//   DemangleCache cache;
//   std::string_view pretty = cache.Get(raw);  // valid as long as `cache` and `raw`'s memory
//
// A name that is not mangled (C names: MaybeMangled) is its own demangled form: Get() returns
// `raw` itself, without a copy or a lock (a C binary's index build asks for every name).
// GetHashed() also gives both names' HashBytes, worked out once per distinct mangled name
// while its text is still in the cache (an index build's string tables need them for names
// that dozens of units share); 0 for a name that is not mangled (the caller hashes it).
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
  struct Hashed {
    std::string_view pretty;
    uint64_t pretty_hash = 0;  // HashBytes(pretty); 0 when raw is not mangled
    uint64_t raw_hash = 0;     // HashBytes(raw); 0 likewise
  };
  std::string_view Get(std::string_view raw) { return GetHashed(raw).pretty; }
  Hashed GetHashed(std::string_view raw);
  size_t memory_bytes() const;

 private:
  static constexpr size_t kShards = 32;
  struct Slot {
    uint64_t hash = 0;
    const char* key = nullptr;
    const std::string* name = nullptr;
    uint64_t pretty_hash = 0, raw_hash = 0;
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
