// DebugInfoSource — DWARF behind the ELF symbolizer: vaddr → inline chain with file:line:column.
//
// Open() finds the DWARF of a binary (the binary itself, or a separate debug file found by
// build ID / .gnu_debuglink, plus a dwz supplementary file and split-DWARF .dwo/.dwp files) and
// builds only a small address → unit map (from .debug_aranges, and from the unit DIEs of units
// aranges does not name). Each unit is parsed the first time an address needs it, once, into
// compact sorted tables (inline tree + line rows); lookups are then binary searches.
//
//   auto source = DebugInfoSource::Open(elf, options);   // nullptr: no DWARF at all
//   std::vector<SourceFrame> frames;
//   if (*source && (*source)->Lookup(vaddr, &frames)) ... // innermost first
//
// Thread-safety: one thread at a time (lookups fill caches); Prefetch() and LookupBatch()
// themselves fan out over the cores.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/demangle_cache.h"
#include "dwarf/address_range.h"
#include "dwarf/aranges.h"
#include "dwarf/dwarf_file.h"
#include "dwarf/dwarf_options.h"
#include "dwarf/function_table.h"
#include "dwarf/line_table.h"
#include "dwarf/variable_table.h"
#include "stacksym/elf.h"
#include "stacksym/frame.h"
#include "stacksym/result.h"

namespace stacksym {

class DebugFileFinder;

// Resets every field of `frame` to its default but keeps its strings' storage, so that frames
// reused answer after answer do not allocate (the direct path and the index's reader both).
inline void ClearKeepingStorage(SourceFrame& frame) {
  frame.function.clear();
  frame.raw_function.clear();
  frame.file.clear();
  frame.line = 0;
  frame.column = 0;
  frame.inlined = false;
  frame.discriminator = 0;
  frame.start_file.clear();
  frame.start_line = 0;
  frame.has_start_address = false;
  frame.start_address = 0;
}

// The DWARF sections of `elf`, decompressed, as a DebugInfoSource over it reads them (an error
// when one does not decompress): for tools and tests that drive dwarf::DwarfFile directly.
Result<dwarf::DwarfSections> LoadDwarfSections(const ElfFile& elf);

class DebugInfoSource {
 public:
  struct OpenTuning {
    // A compressed .debug_info of at least this many (compressed) bytes is decompressed on a
    // background thread: Open() returns at once, and a batch parses each unit it needs as
    // soon as that unit's bytes are final. Tests lower it to take that path on small files.
    uint64_t stream_info_from = uint64_t{4} << 20;
  };
  // Returns nullptr (not an error) when no DWARF exists at all.
  static Result<std::unique_ptr<DebugInfoSource>> Open(std::shared_ptr<ElfFile> binary,
                                                       const dwarf::DwarfOptions& options,
                                                       const OpenTuning& tuning);
  static Result<std::unique_ptr<DebugInfoSource>> Open(std::shared_ptr<ElfFile> binary,
                                                       const dwarf::DwarfOptions& options) {
    return Open(std::move(binary), options, OpenTuning{});
  }
  // DWARF from raw section bytes (tests, fuzzing); the bytes must outlive the source.
  static Result<std::unique_ptr<DebugInfoSource>> FromSections(const dwarf::DwarfSections& sections,
                                                               const dwarf::DwarfOptions& options);
  ~DebugInfoSource();

  // Inline chain for vaddr, innermost first, last = out-of-line function. false when DWARF
  // covers no function and no line for vaddr. A frame whose function DWARF does not name
  // (line-table-only units) has an empty function.
  bool Lookup(uint64_t vaddr, std::vector<SourceFrame>* frames);

  // Builds, on `threads` threads (0: one per CPU), the tables of every unit the addresses
  // need, so that the following Lookup() calls find them ready. Optional: Lookup() builds
  // what is missing by itself. For batches (a profile's unique frames) this spreads the
  // per-unit parsing over the cores.
  void Prefetch(std::span<const uint64_t> vaddrs, unsigned threads = 0);

  // Lookup() of every address, on `threads` threads (0: one per CPU): each unit's tables are
  // built for just the addresses that fall in it, and those addresses are answered by the
  // thread that built them. frames_of(i) is where the chain of vaddrs[i] goes (called once
  // per address, from any thread); an address DWARF cannot answer gets an empty chain.
  void LookupBatch(std::span<const uint64_t> vaddrs,
                   const std::function<std::vector<SourceFrame>*(size_t)>& frames_of,
                   unsigned threads = 0);

  // The declaration of the variable stored at `vaddr` (see VariableTable for which count);
  // false when none covers it or its DW_AT_decl_line is 0 or absent. The variable table of
  // the whole file is built on the first call.
  bool LookupVariable(uint64_t vaddr, DataDeclaration* out);

  // The locals of the innermost subroutine covering `vaddr` (see ReadFrameLocals); nothing
  // when DWARF has no function there.
  void LookupLocals(uint64_t vaddr, std::vector<FrameLocal>* out);

  const std::string& path() const { return path_; }

  // For persisting the whole binary (src/index). The tables of unit `index` (of
  // unit_count()), built in full, with every node's name and every file's path resolved;
  // the views stay valid as long as the source. Units that are not split may be exported
  // from several threads at once, split ones (IsSplitUnit) from one thread at a time.
  struct UnitTables {
    bool ok = false;  // false: the unit could not be read (it answers nothing)
    std::span<const dwarf::AddressSegment> segments;  // address → node
    std::span<const dwarf::FunctionNode> nodes;
    std::vector<std::string_view> raw_names, pretty_names;  // per node (pretty: demangled)
    // Per node: HashBytes of its pretty and raw names where already known (else 0): names
    // that the demangle cache hashed once for every unit that shares them.
    struct NameHashes {
      uint64_t pretty = 0, raw = 0;
    };
    std::vector<NameHashes> name_hashes;
    // Per node: SourceFrame's start_file and start_line, and (inlined nodes) the call site's
    // discriminator. (Not start_address: persisted indexes are not used with it.)
    struct NodeStart {
      std::string_view file;    // a path of `paths` below, or empty
      uint32_t file_index = 0;  // of `file` in `paths` (when not empty)
      uint32_t line = 0;
      uint32_t call_discriminator = 0;
    };
    std::vector<NodeStart> starts;
    const dwarf::LineTable* line = nullptr;  // may be shared by units
    std::vector<std::string_view> paths;     // per file index of the line table; empty: unknown
  };
  bool IsSplitUnit(size_t index);
  // The unit's bytes in .debug_info (0 past the last): a guess at its cost to export.
  uint64_t UnitSize(size_t index);
  UnitTables ExportUnit(size_t index);
  // Frees the function table of unit `index` (its UnitTables' segments and nodes go with it):
  // an index build calls it once the unit is encoded, so that the memory serves the units
  // exported after it instead of new pages (the table is rebuilt if a lookup needs it).
  void ReleaseUnitFunctions(size_t index);
  // Once an index build has exported every unit: gives back the memory of the decompressed
  // sections only the export read (.debug_info, .debug_line, range and location lists,
  // abbreviations, aranges: most of a big binary's DWARF), while the build still points
  // into .debug_str, the exported names and paths. Only when this source is their one
  // reader (a separate debug file it opened itself): otherwise nothing happens (false).
  // Afterwards the source is retired(): it must answer nothing more, and a caller that needs
  // DWARF again opens a new source (which decompresses them anew).
  bool ReleaseExportedSections();
  bool retired() const { return retired_; }
  // While a streamed .debug_info is still being decompressed: builds the full function table
  // of every unit as soon as its bytes are final, on `threads` threads (0: one per CPU), and
  // returns once the section is complete; ExportUnit then finds them built. Without a
  // stream (already loaded), nothing to do.
  void PrebuildEveryUnit(unsigned threads = 0);
  std::span<const dwarf::AddressSegment> unit_map() const { return unit_map_; }  // address → unit
  // Every file DWARF was read from besides the binary: separate debug file, supplementary
  // file, .dwo files, .dwp package.
  std::vector<std::shared_ptr<ElfFile>> files_read() const;

  // Diagnostics for tests and benchmarks.
  size_t unit_count();  // waits for a .debug_info still being decompressed
  size_t parsed_unit_count() const { return parsed_units_.load(); }
  // Units whose tables a batch built while .debug_info was still being decompressed.
  size_t prebuilt_unit_count() const { return prebuilt_units_; }
  size_t memory_bytes() const;  // heap held by tables and caches (not the section bytes)
  // Heap held by the files opened for the binary (separate debug file, supplementary file,
  // .dwo files): their decompressed sections and symbol tables.
  size_t file_heap_bytes() const;
  // Errors met while parsing units (each unit's first), for tests and --verbose output.
  const std::vector<Error>& unit_errors();
  // Split-DWARF package (.dwp) bookkeeping: the package is searched for once, on the first
  // split unit ("<binary>.dwp", then "<separate debug file>.dwp"), and opened and indexed
  // once; a miss or a broken package is remembered like a success.
  size_t dwp_search_count() const { return dwp_searches_; }  // 0 or 1
  size_t dwp_open_count() const { return dwp_opens_; }       // package files opened
  const std::string& dwp_path() const;                       // empty: no package in use

 private:
  struct UnitState;
  struct DwpPackage;
  DebugInfoSource() = default;
  Result<void> Init(const dwarf::DwarfSections& sections);
  Result<void> BuildUnitMap();
  // .debug_aranges, parsed on first use (a streamed batch needs it before the unit map does).
  const std::vector<dwarf::ArangeEntry>& Aranges();
  // Builds the unit's tables once; `wanted` (sorted) lets the function table skip the
  // subprograms that hold none of those addresses.
  UnitState* EnsureUnit(size_t index, std::span<const uint64_t> wanted = {});
  std::unique_ptr<UnitState> BuildUnit(dwarf::UnitInfo& unit, std::span<const uint64_t> wanted);
  void FinishPrebuilt(UnitState& state, dwarf::UnitInfo& unit);
  // A .debug_info still being decompressed: waits for it, then scans its units (once). On
  // failure the source answers nothing (the symbol table takes over) and records why.
  void EnsureLoaded();
  // While .debug_info streams in: builds, on `threads` threads, the tables of the units
  // .debug_aranges assigns the addresses to, each as soon as its bytes are final; then waits
  // for the rest and hands the tables to the scanned units.
  // every_unit: full tables of every unit, whatever the addresses (PrebuildEveryUnit).
  void PrebuildWhileStreaming(std::span<const uint64_t> vaddrs, unsigned threads,
                              bool every_unit = false);
  // Replaces a partial function table by the full one; false when there is nothing to gain.
  bool CompleteUnit(UnitState& state);
  static bool IsSplit(const dwarf::UnitInfo& unit);
  // Groups the addresses by unit and calls work(state, addresses, positions) once per unit,
  // on `threads` threads (split units on the calling thread); state is null for broken units.
  template <typename Work>
  void ForEachUnitOf(std::span<const uint64_t> vaddrs, unsigned threads, const Work& work);
  bool LookupInUnit(UnitState& state, uint64_t vaddr, std::vector<SourceFrame>* frames);
  Result<void> OpenSplitUnit(dwarf::UnitInfo& skeleton, UnitState* state);
  const DwpPackage* Package();
  Result<std::unique_ptr<DwpPackage>> OpenPackage(std::shared_ptr<ElfFile> elf);
  // A function node's name, resolved on first use. `pretty` points into the demangle cache
  // (or is `raw`, for a name that is not mangled), so a warm lookup copies the name without
  // hashing it.
  struct ResolvedName {
    std::string_view raw;
    std::string_view pretty;  // empty: not demangling
    // HashBytes of pretty and raw, when the demangle cache worked them out (else 0).
    uint64_t pretty_hash = 0, raw_hash = 0;
    bool done = false;
    // Where the function starts (SourceFrame::start_*), read with the name.
    bool has_start_file = false;  // start_file indexes the unit's line table
    bool has_low_pc = false;
    uint32_t start_file = 0;
    uint32_t start_line = 0;
    uint32_t call_discriminator = 0;  // inlined nodes: the call site's
    uint64_t low_pc = 0;
  };
  const ResolvedName& NodeName(UnitState& state, int32_t node);
  const std::string& FilePath(UnitState& state, uint32_t file);
  const dwarf::LineTable* LineTableAt(uint64_t offset, uint8_t address_size);
  // The line table at `offset` of `file`'s .debug_line; null (the error recorded) if bad.
  std::unique_ptr<dwarf::LineTable> ParseLineTable(const dwarf::DwarfFile& file, uint64_t offset,
                                                   uint8_t address_size, uint64_t str_offsets_base);
  // The line table whose file names a unit's DW_AT_decl_file values index, in any file read
  // (main, split object, supplementary file); null when none.
  const dwarf::LineTable* DeclLineTable(dwarf::DwarfFile& file, const dwarf::UnitInfo& unit);
  void AddUnitError(Error error);
  void LoadLocationLists();  // .debug_loc/.debug_loclists into main_, once

  dwarf::DwarfOptions options_;
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
  std::unique_ptr<dwarf::DwarfFile> main_;
  std::shared_ptr<const SectionStream> info_stream_;  // .debug_info still arriving
  std::shared_ptr<const SectionStream> str_stream_;   // .debug_str still arriving
  bool loaded_ = true;                                // units scanned, unit map built
  size_t prebuilt_units_ = 0;
  std::unique_ptr<dwarf::DwarfFile> supplementary_;
  std::vector<std::unique_ptr<dwarf::DwarfFile>> split_dwarf_;
  // Each split object's skeleton unit (of main_).
  std::unordered_map<const dwarf::DwarfFile*, const dwarf::UnitInfo*> skeleton_of_;

  std::optional<std::vector<dwarf::ArangeEntry>> aranges_;  // until the unit map is built
  std::vector<dwarf::AddressSegment> unit_map_;             // address → index into main_->units()
  dwarf::AddressIndex unit_index_;                          // over unit_map_
  std::vector<std::unique_ptr<UnitState>> units_;
  std::unique_ptr<dwarf::VariableTable> variables_;  // built on the first LookupVariable()
  bool locations_loaded_ = false;  // location-list sections handed to main_ (DATA, FRAME)
  std::unordered_map<uint64_t, std::unique_ptr<dwarf::LineTable>> line_tables_;
  // Of split objects and the supplementary file, by (file, offset): declarations only.
  std::map<std::pair<const dwarf::DwarfFile*, uint64_t>, std::unique_ptr<dwarf::LineTable>>
      other_line_tables_;
  DemangleCache demangled_;
  std::vector<Error> unit_errors_;
  std::atomic<size_t> parsed_units_{0};
  std::mutex mu_;  // line_tables_ and unit_errors_ (Prefetch parses units concurrently)
};

}  // namespace stacksym
