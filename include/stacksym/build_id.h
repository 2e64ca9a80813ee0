// stacksym/build_id.h — symbolize (build ID, file offset) pairs: the remote half of
// normalize-then-symbolize.
//
// A profile recorded elsewhere names each user frame by the GNU build ID of its binary and a
// file offset. FindFileByBuildId looks the build ID up in debug directories laid out like
// /usr/lib/debug (<dir>/.build-id/xx/rest for the binary, <dir>/.build-id/xx/rest.debug for
// its separate debug file), checks the candidate really carries that build ID, and
// BuildIdSymbolizer symbolizes file offsets with it, caching one ElfSymbolizer per build ID.
//
//   SymbolizeOptions opts;
//   opts.debug_dirs = {"/srv/symbols", "/usr/lib/debug"};
//   BuildIdSymbolizer symbolizer(opts);
//   SymbolizedAddress a = symbolizer.Symbolize(build_id, 0x4a2f0);   // a file offset
//   if (a.reason == Reason::kNotFound) ...                          // no such file anywhere
//
// Thread-safety: one BuildIdSymbolizer is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/result.h"
#include "stacksym/symbolize.h"

namespace stacksym {

// BuildIdPaths(debug_dir, build_id), the candidate paths of a build ID in one debug directory,
// is declared in stacksym/elf.h (included above): the DWARF and index modules below this one
// build their .build-id paths with it too.

// The first candidate that is an ELF file whose GNU build ID equals `build_id`: binaries in
// every directory (in order) before any debug file, so a binary anywhere wins. Errors:
// kInvalidArgument for an empty or 1-byte build ID, kNotFound (listing what was tried) when nothing
// matches.
Result<std::string> FindFileByBuildId(std::span<const uint8_t> build_id,
                                      const std::vector<std::string>& debug_dirs);

// Like FindFileByBuildId, but only a file whose program headers still map file offsets to
// addresses: the binary itself. A separate debug file made by objcopy --only-keep-debug or
// eu-strip has zeroed p_offset/p_filesz, so a file offset cannot be placed in it; when only
// such a file exists the error (kNotFound) says so. The binary's own debug file is still
// used for DWARF, found by ElfSymbolizer through the same debug dirs.
Result<std::string> FindBinaryByBuildId(std::span<const uint8_t> build_id,
                                        const std::vector<std::string>& debug_dirs);
// The same, then, when no debug dir has it, the executable `fetcher` returns (build ID and
// file-backed code checked); the not-found error then also says why the fetch failed.
Result<std::string> FindBinaryByBuildId(std::span<const uint8_t> build_id,
                                        const std::vector<std::string>& debug_dirs,
                                        const BuildIdFetcher* fetcher);

// The file that holds the DWARF of the build ID, as debuginfod's /buildid/ID/debuginfo means
// it: each debug dir's .debug file before any binary, and a binary only when it carries DWARF
// itself (an unstripped build); then `fetcher`'s debuginfo (build ID checked). Errors as
// FindBinaryByBuildId's.
Result<std::string> FindDebugFileByBuildId(std::span<const uint8_t> build_id,
                                           const std::vector<std::string>& debug_dirs,
                                           const BuildIdFetcher* fetcher);

// The binary of a module known by its build ID (and, from a recording, the path it was mapped
// by and the file kept open then), in the one order every command uses:
//   1. `kept`, the file kept open from the recording (build ID checked);
//   2. `recorded_path`, when absolute (build ID checked: a rebuilt binary is never used);
//   3. each debug dir's .build-id tree, binaries in every dir before any .debug file
//      (FindBinaryByBuildId: a debug-only file cannot place file offsets);
//   4. options.fetcher (debuginfod's executable).
// Without a build ID only 1 and 2 apply, unchecked. Errors (kNotFound) list what was tried.
// The binary's DWARF and, when it is stripped, its symbols are then found by ElfSymbolizer.
Result<std::shared_ptr<ElfFile>> OpenModuleBinary(std::span<const uint8_t> build_id,
                                                  const std::string& recorded_path,
                                                  std::shared_ptr<ElfFile> kept,
                                                  const SymbolizeOptions& options);

// True when the executable PT_LOAD segments of `elf` carry their file bytes (so file
// offsets are meaningful), false for separate debug files.
bool HasFileBackedCode(const ElfFile& elf);

class BuildIdSymbolizer {
 public:
  explicit BuildIdSymbolizer(SymbolizeOptions options = {});
  ~BuildIdSymbolizer();

  // `file_offset` as produced by the Normalizer. Reason::kNotFound when no binary with the
  // build ID was found (FindBinaryByBuildId), kFileUnavailable when it cannot be parsed.
  SymbolizedAddress Symbolize(std::span<const uint8_t> build_id, uint64_t file_offset);

  // The file used for a build ID (after a Symbolize call that found one), or empty.
  std::string PathFor(std::span<const uint8_t> build_id) const;

 private:
  struct Entry {
    std::unique_ptr<ElfSymbolizer> symbolizer;  // null when not found / unusable
    Reason reason = Reason::kNotFound;
    std::string path;
  };
  Entry& Lookup(std::span<const uint8_t> build_id);

  SymbolizeOptions options_;
  std::map<std::vector<uint8_t>, Entry> cache_;
};

}  // namespace stacksym
