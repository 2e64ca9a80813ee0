#include "normalize/build_id_cache.h"

namespace stacksym::normalize {

const BuildIdEntry* BuildIdCache::Find(const FileIdentity& id) {
  auto it = map_.find(id);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return &it->second->second;
}

void BuildIdCache::Insert(const FileIdentity& id, BuildIdEntry entry) {
  if (max_entries_ == 0) return;
  auto it = map_.find(id);
  if (it != map_.end()) {
    it->second->second = std::move(entry);
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  while (map_.size() >= max_entries_) {
    map_.erase(lru_.back().first);
    lru_.pop_back();
  }
  lru_.emplace_front(id, std::move(entry));
  map_.emplace(id, lru_.begin());
}

void BuildIdCache::Clear() {
  map_.clear();
  lru_.clear();
}

}  // namespace stacksym::normalize
