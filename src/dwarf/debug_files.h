// DebugFiles — the files a binary's DWARF is read from, found and opened: the DWARF file itself
// (the binary, or the separate debug file DebugFileFinder finds by build ID or
// .gnu_debuglink), its dwz supplementary file, and the split-DWARF objects of skeleton units
// (from the .dwp package, else their .dwo files), each opened once and kept for as long as
// this object.
//
//   auto files = dwarf::DebugFiles::Open(binary, search, stream_from);   // nullptr: no DWARF
//   dwarf::DwarfFile* dwarf = (*files)->main();
//
// A big compressed .debug_info (and .debug_str) is decompressed on a background thread: until
// FinishStreams(), main()'s .debug_info is a whole-size buffer whose bytes become final front
// to back (info_stream()).
//
// Thread-safety: one thread at a time; main() and the sections it points into may be read
// from several (units are parsed concurrently), split units are opened from one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "dwarf/dwarf_file.h"
#include "dwarf/dwarf_options.h"
#include "elf/section_stream.h"
#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym {

// The DWARF sections of `elf`, decompressed, as DebugFiles reads them (an error when one does
// not decompress): for tools and tests that drive dwarf::DwarfFile directly.
Result<dwarf::DwarfSections> LoadDwarfSections(const ElfFile& elf);

}  // namespace stacksym

namespace stacksym::dwarf {

class DebugFileFinder;

class DebugFiles {
 public:
  // Returns nullptr (not an error) when `binary` has no DWARF and no debug file has it. A
  // compressed .debug_info of at least `stream_info_from` bytes is decompressed in the
  // background (see DebugInfoSource::OpenTuning).
  static Result<std::unique_ptr<DebugFiles>> Open(std::shared_ptr<ElfFile> binary,
                                                  const DebugFileSearch& search,
                                                  uint64_t stream_info_from);
  // DWARF from raw section bytes (tests, fuzzing), which must outlive it; no files to search.
  static std::unique_ptr<DebugFiles> FromSections(const DwarfSections& sections);
  ~DebugFiles();

  // The DWARF file's units and sections; null once DropMain() was called.
  DwarfFile* main() const { return main_.get(); }
  // Path of the file DWARF is read from (the binary or its debug file; "<memory>").
  const std::string& path() const { return path_; }
  // The separate debug file DWARF is read from; the binary itself when it holds its DWARF.
  const std::shared_ptr<ElfFile>& debug_file() const { return debug_file_; }

  // .debug_info and .debug_str while they are still being decompressed (else null).
  const elf::SectionStream* info_stream() const { return info_stream_.get(); }
  const elf::SectionStream* str_stream() const { return str_stream_.get(); }
  // Waits for both to be whole (the streams are then gone); the error of one that failed.
  Result<void> FinishStreams();
  // The DWARF file is unusable (its units could not be scanned): main() is null from now on.
  void DropMain() { main_.reset(); }

  // A skeleton unit's split unit: in the .dwp package when it holds the unit's DWO id, else in
  // the .dwo file; its address base, low_pc and (DWARF 4) range lists are the skeleton's.
  struct SplitObject {
    std::unique_ptr<DwarfFile> dwarf;  // a .dwo, or the unit's slices of the package
    UnitInfo* unit = nullptr;          // the split unit, in `dwarf`
    std::shared_ptr<ElfFile> elf;      // the file it was read from
  };
  // Errors that did not stop the search (a package that is broken) are appended to `notes`.
  Result<SplitObject> OpenSplitUnit(const UnitInfo& skeleton, std::vector<Error>* notes);
  // Keeps `object` for as long as this object (its unit is in use); returns its file.
  DwarfFile* Keep(SplitObject object, const UnitInfo& skeleton);
  // The skeleton unit (of main()) of a kept split object; null for other files.
  const UnitInfo* SkeletonOf(const DwarfFile* split) const;

  // Hands .debug_loc and .debug_loclists of the DWARF file to main() (DATA and FRAME answers
  // read them), once.
  void LoadLocationLists();
  // Once an index build has exported every unit: gives back the decompressed sections only
  // the export read (see DebugInfoSource), when this object is their one reader (a separate
  // debug file it opened itself); false otherwise. Then retired(): nothing may be asked more.
  bool ReleaseExportedSections();
  bool retired() const { return retired_; }
  // Whether this object is the one reader of its DWARF file's decompressed sections (a
  // separate debug file it opened itself), which may then be given back.
  bool OwnsSections() const;
  // Parts of the sections were given back (UnitCache, as a streamed batch answered its
  // units): nothing may be asked more.
  void Retire() { retired_ = true; }
  // Once retired, and once what was built from it is written (an index build's names point
  // into .debug_str until then): gives back the string sections too (false when this object
  // is not their one reader).
  bool ReleaseStrings();

  // Every file read besides the binary: separate debug file, supplementary file, .dwo files,
  // .dwp package.
  std::vector<std::shared_ptr<ElfFile>> files_read() const;
  // Heap held by those files (decompressed sections, symbol tables); not the package's.
  size_t file_heap_bytes() const;
  // Heap held by the parsed DWARF files (main, supplementary, split objects).
  size_t memory_bytes() const;

  // Split-DWARF package (.dwp) bookkeeping: the package is searched for once, on the first
  // split unit ("<binary>.dwp", then "<separate debug file>.dwp"), and opened and indexed
  // once; a miss or a broken package is remembered like a success.
  size_t dwp_search_count() const { return dwp_searches_; }  // 0 or 1
  size_t dwp_open_count() const { return dwp_opens_; }       // package files opened
  const std::string& dwp_path() const;                       // empty: no package in use

 private:
  struct DwpPackage;
  DebugFiles();
  const DwpPackage* Package(std::vector<Error>* notes);
  Result<std::unique_ptr<DwpPackage>> OpenPackage(std::shared_ptr<ElfFile> elf);

  std::string path_;
  std::shared_ptr<ElfFile> binary_;
  std::shared_ptr<ElfFile> debug_file_;
  bool retired_ = false;  // ReleaseExportedSections() gave its sections back
  std::shared_ptr<ElfFile> supplementary_file_;
  std::vector<std::shared_ptr<ElfFile>> split_files_;  // .dwo files kept alive
  std::unique_ptr<DwpPackage> dwp_;                    // null: none found, or unusable
  bool dwp_searched_ = false;
  size_t dwp_searches_ = 0;
  size_t dwp_opens_ = 0;
  std::unique_ptr<DebugFileFinder> finder_;
  std::unique_ptr<DwarfFile> main_;
  std::shared_ptr<const elf::SectionStream> info_stream_;  // .debug_info still arriving
  std::shared_ptr<const elf::SectionStream> str_stream_;   // .debug_str still arriving
  std::unique_ptr<DwarfFile> supplementary_;
  std::vector<std::unique_ptr<DwarfFile>> split_dwarf_;
  // Each split object's skeleton unit (of main_).
  std::unordered_map<const DwarfFile*, const UnitInfo*> skeleton_of_;
  bool locations_loaded_ = false;  // location-list sections handed to main_ (DATA, FRAME)
};

}  // namespace stacksym::dwarf
