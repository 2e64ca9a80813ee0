#include "cache/cache_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>

#include "base/hex.h"
#include "cache/atomic_file.h"
#include "cache/checksum.h"
#include "stacksym/symbol_cache.h"

namespace stacksym::cache {
namespace {

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

uint32_t HashText(std::string_view text, uint32_t seed) {
  return Crc32c({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, seed);
}

}  // namespace

Result<void> CheckWritable(const std::string& dir) {
  if (Result<void> r = MakeDirs(dir); !r) return r;
  if (::access(dir.c_str(), W_OK) != 0) return ErrnoError(errno, "cannot write to " + dir);
  return {};
}

Result<void> StoreAtomically(const std::string& dir, const std::string& path,
                             std::span<const std::span<const uint8_t>> pieces) {
  return AtomicFile(dir, path).Commit(pieces);
}

void MarkUsed(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

Result<std::vector<DirFile>> ListFiles(const std::string& dir,
                                       std::initializer_list<const char*> suffixes) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError(errno, "open directory " + dir);
  std::vector<DirFile> files;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    bool temporary = false;
    bool ours = false;
    for (const char* suffix : suffixes) {
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

std::string NoBuildIdName(std::string_view identity) {
  // Two sums with different seeds: 64 bits, so that binaries without a build ID do not share
  // a file by chance.
  return "noid-" + HexU32Padded(HashText(identity, 0)) +
         HexU32Padded(HashText(identity, 0x5bd1e995));
}

}  // namespace stacksym::cache

namespace stacksym {

std::string DefaultSymbolCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/stacksym";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/stacksym";
  return {};
}

Result<PruneResult> PruneSymbolCache(const std::string& dir, uint64_t max_bytes) {
  auto files = cache::ListFiles(
      dir, {cache::kIndexSuffix, cache::kNameMemoSuffix, cache::kUnwindTableSuffix});
  if (!files) return std::move(files).error();
  PruneResult result;
  int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  constexpr int64_t kHourNs = int64_t{3600} * 1000000000;
  std::vector<cache::DirFile> kept;
  for (const cache::DirFile& f : *files) {
    if (!f.temporary) {
      kept.push_back(f);
    } else if (now_ns - f.mtime_ns > kHourNs && ::unlink(f.path.c_str()) == 0) {
      ++result.removed_files;  // left by a writer that died
      result.removed_bytes += f.bytes;
    }
  }
  std::sort(kept.begin(), kept.end(), [](const cache::DirFile& a, const cache::DirFile& b) {
    return a.mtime_ns < b.mtime_ns;
  });
  uint64_t total = 0;
  for (const cache::DirFile& f : kept) total += f.bytes;
  for (const cache::DirFile& f : kept) {
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
