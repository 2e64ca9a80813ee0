// The symbol indexes of the cache directory (cache/cache_dir.h) behind ElfSymbolizer: finds the
// valid index of a binary in IndexOptions::cache_dir, or builds and stores it. Never fails: when
// the directory cannot be used (read-only, full) the caller symbolizes without an index, after one
// warning on stderr; an index that is corrupt, of another version or stale is reported once and
// rebuilt.
//
//   std::unique_ptr<SymbolIndex> index = OpenCachedIndex(elf, options);   // null: no index
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "index/index_options.h"
#include "index/symbol_index.h"
#include "stacksym/elf.h"
#include "stacksym/symbol_cache.h"

namespace stacksym::dwarf {
class DebugInfoSource;
}

namespace stacksym::index {

// "<build ID hex>-<debug dirs hash>.symidx" (or "noid-<file identity hash>-..." without one):
// the debug dirs (options.search.debug_dirs) decide which DWARF is found. Where finding it also
// depends on the binary's location (debuglink), the index records that location and is rebuilt
// elsewhere.
std::string IndexFileName(const ElfFile& elf, const IndexOptions& options);

// The demangled-name memo of the index at `index_path` (NameMemo): next to it, its suffix
// cache::kNameMemoSuffix.
std::string NameMemoPath(const std::string& index_path);
// index.SaveNameMemo(at_least), a failure said once per process on stderr.
void SaveNameMemo(const SymbolIndex& index, size_t at_least);

// `dwarf` (nullable): when the index is built, the DWARF source it was built from (see
// IndexBuilder::Build).
std::unique_ptr<SymbolIndex> OpenCachedIndex(
    const std::shared_ptr<ElfFile>& elf, const IndexOptions& options,
    std::unique_ptr<dwarf::DebugInfoSource>* dwarf = nullptr);

// Builds the index of `elf` and stores it in options.cache_dir (replacing any there); null,
// after a warning, when the directory cannot be used.
std::unique_ptr<SymbolIndex> BuildCachedIndex(
    const std::shared_ptr<ElfFile>& elf, const IndexOptions& options,
    std::unique_ptr<dwarf::DebugInfoSource>* dwarf = nullptr);

// `damaged` (the cached index of `elf`) failed a checksum in a lookup: says so once on stderr
// and builds it again.
std::unique_ptr<SymbolIndex> RebuildDamagedIndex(const std::shared_ptr<ElfFile>& elf,
                                                 const IndexOptions& options,
                                                 const SymbolIndex& damaged);

// Makes sure options.cache_dir holds a valid index of the ELF file at `path` (building it if
// needed) and describes it (stacksym::BuildSymbolIndex with the index's own options).
Result<SymbolCacheEntry> BuildSymbolIndex(const std::string& path, const IndexOptions& options);

// The index at `path` if it is intact and was built from `elf` and unchanged files.
// *stale (when given) is set when the index is intact but was built from other files or for
// the binary elsewhere: a normal event (a debug package was upgraded), rebuilt silently.
Result<std::unique_ptr<SymbolIndex>> OpenValidIndex(const std::string& path, const ElfFile& elf,
                                                    const IndexOptions& options,
                                                    bool* stale = nullptr);

}  // namespace stacksym::index
