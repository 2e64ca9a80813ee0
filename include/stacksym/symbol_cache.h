// stacksym/symbol_cache.h — the directory of persisted symbol indexes (one file per build ID)
// and of persisted unwind tables (one per build ID, see UnwindTableCacheOptions::dir).
//
// With SymbolizeOptions::cache_dir set, an ElfSymbolizer answers from the binary's index in
// that directory, building it on first use (the whole binary, on all cores) and keeping it
// for the next run; answers are the same as without it, byte for byte. These calls look at
// and manage the directory (`stacksym cache list|build|prune`).
//
//   SymbolizeOptions o;  o.cache_dir = DefaultSymbolCacheDir();
//   auto entry = BuildSymbolIndex("/usr/lib/x86_64-linux-gnu/libc.so.6", o);
//   auto pruned = PruneSymbolCache(o.cache_dir, 256 << 20);   // least recently used go first
//
// Indexes are written to a temporary file, synced and renamed into place, so concurrent
// builders and readers never see a partial file; an index that is corrupt, of another format
// version or built from other files is rebuilt (see docs/index-format.md). Unwind tables are
// kept the same way (docs/unwind-table-format.md).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stacksym/result.h"

namespace stacksym {

struct SymbolizeOptions;  // stacksym/symbolize.h (this header is also the index module's)

// $XDG_CACHE_HOME/stacksym, else $HOME/.cache/stacksym; empty when neither variable is set.
std::string DefaultSymbolCacheDir();

struct SymbolCacheEntry {
  // "index" (.symidx), "unwind" (.unwtab, see unwind.h) or "names" (.symnames: the names an
  // index's lookups demangled, kept for later runs)
  std::string kind = "index";
  std::string path;  // the file
  uint64_t bytes = 0;
  int64_t used_ns = 0;   // last use (the file's mtime)
  std::string build_id;  // hex; empty for a binary without one
  std::string binary;    // the path it was built from
  std::string debug_file;
  std::string problem;  // empty: the index reads back intact
  // Where the bytes go: each section's name and size (header and section table first).
  std::vector<std::pair<std::string, uint64_t>> sections;
};

// The symbol indexes (kind "index"); ListUnwindTableCache (below) gives the unwind tables.
Result<std::vector<SymbolCacheEntry>> ListSymbolCache(const std::string& dir);

// The demangled-name memos (kind "names"), each checked against the index beside it (build_id
// and binary are that index's; problem set when the memo is damaged or belongs to no index
// there); sections: header, entries, text.
Result<std::vector<SymbolCacheEntry>> ListNameMemoCache(const std::string& dir);

// Makes sure options.cache_dir holds a valid index of the ELF file at `path` (building it if
// needed) and describes it. Implemented in src/symbolize/ (with the options the index
// module takes: index::BuildSymbolIndex).
Result<SymbolCacheEntry> BuildSymbolIndex(const std::string& path, const SymbolizeOptions& options);

struct PruneResult {
  size_t removed_files = 0;
  uint64_t removed_bytes = 0;
  uint64_t kept_bytes = 0;
};
// Removes the least recently used files (indexes and persisted unwind tables alike) until the
// rest fit in `max_bytes`, and leftover temporary files older than an hour.
Result<PruneResult> PruneSymbolCache(const std::string& dir, uint64_t max_bytes);

// The persisted unwind tables of `dir` (kind "unwind"; build_id, binary and problem set,
// debug_file empty), each read back and checked. Implemented in src/unwind/.
Result<std::vector<SymbolCacheEntry>> ListUnwindTableCache(const std::string& dir);

// Makes sure `dir` holds a valid unwind table file of the ELF file at `path` (the table
// `record` uses: the binary's own .eh_frame and .debug_frame), building it if needed, then
// prunes to `max_bytes`; describes it.
Result<SymbolCacheEntry> BuildUnwindTableFile(const std::string& path, const std::string& dir,
                                              uint64_t max_bytes = uint64_t{1} << 30);

}  // namespace stacksym
