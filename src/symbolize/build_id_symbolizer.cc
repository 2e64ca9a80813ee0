// Build-ID lookup in debug directories and file-offset symbolization by build ID.
#include <algorithm>
#include <utility>

#include "stacksym/build_id.h"
#include "stacksym/elf.h"

namespace stacksym {

std::vector<std::string> BuildIdPaths(const std::string& debug_dir,
                                      std::span<const uint8_t> build_id) {
  std::vector<std::string> out;
  if (build_id.size() < 2) return out;
  std::string hex = ToHex(build_id);
  std::string base = debug_dir;
  if (!base.empty() && base.back() == '/') base.pop_back();
  base += "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2);
  out.push_back(base);
  out.push_back(base + ".debug");
  return out;
}

Result<std::string> FindFileByBuildId(std::span<const uint8_t> build_id,
                                      const std::vector<std::string>& debug_dirs) {
  if (build_id.size() < 2) {
    return Error(ErrorCode::kInvalidArgument, "build ID must have at least 2 bytes");
  }
  std::string tried;
  for (const std::string& dir : debug_dirs) {
    for (const std::string& path : BuildIdPaths(dir, build_id)) {
      Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
      if (!elf) {
        if (elf.error().code != ErrorCode::kNotFound) {
          tried += "\n  " + path + ": " + elf.error().message;
        }
        continue;
      }
      std::span<const uint8_t> found = (*elf)->build_id();
      if (std::equal(found.begin(), found.end(), build_id.begin(), build_id.end())) return path;
      tried += "\n  " + path + ": has build ID " + (*elf)->build_id_hex();
    }
  }
  std::string dirs;
  for (const std::string& d : debug_dirs) dirs += (dirs.empty() ? "" : ", ") + d;
  return Error(ErrorCode::kNotFound, "no file with build ID " + ToHex(build_id) + " in " +
                                         (dirs.empty() ? std::string("(no debug dirs)") : dirs) +
                                         tried);
}

BuildIdSymbolizer::BuildIdSymbolizer(SymbolizeOptions options) : options_(std::move(options)) {}
BuildIdSymbolizer::~BuildIdSymbolizer() = default;

BuildIdSymbolizer::Entry& BuildIdSymbolizer::Lookup(std::span<const uint8_t> build_id) {
  std::vector<uint8_t> key(build_id.begin(), build_id.end());
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Entry entry;
  Result<std::string> path = FindFileByBuildId(build_id, options_.debug_dirs);
  if (path) {
    entry.path = *path;
    auto symbolizer = ElfSymbolizer::Open(*path, options_);
    if (symbolizer) {
      entry.symbolizer = std::move(*symbolizer);
    } else {
      entry.reason = Reason::kFileUnavailable;
    }
  } else {
    entry.reason =
        path.error().code == ErrorCode::kInvalidArgument ? Reason::kNoBuildId : Reason::kNotFound;
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
