// NameMemo — the demangled forms of the linkage names an index's lookups have needed, kept in
// a file next to the index (docs/index-format.md, "The demangled-name memo").
//
// An index stores linkage names only: demangling every name of a big C++ binary was a third
// of an index build's work. A lookup demangles the names it prints, each once per process
// (in memory here), and the memo file keeps them, so that later runs asking for the same
// functions (a profiler's hot code, again and again) read them instead of demangling again.
// It is a cache of what can always be worked out again: a memo that is missing, damaged or
// bound to another index (its checksum and size) is read as empty and replaced.
//
//   NameMemo memo(path, binding);          // binding: the index's header checksum and size
//   memo.Load();                           // an unusable file: empty (why: the result)
//   if (!memo.Find(key, &text)) { text = Demangle(raw); memo.Add(key, text); }
//   memo.Save();                           // loaded names plus those added since, if any
//
// Keys are the linkage names' string refs in the index ((offset << 32) | size): one per
// distinct name.
// Thread-safety: Find and Add from any number of threads at once; Load and Save from one
// thread, with no Find or Add running.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::index {

inline constexpr uint32_t kNameMemoVersion = 1;
// The memo stops growing at this much name text (libceph-common's 66 000 names would take
// about 40 MB): a batch's names beyond it are demangled in memory only.
inline constexpr uint64_t kNameMemoMaxText = 16u << 20;

struct NameMemoBinding {
  uint32_t index_crc = 0;   // FileHeader::header_crc of the index
  uint64_t index_size = 0;  // its file size
};

// The file: a 48-byte header, `count` entries sorted by key (each key once), then the text.
struct NameMemoHeader {
  char magic[8];  // "STKSYMDN"
  uint32_t version;
  uint32_t count;
  uint64_t index_size;
  uint32_t index_crc;
  uint32_t body_crc;  // CRC32C of the entries and the text
  uint64_t text_size;
  uint32_t header_crc;  // CRC32C of this header with this field 0
  uint32_t reserved;
};
static_assert(sizeof(NameMemoHeader) == 48);

struct NameMemoEntry {
  uint64_t key;
  uint32_t offset;  // into the text
  uint32_t size;
};
static_assert(sizeof(NameMemoEntry) == 16);

// A memo file's entries and text, checked whole: header, sizes, checksums, keys strictly
// ascending, every text range inside the text. `stale` (when given) is set when the bytes are
// an intact memo of another index. `bytes` must be 8-byte aligned. `verify_checksums` false:
// fuzzing reaches the other checks with any bytes.
struct NameMemoView {
  std::span<const NameMemoEntry> entries;
  std::string_view text;
};
Result<NameMemoView> ParseNameMemo(std::span<const uint8_t> bytes, const NameMemoBinding& binding,
                                   bool* stale = nullptr, bool verify_checksums = true);
// The file ParseNameMemo reads back: `entries` sorted by key, each key once, offsets into
// `text`.
std::vector<uint8_t> EncodeNameMemo(std::span<const NameMemoEntry> entries, std::string_view text,
                                    const NameMemoBinding& binding);

class NameMemo {
 public:
  // `path` empty: in memory only (Save does nothing).
  NameMemo(std::string path, const NameMemoBinding& binding);
  ~NameMemo();
  NameMemo(const NameMemo&) = delete;
  NameMemo& operator=(const NameMemo&) = delete;

  // Reads the file: an error (it is then empty) when it is there but unusable, `*stale` set
  // when it is intact but of another index (a normal event: the index was rebuilt).
  Result<void> Load(bool* stale = nullptr);
  bool Find(uint64_t key, std::string* out) const;
  void Add(uint64_t key, std::string_view text);
  // Names added since the last Save: how many.
  size_t added() const;
  // Whether Save would be worth its cost now: at least `at_least` names were added, and they
  // are many against those the file holds (a sixteenth), since Save rewrites the whole file.
  bool WorthSaving(size_t at_least = 1) const;
  // Writes the loaded and the added names (up to kNameMemoMaxText of text) when names were
  // added since the last Save: written whole to a temporary and renamed over the file (not
  // synced: a crash's leftovers fail the checksums). Names over the bound stay in memory.
  Result<void> Save();

 private:
  std::string path_;
  NameMemoBinding binding_;
  void Unmap();
  void* mapping_ = nullptr;  // the file Load read (mapped whole: it is checked whole)
  size_t mapping_size_ = 0;
  NameMemoView loaded_;     // in the mapping
  size_t saved_count_ = 0;  // entries of the file as last loaded or saved
  // Names added since loading, spread over shards with a lock each (lookups on every core
  // add and find them at once).
  static constexpr size_t kShards = 16;
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<uint64_t, std::string> names;
  };
  Shard& ShardOf(uint64_t key) const { return shards_[(key * 0x9e3779b97f4a7c15ULL) >> 60]; }
  mutable Shard shards_[kShards];
  std::atomic<size_t> unsaved_{0};  // names added since the last Save
};

}  // namespace stacksym::index
