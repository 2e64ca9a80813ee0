#include "index/index_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/hex.h"
#include "index/atomic_file.h"
#include "index/checksum.h"
#include "index/index_builder.h"
#include "index/index_identity.h"
#include "index/name_memo.h"
#include "stacksym/mapped_file.h"
#include "stacksym/symbol_cache.h"

namespace stacksym::symindex {
namespace {

uint32_t HashText(const std::string& text, uint32_t seed = 0) {
  return Crc32c({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, seed);
}

void Warn(const std::string& message) {
  std::fprintf(stderr, "stacksym: warning: %s\n", message.c_str());
}

// mkdir -p, mode 0755 for what it creates.
Result<void> MakeDirs(const std::string& dir) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError(errno, "mkdir " + partial);
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return ErrnoError(errno, "stat " + dir);
  if (!S_ISDIR(st.st_mode)) return Error(ErrorCode::kInvalidArgument, dir + " is not a directory");
  return {};
}

// Hands a build's early sections to the file being written.
class FileSink : public IndexSink {
 public:
  explicit FileSink(AtomicFile& file) : file_(file) {}
  void WriteEarly(uint64_t offset, std::vector<std::span<const uint8_t>> pieces) override {
    file_.WriteInBackground(offset, std::move(pieces));
  }

 private:
  AtomicFile& file_;
};

}  // namespace

Result<void> StoreAtomically(const std::string& dir, const std::string& path,
                             std::span<const std::span<const uint8_t>> pieces) {
  return AtomicFile(dir, path).Commit(pieces);
}

// Can files be created in `dir`? Asked before an index is built, so that a read-only
// directory costs nothing.
Result<void> CheckWritable(const std::string& dir) {
  if (Result<void> r = MakeDirs(dir); !r) return r;
  if (::access(dir.c_str(), W_OK) != 0) return ErrnoError(errno, "cannot write to " + dir);
  return {};
}

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
    id = "noid-" + HexU32Padded(HashText(who)) + HexU32Padded(HashText(who, 0x5bd1e995));
  }
  // The format version is in the name: binaries of two versions sharing a cache directory
  // each keep their own index instead of rebuilding each other's.
  return id + "-" + HexU32Padded(HashText(key)) + "-v" + std::to_string(kVersion) + kIndexSuffix;
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
  if (path.ends_with(kIndexSuffix)) path.resize(path.size() - std::strlen(kIndexSuffix));
  return path + kNameMemoSuffix;
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
                                             std::unique_ptr<DebugInfoSource>* dwarf) {
  const std::string& dir = options.cache_dir;
  std::string path = dir + "/" + IndexFileName(*elf, options);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    bool stale = false;
    auto index = OpenValidIndex(path, *elf, options, &stale);
    if (index) {
      ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // last use, for LRU pruning
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
                                              std::unique_ptr<DebugInfoSource>* dwarf) {
  const std::string& dir = options.cache_dir;
  std::string path = dir + "/" + IndexFileName(*elf, options);
  if (Result<void> r = CheckWritable(dir); !r) {
    Warn("symbol cache unusable (" + r.error().ToString() + "); symbolizing without it");
    return nullptr;
  }
  // The records are written while the strings compress; the file is renamed into place
  // only once whole and synced.
  AtomicFile file(dir, path);
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

}  // namespace stacksym::symindex

namespace stacksym {

std::string DefaultSymbolCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/stacksym";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/stacksym";
  return {};
}

namespace {

struct DirFile {
  std::string path;
  uint64_t bytes;
  int64_t mtime_ns;
  bool temporary;
};

// The cache's files: symbol indexes, and with `all_kinds` the persisted unwind tables and the
// demangled-name memos too (pruning treats them all alike).
Result<std::vector<DirFile>> IndexFiles(const std::string& dir, bool all_kinds = false) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError(errno, "open directory " + dir);
  std::vector<DirFile> files;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    bool temporary = false;
    bool ours = false;
    for (const char* suffix :
         {symindex::kIndexSuffix, symindex::kUnwindTableSuffix, symindex::kNameMemoSuffix}) {
      if (!all_kinds && suffix != symindex::kIndexSuffix) continue;
      temporary = temporary || name.find(std::string(suffix) + ".tmp.") != name.npos;
      ours = ours || name.ends_with(suffix);
    }
    if (!temporary && !ours) continue;
    std::string path = dir + "/" + std::string(name);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    files.push_back({path, static_cast<uint64_t>(st.st_size),
                     int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec, temporary});
  }
  ::closedir(d);
  std::sort(files.begin(), files.end(),
            [](const DirFile& a, const DirFile& b) { return a.path < b.path; });
  return files;
}

SymbolCacheEntry Describe(const std::string& path, uint64_t bytes, int64_t mtime_ns) {
  SymbolCacheEntry entry;
  entry.path = path;
  entry.bytes = bytes;
  entry.used_ns = mtime_ns;
  // Every chunk is checked here: `cache list` says which indexes are damaged anywhere.
  symindex::SymbolIndex::OpenOptions open;
  open.verify_all = true;
  auto index = symindex::SymbolIndex::Open(path, open);
  if (!index) {
    entry.problem = index.error().ToString();
    return entry;
  }
  entry.build_id = ToHex((*index)->build_id());
  entry.binary = symindex::IdentityValue((*index)->identity(), "binary");
  entry.debug_file = symindex::IdentityValue((*index)->identity(), "debug");
  for (const auto& [name, size] : (*index)->section_sizes()) {
    entry.sections.emplace_back(std::string(name), size);
  }
  return entry;
}

}  // namespace

Result<std::vector<SymbolCacheEntry>> ListSymbolCache(const std::string& dir) {
  auto files = IndexFiles(dir);
  if (!files) return std::move(files).error();
  std::vector<SymbolCacheEntry> out;
  for (const DirFile& f : *files) {
    if (!f.temporary) out.push_back(Describe(f.path, f.bytes, f.mtime_ns));
  }
  return out;
}

Result<std::vector<SymbolCacheEntry>> ListNameMemoCache(const std::string& dir) {
  auto files = IndexFiles(dir, /*all_kinds=*/true);  // sorted by path
  if (!files) return std::move(files).error();
  std::vector<SymbolCacheEntry> out;
  for (const DirFile& f : *files) {
    if (f.temporary || !f.path.ends_with(symindex::kNameMemoSuffix)) continue;
    const std::string& path = f.path;
    SymbolCacheEntry& entry = out.emplace_back();
    entry.kind = "names";
    entry.path = path;
    entry.bytes = f.bytes;
    entry.used_ns = f.mtime_ns;
    const std::string index_path =
        path.substr(0, path.size() - std::strlen(symindex::kNameMemoSuffix)) +
        symindex::kIndexSuffix;
    auto index = symindex::SymbolIndex::Open(index_path);
    if (!index) {
      entry.problem = "no valid index beside it (" + index.error().ToString() + ")";
      continue;
    }
    entry.build_id = ToHex((*index)->build_id());
    entry.binary = symindex::IdentityValue((*index)->identity(), "binary");
    auto file = MappedFile::Open(path);
    if (!file) {
      entry.problem = file.error().ToString();
      continue;
    }
    auto view = symindex::ParseNameMemo(file->bytes(), (*index)->name_memo_binding());
    if (!view) {
      entry.problem = view.error().ToString();
      continue;
    }
    entry.sections = {{"header", sizeof(symindex::NameMemoHeader)},
                      {"entries", view->entries.size_bytes()},
                      {"text", view->text.size()}};
  }
  return out;
}

Result<SymbolCacheEntry> symindex::BuildSymbolIndex(const std::string& path,
                                                    const symindex::IndexOptions& options) {
  if (options.cache_dir.empty()) return Error(ErrorCode::kInvalidArgument, "no cache directory");
  auto elf = ElfFile::Open(path);
  if (!elf) return std::move(elf).error();
  if (Result<void> r = symindex::CheckWritable(options.cache_dir); !r) return std::move(r).error();
  auto index = symindex::OpenCachedIndex(*elf, options);
  if (!index) return Error(ErrorCode::kIo, "could not build the index of " + path);
  std::string file = options.cache_dir + "/" + symindex::IndexFileName(**elf, options);
  struct stat st;
  if (::stat(file.c_str(), &st) != 0) return ErrnoError(errno, "stat " + file);
  return Describe(file, static_cast<uint64_t>(st.st_size),
                  int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec);
}

Result<PruneResult> PruneSymbolCache(const std::string& dir, uint64_t max_bytes) {
  auto files = IndexFiles(dir, /*all_kinds=*/true);
  if (!files) return std::move(files).error();
  PruneResult result;
  int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  constexpr int64_t kHourNs = int64_t{3600} * 1000000000;
  std::vector<DirFile> indexes;
  for (const DirFile& f : *files) {
    if (!f.temporary) {
      indexes.push_back(f);
    } else if (now_ns - f.mtime_ns > kHourNs && ::unlink(f.path.c_str()) == 0) {
      ++result.removed_files;  // left by a builder that died
      result.removed_bytes += f.bytes;
    }
  }
  std::sort(indexes.begin(), indexes.end(),
            [](const DirFile& a, const DirFile& b) { return a.mtime_ns < b.mtime_ns; });
  uint64_t total = 0;
  for (const DirFile& f : indexes) total += f.bytes;
  for (const DirFile& f : indexes) {
    if (total <= max_bytes) break;
    // ENOENT: another process pruned it first, which is as good.
    if (::unlink(f.path.c_str()) == 0 || errno == ENOENT) {
      ++result.removed_files;
      result.removed_bytes += f.bytes;
      total -= f.bytes;
    }
  }
  result.kept_bytes = total;
  return result;
}

}  // namespace stacksym
