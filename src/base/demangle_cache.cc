#include "base/demangle_cache.h"

#include <cstdint>

#include "stacksym/demangle.h"

namespace stacksym {

uint64_t DemangleCache::HashOf(const char* key) {
  return MixHash(reinterpret_cast<uintptr_t>(key) * 0xbf58476d1ce4e5b9ULL);
}

DemangleCache::Hashed DemangleCache::GetHashed(std::string_view raw) {
  if (!MaybeMangled(raw)) return {raw, 0, 0};
  const uint64_t hash = HashOf(raw.data());
  Shard& shard = ShardOf(hash);
  auto same = [&](const Slot& slot) { return slot.key == raw.data(); };
  auto hashed = [](const Slot& slot) -> Hashed {
    return {*slot.name, slot.pretty_hash, slot.raw_hash};
  };
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    const Slot& slot = shard.slots.Find(hash, same);
    if (!slot.empty()) return hashed(slot);
  }
  std::string pretty = Demangle(raw);
  // Hashed here, outside the lock and while both texts are in the cache.
  const uint64_t pretty_hash = HashBytes(pretty), raw_hash = HashBytes(raw);
  std::lock_guard<std::mutex> lock(shard.mu);
  // Another thread may have demangled the same name meanwhile: the first entry stays.
  Slot& slot = shard.slots.Find(hash, same);
  if (!slot.empty()) return hashed(slot);
  const std::string& name = shard.names.emplace_back(std::move(pretty));
  slot = {hash, raw.data(), &name, pretty_hash, raw_hash};
  shard.slots.Filled();
  return {name, pretty_hash, raw_hash};
}

size_t DemangleCache::memory_bytes() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    total += shard.slots.memory_bytes();
    for (const std::string& name : shard.names) total += sizeof(std::string) + name.capacity();
  }
  return total;
}

}  // namespace stacksym
