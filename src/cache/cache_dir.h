// The cache directory (SymbolizeOptions::cache_dir, `--cache-dir`): one file per binary and
// kind, each written whole (AtomicFile) and checked when read back (Crc32c), the lot bounded in
// bytes by pruning the least recently used (PruneSymbolCache, stacksym/symbol_cache.h). The
// symbol index (index/) and the unwind tables (unwind/) keep their files here; what a file
// holds is theirs, where and how it is stored is this module's.
//
//   if (CheckWritable(dir)) StoreAtomically(dir, dir + "/" + name, bytes);
//   MarkUsed(path);                                   // after reading it back, for pruning
//   auto files = ListFiles(dir, {kUnwindTableSuffix});
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::cache {

// The kinds of files in the directory (pruning weighs them all alike).
inline constexpr const char* kIndexSuffix = ".symidx";        // symbol indexes (index/)
inline constexpr const char* kNameMemoSuffix = ".symnames";   // their demangled-name memos
inline constexpr const char* kUnwindTableSuffix = ".unwtab";  // unwind tables (unwind/)

// Can files be created in `dir` (created, mode 0755, if missing)? Asked before a file is built,
// so that a read-only directory costs nothing.
Result<void> CheckWritable(const std::string& dir);

// Writes `pieces` one after the other to `path` in `dir` so that no reader ever sees a partial
// file: a private temporary file `path.tmp.<pid>.<random>`, fsync, rename over the old one,
// fsync of `dir` (AtomicFile).
Result<void> StoreAtomically(const std::string& dir, const std::string& path,
                             std::span<const std::span<const uint8_t>> pieces);
inline Result<void> StoreAtomically(const std::string& dir, const std::string& path,
                                    std::span<const uint8_t> bytes) {
  return StoreAtomically(dir, path, std::span<const std::span<const uint8_t>>(&bytes, 1));
}

// Marks the file at `path` used now (its mtime): pruning removes the least recently used.
void MarkUsed(const std::string& path);

struct DirFile {
  std::string path;
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
  bool temporary = false;  // an AtomicFile's temporary (being written, or left by a crash)
};
// The regular files of `dir` with one of `suffixes`, and the temporaries of such files, sorted
// by path.
Result<std::vector<DirFile>> ListFiles(const std::string& dir,
                                       std::initializer_list<const char*> suffixes);

// The name part of a binary without a build ID, from the text that identifies it (device,
// inode, size, mtime): "noid-" and two CRC32Cs of `identity` in hex, 16 digits.
std::string NoBuildIdName(std::string_view identity);

}  // namespace stacksym::cache
