// DemangleCache — each distinct mangled name demangled once, however many frames carry it.
//
//   DemangleCache cache;
//   const std::string& pretty = cache.Get(raw);  // stable reference, valid as long as `cache`
//
// Keys are the names' addresses, not their text: callers pass views into memory that outlives
// the cache and holds NUL-terminated names (string tables, .debug_str), so one address is one
// name and a lookup hashes a pointer instead of a long template name.
// Thread-safety: Get() may be called from several threads; demangling runs outside the locks,
// and the names are spread over shards with a lock each (an index build asks from every core).
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace stacksym {

class DemangleCache {
 public:
  const std::string& Get(std::string_view raw);
  size_t memory_bytes() const;

 private:
  static constexpr size_t kShards = 32;
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<const char*, std::string> names;  // node-based: references stay valid
  };
  Shard& ShardOf(const char* key);
  Shard shards_[kShards];
};

}  // namespace stacksym
