#include "index/index_cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/hex.h"
#include "cache/atomic_file.h"
#include "cache/cache_dir.h"
#include "cache/checksum.h"
#include "index/index_builder.h"
#include "index/index_identity.h"
#include "index/name_memo.h"
#include "stacksym/mapped_file.h"
#include "stacksym/symbol_cache.h"

namespace stacksym::index {
namespace {

uint32_t HashText(const std::string& text) {
  return cache::Crc32c({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

void Warn(const std::string& message) {
  std::fprintf(stderr, "stacksym: warning: %s\n", message.c_str());
}

// Hands a build's early sections to the file being written.
class FileSink : public IndexSink {
 public:
  explicit FileSink(cache::AtomicFile& file) : file_(file) {}
  void WriteEarly(uint64_t offset, std::vector<std::span<const uint8_t>> pieces) override {
    file_.WriteInBackground(offset, std::move(pieces));
  }

 private:
  cache::AtomicFile& file_;
};

}  // namespace

std::string IndexFileName(const ElfFile& elf, const IndexOptions& options) {
  std::string key;
  for (const std::string& d : options.search.debug_dirs) key += d + '\0';
  std::string id = elf.build_id_hex();
  if (id.empty()) {
    const FileIdentity& f = elf.identity();
    // By file identity, not path: the same file reached through /proc/PID/map_files of
    // different processes is one index.
    std::string who = std::to_string(f.dev) + ' ' + std::to_string(f.inode) + ' ' +
                      std::to_string(f.size) + ' ' + std::to_string(f.mtime_ns);
    id = cache::NoBuildIdName(who);
  }
  // The format version is in the name: binaries of two versions sharing a cache directory
  // each keep their own index instead of rebuilding each other's.
  return id + "-" + HexU32Padded(HashText(key)) + "-v" + std::to_string(kVersion) +
         cache::kIndexSuffix;
}

Result<std::unique_ptr<SymbolIndex>> OpenValidIndex(const std::string& path, const ElfFile& elf,
                                                    const IndexOptions& options, bool* stale) {
  if (stale != nullptr) *stale = false;
  auto index = SymbolIndex::Open(path);
  if (!index) return std::move(index).error();
  std::span<const uint8_t> want = elf.build_id();
  std::span<const uint8_t> have = (*index)->build_id();
  if (!std::equal(want.begin(), want.end(), have.begin(), have.end())) {
    return Error(ErrorCode::kInvalidArgument, "index is of another build ID").WithFile(path);
  }
  if (Result<void> r = CheckSources((*index)->identity(), elf, options.search); !r) {
    if (stale != nullptr) *stale = true;
    return std::move(r).error().WithFile(path);
  }
  return index;
}

std::string NameMemoPath(const std::string& index_path) {
  std::string path = index_path;
  if (path.ends_with(cache::kIndexSuffix)) {
    path.resize(path.size() - std::strlen(cache::kIndexSuffix));
  }
  return path + cache::kNameMemoSuffix;
}

namespace {

// The memo of names demangled from `index` (NameMemo), next to it: a damaged one is said once
// and replaced at the next save; one of another index (it was rebuilt) silently.
void AttachNameMemo(SymbolIndex& index, const std::string& index_path) {
  bool stale = false;
  if (Result<void> r = index.AttachNameMemo(NameMemoPath(index_path), &stale); !r && !stale) {
    Warn(r.error().ToString() + "; replacing it");
  }
}

}  // namespace

void SaveNameMemo(const SymbolIndex& index, size_t at_least) {
  if (Result<void> r = index.SaveNameMemo(at_least); !r) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) Warn("cannot save demangled names (" + r.error().ToString() + ")");
  }
}

std::unique_ptr<SymbolIndex> OpenCachedIndex(const std::shared_ptr<ElfFile>& elf,
                                             const IndexOptions& options,
                                             std::unique_ptr<dwarf::DebugInfoSource>* dwarf) {
  const std::string& dir = options.cache_dir;
  std::string path = dir + "/" + IndexFileName(*elf, options);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    bool stale = false;
    auto index = OpenValidIndex(path, *elf, options, &stale);
    if (index) {
      cache::MarkUsed(path);
      AttachNameMemo(**index, path);
      return std::move(*index);
    }
    // Corrupt, truncated, of another version or another build ID: said once. Stale: silent.
    if (!stale) Warn(index.error().ToString() + "; rebuilding it");
  }
  return BuildCachedIndex(elf, options, dwarf);
}

std::unique_ptr<SymbolIndex> RebuildDamagedIndex(const std::shared_ptr<ElfFile>& elf,
                                                 const IndexOptions& options,
                                                 const SymbolIndex& damaged) {
  std::string path = options.cache_dir + "/" + IndexFileName(*elf, options);
  Warn(path + ": " + damaged.damage() + "; rebuilding it");
  return BuildCachedIndex(elf, options);
}

std::unique_ptr<SymbolIndex> BuildCachedIndex(const std::shared_ptr<ElfFile>& elf,
                                              const IndexOptions& options,
                                              std::unique_ptr<dwarf::DebugInfoSource>* dwarf) {
  const std::string& dir = options.cache_dir;
  std::string path = dir + "/" + IndexFileName(*elf, options);
  if (Result<void> r = cache::CheckWritable(dir); !r) {
    Warn("symbol cache unusable (" + r.error().ToString() + "); symbolizing without it");
    return nullptr;
  }
  // The records are written while the strings compress; the file is renamed into place
  // only once whole and synced.
  cache::AtomicFile file(dir, path);
  FileSink sink(file);
  auto image = IndexBuilder::Build(elf, options, dwarf, &sink);
  if (!image) {
    Warn("cannot index " + elf->path() + " (" + image.error().ToString() +
         "); symbolizing without it");
    return nullptr;
  }
  if (Result<void> r = file.Commit(image->pieces(), image->early_begin(), image->early_end()); !r) {
    Warn("symbol cache unusable (" + r.error().ToString() + "); symbolizing without it");
    return nullptr;
  }
  (void)PruneSymbolCache(dir, options.cache_max_bytes);
  // Read back what was stored (another builder may have replaced it by an equal one).
  auto index = OpenValidIndex(path, *elf, options);
  if (!index) {
    Warn(index.error().ToString() + "; symbolizing without the index");
    return nullptr;
  }
  AttachNameMemo(**index, path);
  return std::move(*index);
}

}  // namespace stacksym::index

namespace stacksym {
namespace {

SymbolCacheEntry Describe(const std::string& path, uint64_t bytes, int64_t mtime_ns) {
  SymbolCacheEntry entry;
  entry.path = path;
  entry.bytes = bytes;
  entry.used_ns = mtime_ns;
  // Every chunk is checked here: `cache list` says which indexes are damaged anywhere.
  index::SymbolIndex::OpenOptions open;
  open.verify_all = true;
  auto index = index::SymbolIndex::Open(path, open);
  if (!index) {
    entry.problem = index.error().ToString();
    return entry;
  }
  entry.build_id = ToHex((*index)->build_id());
  entry.binary = index::IdentityValue((*index)->identity(), "binary");
  entry.debug_file = index::IdentityValue((*index)->identity(), "debug");
  for (const auto& [name, size] : (*index)->section_sizes()) {
    entry.sections.emplace_back(std::string(name), size);
  }
  return entry;
}

}  // namespace

Result<std::vector<SymbolCacheEntry>> ListSymbolCache(const std::string& dir) {
  auto files = cache::ListFiles(dir, {cache::kIndexSuffix});
  if (!files) return std::move(files).error();
  std::vector<SymbolCacheEntry> out;
  for (const cache::DirFile& f : *files) {
    if (!f.temporary) out.push_back(Describe(f.path, f.bytes, f.mtime_ns));
  }
  return out;
}

Result<std::vector<SymbolCacheEntry>> ListNameMemoCache(const std::string& dir) {
  auto files = cache::ListFiles(dir, {cache::kNameMemoSuffix});  // sorted by path
  if (!files) return std::move(files).error();
  std::vector<SymbolCacheEntry> out;
  for (const cache::DirFile& f : *files) {
    if (f.temporary) continue;
    const std::string& path = f.path;
    SymbolCacheEntry& entry = out.emplace_back();
    entry.kind = "names";
    entry.path = path;
    entry.bytes = f.bytes;
    entry.used_ns = f.mtime_ns;
    const std::string index_path =
        path.substr(0, path.size() - std::strlen(cache::kNameMemoSuffix)) + cache::kIndexSuffix;
    auto index = index::SymbolIndex::Open(index_path);
    if (!index) {
      entry.problem = "no valid index beside it (" + index.error().ToString() + ")";
      continue;
    }
    entry.build_id = ToHex((*index)->build_id());
    entry.binary = index::IdentityValue((*index)->identity(), "binary");
    auto file = MappedFile::Open(path);
    if (!file) {
      entry.problem = file.error().ToString();
      continue;
    }
    auto view = index::ParseNameMemo(file->bytes(), (*index)->name_memo_binding());
    if (!view) {
      entry.problem = view.error().ToString();
      continue;
    }
    entry.sections = {{"header", sizeof(index::NameMemoHeader)},
                      {"entries", view->entries.size_bytes()},
                      {"text", view->text.size()}};
  }
  return out;
}

Result<SymbolCacheEntry> index::BuildSymbolIndex(const std::string& path,
                                                 const index::IndexOptions& options) {
  if (options.cache_dir.empty()) return Error(ErrorCode::kInvalidArgument, "no cache directory");
  auto elf = ElfFile::Open(path);
  if (!elf) return std::move(elf).error();
  if (Result<void> r = cache::CheckWritable(options.cache_dir); !r) {
    return std::move(r).error();
  }
  auto index = index::OpenCachedIndex(*elf, options);
  if (!index) return Error(ErrorCode::kIo, "could not build the index of " + path);
  std::string file = options.cache_dir + "/" + index::IndexFileName(**elf, options);
  struct stat st;
  if (::stat(file.c_str(), &st) != 0) return ErrnoError(errno, "stat " + file);
  return Describe(file, static_cast<uint64_t>(st.st_size),
                  int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec);
}

}  // namespace stacksym
