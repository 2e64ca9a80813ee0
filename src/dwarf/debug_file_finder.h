// DebugFileFinder — locates the files that hold a binary's DWARF when the binary does not:
// separate debug files (build-id directories, .gnu_debuglink), dwz supplementary files
// (.gnu_debugaltlink or DWARF 5 .debug_sup), split-DWARF objects (.dwo) and packages (.dwp).
//
//   DebugFileFinder finder({kDefaultDebugDir});
//   Result<std::shared_ptr<ElfFile>> debug = finder.FindSeparateDebugFile(*binary);
//   if (!debug) return debug.error();          // I/O or corruption worth reporting
//   if (*debug == nullptr) { /* no separate debug file: symbol table only */ }
//
// Every candidate is verified before it is returned: build ID for build-id lookups, CRC32 for
// debuglink, the recorded build ID / checksum for supplementary files. Missing candidates are
// skipped silently; a candidate that exists but is unreadable or not ELF becomes the returned
// Error only when no other candidate matches. Pass a FinderTrace to learn what was tried and
// why each candidate was rejected (for diagnostics and tests).
//
// Thread-safety: all methods are const and keep no state; call them from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dwarf/dwarf_options.h"
#include "stacksym/build_id_fetcher.h"
#include "stacksym/debug_dirs.h"
#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym::dwarf {

// One candidate path the finder looked at, and what became of it.
struct FinderCandidate {
  enum class Outcome : uint8_t {
    kAccepted,
    kMissing,       // no such file
    kUnreadable,    // exists but cannot be opened or parsed as ELF
    kWrongBuildId,  // build ID (or .debug_sup checksum) differs from the expected one
    kWrongCrc,      // .gnu_debuglink CRC32 differs
    kSameFile,      // the candidate is the file we started from
  };
  std::string path;
  Outcome outcome = Outcome::kMissing;
  std::string detail;  // the error text for kUnreadable
};

struct FinderTrace {
  std::vector<FinderCandidate> candidates;
};

const char* FinderOutcomeName(FinderCandidate::Outcome outcome);  // "wrong_crc"

class DebugFileFinder {
 public:
  // known_path / known_root: where the binary lives when it is opened through another path
  // (see dwarf::DebugFileSearch).
  // fetcher: asked by build ID when no local candidate matched (see build_id_fetcher.h).
  explicit DebugFileFinder(std::vector<std::string> debug_dirs = {kDefaultDebugDir},
                           std::string known_path = {}, std::string known_root = {},
                           std::shared_ptr<const BuildIdFetcher> fetcher = nullptr);

  // Every place and way `search` names (its dwp_path too).
  explicit DebugFileFinder(const dwarf::DebugFileSearch& search)
      : DebugFileFinder(search.debug_dirs, search.known_path, search.known_root, search.fetcher) {
    set_dwp_path(search.dwp_path);
    set_dwo_beside_binary(search.dwo_beside_binary);
  }

  // The package FindDwp gives for every file instead of "<file path>.dwp" (see
  // DebugFileSearch::dwp_path); empty: the usual names.
  void set_dwp_path(std::string path) { dwp_path_ = std::move(path); }
  // Whether FindDwo also looks for a .dwo in the binary's directory (see
  // DebugFileSearch::dwo_beside_binary).
  void set_dwo_beside_binary(bool on) { dwo_beside_binary_ = on; }

  // Separate debug file for a binary without (enough) DWARF, in this order:
  //   <dir>/.build-id/xx/rest.debug for each debug dir (build ID must match);
  //   .gnu_debuglink name next to the binary, in its .debug/ folder, and under
  //   <dir>/<binary's absolute dir>/ for each debug dir (CRC32 must match); then the fetcher
  //   (build ID must match). The binary's
  //   directories are those of the path it was opened by (as given and with symlinks
  //   resolved) and, when known, of the path it is known by (under its root).
  // nullptr when nothing found; Error only for I/O/corruption worth reporting.
  Result<std::shared_ptr<ElfFile>> FindSeparateDebugFile(const ElfFile& binary,
                                                         FinderTrace* trace = nullptr) const;

  // dwz supplementary file named by .gnu_debugaltlink (or a DWARF 5 .debug_sup section) of
  // `debug_file`: the name as is when absolute, else relative to the debug file's directory
  // (as opened and after resolving symlinks), then by build ID in <dir>/.build-id/xx/rest.debug.
  // The recorded build ID must match the candidate's build ID (or, for .debug_sup, the
  // candidate's own .debug_sup checksum). nullptr when the file names none or none matches.
  Result<std::shared_ptr<ElfFile>> FindSupplementaryFile(const ElfFile& debug_file,
                                                         FinderTrace* trace = nullptr) const;

  // Split DWARF: the .dwo for a skeleton unit: dwo_name as is when absolute, else relative to
  // comp_dir; then (unless set_dwo_beside_binary(false)) the name's last component in the
  // binary's directory (build trees that were moved). The caller checks the DWO id.
  Result<std::shared_ptr<ElfFile>> FindDwo(const ElfFile& binary, std::string_view comp_dir,
                                           std::string_view dwo_name,
                                           FinderTrace* trace = nullptr) const;

  // "<file path>.dwp" (and the same for the path with symlinks resolved), or the dwp_path
  // when one is set; nullptr when absent. Call it with the binary, then with the separate
  // debug file if there is one.
  Result<std::shared_ptr<ElfFile>> FindDwp(const ElfFile& file, FinderTrace* trace = nullptr) const;

  const std::vector<std::string>& debug_dirs() const { return debug_dirs_; }

 private:
  std::vector<std::string> debug_dirs_;
  std::string known_path_;
  std::string known_root_;
  std::shared_ptr<const BuildIdFetcher> fetcher_;
  std::string dwp_path_;
  bool dwo_beside_binary_ = true;
};

// The supplementary-file reference of a DWARF 5 .debug_sup section (is_supplementary == 0).
struct DebugSup {
  bool is_supplementary = false;
  std::string filename;
  std::vector<uint8_t> checksum;
};
// Parses .debug_sup; Error when truncated or of an unknown version.
Result<DebugSup> ParseDebugSup(std::span<const uint8_t> section);

}  // namespace stacksym::dwarf
