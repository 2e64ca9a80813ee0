#include "base/demangle_cache.h"

#include <cstdint>

#include "stacksym/demangle.h"

namespace stacksym {

DemangleCache::Shard& DemangleCache::ShardOf(const char* key) {
  uint64_t x = reinterpret_cast<uintptr_t>(key);
  x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL;
  return shards_[(x >> 32) % kShards];
}

const std::string& DemangleCache::Get(std::string_view raw) {
  Shard& shard = ShardOf(raw.data());
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.names.find(raw.data());
    if (it != shard.names.end()) return it->second;
  }
  std::string pretty = Demangle(raw);
  std::lock_guard<std::mutex> lock(shard.mu);
  // Another thread may have demangled the same name meanwhile: the first entry stays.
  return shard.names.try_emplace(raw.data(), std::move(pretty)).first->second;
}

size_t DemangleCache::memory_bytes() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    total += shard.names.bucket_count() * sizeof(void*);
    for (const auto& [key, name] : shard.names) total += sizeof(std::string) + name.capacity() + 32;
  }
  return total;
}

}  // namespace stacksym
