// UnwindTableCache — tables shared by build ID, least recently used dropped past a byte bound;
// with a directory, also loaded from and stored to persisted table files.
#include <cstdio>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "cache/cache_dir.h"
#include "stacksym/symbol_cache.h"
#include "stacksym/unwind.h"
#include "unwind/unwind_table_file.h"

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

void Warn(const std::string& message) {
  std::fprintf(stderr, "stacksym: warning: %s\n", message.c_str());
}

std::shared_ptr<const UnwindTable> BuildOrEmpty(const ElfFile& elf, const ElfFile* debug_file) {
  Result<std::shared_ptr<const UnwindTable>> built = UnwindTable::Build(elf, debug_file);
  if (built) return std::move(*built);
  UnwindTableStats stats;
  stats.first_problem = built.error().ToString();
  std::span<const uint8_t> id = elf.build_id();
  return std::make_shared<const UnwindTable>(0, 0, std::vector<UnwindRow>(), std::move(stats),
                                             std::vector<uint8_t>(id.begin(), id.end()));
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
  // Every table handed out, while anyone holds it: one past the byte bound (a big binary's,
  // held by the processes that map it) is handed out again, not read or built once more per
  // process — each copy was the agent's largest heap peak on a build host.
  std::unordered_map<std::string, std::weak_ptr<const UnwindTable>> live;
  size_t bytes = 0;
  uint64_t evictions = 0;
  uint64_t dir_loads = 0;
  uint64_t dir_stores = 0;
  bool dir_unusable = false;  // said once; from then on tables are built in memory only

  std::shared_ptr<const UnwindTable> FromDir(const ElfFile& elf);

  // The held table of `key` put back at the front of the LRU (null: no one holds it).
  std::shared_ptr<const UnwindTable> ReviveLocked(const std::string& key) {
    auto it = live.find(key);
    if (it == live.end()) return nullptr;
    std::shared_ptr<const UnwindTable> table = it->second.lock();
    if (!table) {
      live.erase(it);
      return nullptr;
    }
    InsertLocked(key, table);
    return table;
  }
  void InsertLocked(const std::string& key, const std::shared_ptr<const UnwindTable>& table) {
    const size_t entry_bytes = table->memory_bytes() + key.size();
    lru.push_front({key, table, entry_bytes});
    by_key.emplace(key, lru.begin());
    bytes += entry_bytes;
    live[key] = table;
    EvictLocked();
    // Forgotten tables' entries go once they outnumber the cached ones.
    if (live.size() > 2 * lru.size() + 64) {
      std::erase_if(live, [](const auto& e) { return e.second.expired(); });
    }
  }

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
    if (std::shared_ptr<const UnwindTable> held = impl_->ReviveLocked(key)) return held;
  }
  // Built outside the lock: two threads may build the same table at once; the first to
  // insert wins and both return the same one. (Two processes storing the same file at once
  // both succeed: each renames its own complete temporary file into place.)
  std::shared_ptr<const UnwindTable> table;
  if (!impl_->options.dir.empty() && debug_file == nullptr) {
    table = impl_->FromDir(elf);
  } else {
    table = BuildOrEmpty(elf, debug_file);
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->by_key.find(key);
  if (it != impl_->by_key.end()) {
    impl_->lru.splice(impl_->lru.begin(), impl_->lru, it->second);
    return it->second->table;
  }
  if (std::shared_ptr<const UnwindTable> held = impl_->ReviveLocked(key)) return held;
  impl_->InsertLocked(key, table);
  return table;
}

// The file when it is intact and of this binary; otherwise the table is built (a damaged or
// foreign file said once: the table is remembered in memory after this) and stored.
std::shared_ptr<const UnwindTable> UnwindTableCache::Impl::FromDir(const ElfFile& elf) {
  const std::string& dir = options.dir;
  const std::string path = dir + "/" + unwind::FileName(elf);
  auto loaded = unwind::Load(path, elf);
  if (loaded) {
    cache::MarkUsed(path);
    std::lock_guard<std::mutex> lock(mu);
    ++dir_loads;
    return std::move(*loaded);
  }
  if (loaded.error().code != ErrorCode::kNotFound) {
    Warn(loaded.error().ToString() + "; rebuilding it");
  }
  std::shared_ptr<const UnwindTable> table = BuildOrEmpty(elf, nullptr);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (dir_unusable) return table;
  }
  Result<void> stored = cache::CheckWritable(dir);
  if (stored) {
    stored = cache::StoreAtomically(dir, path, unwind::Serialize(*table, unwind::IdentityOf(elf)));
  }
  std::lock_guard<std::mutex> lock(mu);
  if (!stored) {
    if (!dir_unusable) {
      Warn("unwind table cache unusable (" + stored.error().ToString() +
           "); keeping unwind tables in memory only");
    }
    dir_unusable = true;
    return table;
  }
  ++dir_stores;
  (void)PruneSymbolCache(dir, options.dir_max_bytes);
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

uint64_t UnwindTableCache::dir_loads() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->dir_loads;
}

uint64_t UnwindTableCache::dir_stores() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->dir_stores;
}

}  // namespace stacksym
