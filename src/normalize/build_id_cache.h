// A bounded LRU cache of GNU build IDs keyed by file identity (dev, inode, size, mtime), with
// negative entries: a file known to have no build ID (or not to be ELF) is not read again.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "stacksym/mapped_file.h"
#include "stacksym/reason.h"

namespace stacksym::normalize {

struct BuildIdEntry {
  std::vector<uint8_t> build_id;       // empty: negative entry
  Reason reason = Reason::kNoBuildId;  // why it is empty (kNoBuildId or kFileUnavailable)
};

class BuildIdCache {
 public:
  explicit BuildIdCache(size_t max_entries) : max_entries_(max_entries) {}

  // nullptr when absent; the pointer is valid until the next Insert/Clear.
  const BuildIdEntry* Find(const FileIdentity& id);
  void Insert(const FileIdentity& id, BuildIdEntry entry);
  void Clear();
  size_t size() const { return map_.size(); }

 private:
  struct Hash {
    size_t operator()(const FileIdentity& id) const {
      uint64_t h = id.inode * 0x9E3779B97F4A7C15ull;
      h ^= id.dev + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
      h ^= id.size + (h << 6) + (h >> 2);
      h ^= static_cast<uint64_t>(id.mtime_ns) + (h << 6) + (h >> 2);
      return static_cast<size_t>(h);
    }
  };
  using Lru = std::list<std::pair<FileIdentity, BuildIdEntry>>;

  size_t max_entries_;
  Lru lru_;  // most recently used first
  std::unordered_map<FileIdentity, Lru::iterator, Hash> map_;
};

}  // namespace stacksym::normalize
