// Build-ID lookup in debug directories and file-offset symbolization by build ID.
#include <elf.h>

#include <algorithm>
#include <utility>

#include "stacksym/build_id.h"
#include "stacksym/elf.h"

namespace stacksym {

namespace {

std::string JoinDirs(const std::vector<std::string>& dirs) {
  std::string out;
  for (const std::string& d : dirs) out += (out.empty() ? "" : ", ") + d;
  return out.empty() ? std::string("(no debug dirs)") : out;
}

// What a build-ID lookup accepts, and in which order it tries each directory's two
// candidates (BuildIdPaths: [0] the binary, [1] its .debug file).
enum class Want : uint8_t {
  kAnyFile,    // binaries in every dir, then debug files
  kBinary,     // the same, but only files whose code has file bytes
  kDebugInfo,  // debug files in every dir, then binaries; only files with DWARF in them
};

bool HasDwarfSections(const ElfFile& elf) {
  for (const ElfSection& s : elf.sections()) {
    bool dwarf = s.name.starts_with(".debug_") || s.name.starts_with(".zdebug_");
    if (dwarf && s.type != SHT_NOBITS && s.size > 0) return true;
  }
  return false;
}

// Why `elf`, found at `path` in `dir`, is not what `want` asks for; empty when it is.
std::string Rejection(const ElfFile& elf, const std::string& path, const std::string& dir,
                      std::span<const uint8_t> build_id, Want want) {
  if (want == Want::kBinary && !HasFileBackedCode(elf)) {
    return path +
           ": only a separate debug file (its program headers hold no file offsets, so file "
           "offsets cannot be placed; install the binary as " +
           BuildIdPaths(dir, build_id)[0] + ")";
  }
  if (want == Want::kDebugInfo && !HasDwarfSections(elf)) return path + ": holds no DWARF";
  return {};
}

// Searches each directory's candidates, in the order `want` gives, for a matching build ID;
// `tried` says why near-misses were rejected.
Result<std::string> Search(std::span<const uint8_t> build_id,
                           const std::vector<std::string>& debug_dirs, Want want) {
  if (build_id.size() < 2) {
    return Error(ErrorCode::kInvalidArgument, "build ID must have at least 2 bytes");
  }
  std::string tried;
  for (int pass = 0; pass < 2; ++pass) {
    int candidate = want == Want::kDebugInfo ? 1 - pass : pass;
    for (const std::string& dir : debug_dirs) {
      std::string path = BuildIdPaths(dir, build_id)[candidate];
      Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
      if (!elf) {
        if (elf.error().code != ErrorCode::kNotFound) {
          tried += "\n  " + path + ": " + elf.error().message;
        }
        continue;
      }
      std::span<const uint8_t> found = (*elf)->build_id();
      if (!std::equal(found.begin(), found.end(), build_id.begin(), build_id.end())) {
        tried += "\n  " + path + ": has build ID " + (*elf)->build_id_hex();
        continue;
      }
      if (std::string why = Rejection(**elf, path, dir, build_id, want); !why.empty()) {
        tried += "\n  " + why;
        continue;
      }
      return path;
    }
  }
  const char* what = want == Want::kBinary      ? "binary"
                     : want == Want::kDebugInfo ? "debug file"
                                                : "file";
  return Error(ErrorCode::kNotFound, std::string("no ") + what + " with build ID " +
                                         ToHex(build_id) + " in " + JoinDirs(debug_dirs) + tried);
}

}  // namespace

bool HasFileBackedCode(const ElfFile& elf) {
  bool any = false;
  for (const ElfSegment& s : elf.segments()) {
    if (s.type != PT_LOAD || (s.flags & PF_X) == 0 || s.memsz == 0) continue;
    if (s.filesz == 0) return false;
    any = true;
  }
  return any;
}

Result<std::string> FindFileByBuildId(std::span<const uint8_t> build_id,
                                      const std::vector<std::string>& debug_dirs) {
  return Search(build_id, debug_dirs, Want::kAnyFile);
}

Result<std::string> FindBinaryByBuildId(std::span<const uint8_t> build_id,
                                        const std::vector<std::string>& debug_dirs) {
  return Search(build_id, debug_dirs, Want::kBinary);
}

namespace {

bool SameBuildId(const ElfFile& elf, std::span<const uint8_t> build_id) {
  std::span<const uint8_t> found = elf.build_id();
  return std::equal(found.begin(), found.end(), build_id.begin(), build_id.end());
}

// Search(), then, when no debug dir has the file, what `fetcher` gives (its build ID
// checked, and for a binary its file-backed code; a fetched debug file is taken as the
// server's word).
Result<std::string> SearchThenFetch(std::span<const uint8_t> build_id,
                                    const std::vector<std::string>& debug_dirs,
                                    const BuildIdFetcher* fetcher, Want want) {
  Result<std::string> local = Search(build_id, debug_dirs, want);
  if (local || fetcher == nullptr || local.error().code != ErrorCode::kNotFound) return local;
  Result<std::string> fetched =
      fetcher->Fetch(build_id, want == Want::kDebugInfo ? BuildIdFetcher::Kind::kDebugInfo
                                                        : BuildIdFetcher::Kind::kExecutable);
  std::string why;
  if (fetched) {
    Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(*fetched);
    if (!elf) {
      why = elf.error().ToString();
    } else if (!SameBuildId(**elf, build_id)) {
      why = *fetched + ": has build ID " + (*elf)->build_id_hex();
    } else if (want == Want::kBinary && !HasFileBackedCode(**elf)) {
      why = *fetched + ": holds no file-backed code";
    } else {
      return fetched;
    }
  } else {
    why = fetched.error().ToString();
  }
  return Error(ErrorCode::kNotFound, local.error().message + "\n  fetch: " + why);
}

}  // namespace

Result<std::string> FindBinaryByBuildId(std::span<const uint8_t> build_id,
                                        const std::vector<std::string>& debug_dirs,
                                        const BuildIdFetcher* fetcher) {
  return SearchThenFetch(build_id, debug_dirs, fetcher, Want::kBinary);
}

Result<std::string> FindDebugFileByBuildId(std::span<const uint8_t> build_id,
                                           const std::vector<std::string>& debug_dirs,
                                           const BuildIdFetcher* fetcher) {
  return SearchThenFetch(build_id, debug_dirs, fetcher, Want::kDebugInfo);
}

Result<std::shared_ptr<ElfFile>> OpenModuleBinary(std::span<const uint8_t> build_id,
                                                  const std::string& recorded_path,
                                                  std::shared_ptr<ElfFile> kept,
                                                  const SymbolizeOptions& options) {
  if (kept && (build_id.empty() || SameBuildId(*kept, build_id))) return kept;
  std::string tried;
  if (!recorded_path.empty() && recorded_path.front() == '/') {
    Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(recorded_path);
    if (elf && (build_id.empty() || SameBuildId(**elf, build_id))) return *elf;
    tried = "\n  " + recorded_path + ": " +
            (elf ? "has build ID " + (*elf)->build_id_hex() : elf.error().message);
  }
  if (build_id.empty()) {
    return Error(ErrorCode::kNotFound,
                 (recorded_path.empty() ? std::string("a module") : recorded_path) +
                     " without a build ID: no file to check it against" + tried);
  }
  Result<std::string> path =
      FindBinaryByBuildId(build_id, options.debug_dirs, options.fetcher.get());
  if (!path) {
    return Error(path.error().code, path.error().message + tried);
  }
  return ElfFile::Open(*path);
}

BuildIdSymbolizer::BuildIdSymbolizer(SymbolizeOptions options) : options_(std::move(options)) {}
BuildIdSymbolizer::~BuildIdSymbolizer() = default;

BuildIdSymbolizer::Entry& BuildIdSymbolizer::Lookup(std::span<const uint8_t> build_id) {
  std::vector<uint8_t> key(build_id.begin(), build_id.end());
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Entry entry;
  if (build_id.size() < 2) {
    entry.reason = Reason::kNoBuildId;
    return cache_.emplace(std::move(key), std::move(entry)).first->second;
  }
  Result<std::shared_ptr<ElfFile>> binary = OpenModuleBinary(build_id, "", nullptr, options_);
  if (binary) {
    entry.path = (*binary)->path();
    auto symbolizer = ElfSymbolizer::FromElf(*binary, options_);
    if (symbolizer) {
      entry.symbolizer = std::move(*symbolizer);
    } else {
      entry.reason = Reason::kFileUnavailable;
    }
  } else {
    entry.reason =
        binary.error().code == ErrorCode::kNotFound ? Reason::kNotFound : Reason::kFileUnavailable;
  }
  return cache_.emplace(std::move(key), std::move(entry)).first->second;
}

SymbolizedAddress BuildIdSymbolizer::Symbolize(std::span<const uint8_t> build_id,
                                               uint64_t file_offset) {
  Entry& entry = Lookup(build_id);
  if (!entry.symbolizer) {
    SymbolizedAddress out;
    out.input = file_offset;
    out.reason = entry.reason;
    out.module = entry.path;
    return out;
  }
  return entry.symbolizer->Symbolize(file_offset, AddressKind::kFileOffset);
}

std::string BuildIdSymbolizer::PathFor(std::span<const uint8_t> build_id) const {
  auto it = cache_.find(std::vector<uint8_t>(build_id.begin(), build_id.end()));
  return it == cache_.end() ? std::string() : it->second.path;
}

}  // namespace stacksym
