// UnwindTableCache — tables shared by build ID, least recently used dropped past a byte bound.
#include <list>
#include <string>
#include <unordered_map>

#include "stacksym/unwind.h"

namespace stacksym {
namespace {

// Build ID when the file has one; otherwise the file's identity (so an edited file without a
// build ID is not mistaken for its old self).
std::string CacheKey(const ElfFile& elf, const ElfFile* debug_file) {
  std::string key;
  std::span<const uint8_t> id = elf.build_id();
  if (!id.empty()) {
    key = "b:" + ToHex(id);
  } else {
    const FileIdentity& f = elf.identity();
    key = "f:" + std::to_string(f.dev) + ":" + std::to_string(f.inode) + ":" +
          std::to_string(f.size) + ":" + std::to_string(f.mtime_ns) + ":" + elf.path();
  }
  // A table built with a debug file's .debug_frame may hold more than one without it.
  if (debug_file != nullptr) key += "+d";
  return key;
}

}  // namespace

struct UnwindTableCache::Impl {
  struct Entry {
    std::string key;
    std::shared_ptr<const UnwindTable> table;
    size_t bytes = 0;
  };
  UnwindTableCacheOptions options;
  mutable std::mutex mu;
  std::list<Entry> lru;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_key;
  size_t bytes = 0;
  uint64_t evictions = 0;

  void EvictLocked() {
    // The entry just used (front) is kept even when it alone exceeds the bound.
    while (bytes > options.max_bytes && lru.size() > 1) {
      Entry& victim = lru.back();
      bytes -= victim.bytes;
      by_key.erase(victim.key);
      lru.pop_back();
      ++evictions;
    }
  }
};

UnwindTableCache::UnwindTableCache(UnwindTableCacheOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
}

UnwindTableCache::~UnwindTableCache() = default;

std::shared_ptr<const UnwindTable> UnwindTableCache::Get(const ElfFile& elf,
                                                         const ElfFile* debug_file) {
  const std::string key = CacheKey(elf, debug_file);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->by_key.find(key);
    if (it != impl_->by_key.end()) {
      impl_->lru.splice(impl_->lru.begin(), impl_->lru, it->second);
      return it->second->table;
    }
  }
  // Built outside the lock: two threads may build the same table at once; the first to
  // insert wins and both return the same one.
  Result<std::shared_ptr<const UnwindTable>> built = UnwindTable::Build(elf, debug_file);
  std::shared_ptr<const UnwindTable> table;
  if (built) {
    table = std::move(*built);
  } else {
    UnwindTableStats stats;
    stats.first_problem = built.error().ToString();
    std::span<const uint8_t> id = elf.build_id();
    table = std::make_shared<const UnwindTable>(0, 0, std::vector<UnwindRow>(), std::move(stats),
                                                std::vector<uint8_t>(id.begin(), id.end()));
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->by_key.find(key);
  if (it != impl_->by_key.end()) {
    impl_->lru.splice(impl_->lru.begin(), impl_->lru, it->second);
    return it->second->table;
  }
  const size_t bytes = table->memory_bytes() + key.size();
  impl_->lru.push_front({key, table, bytes});
  impl_->by_key.emplace(key, impl_->lru.begin());
  impl_->bytes += bytes;
  impl_->EvictLocked();
  return table;
}

size_t UnwindTableCache::bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->bytes;
}

size_t UnwindTableCache::size() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->lru.size();
}

uint64_t UnwindTableCache::evictions() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->evictions;
}

}  // namespace stacksym
