// UnitCache — the units of a binary's DWARF (DebugFiles::main()), each parsed the first time
// an address needs it, once, into compact sorted tables: its function table (the inline tree;
// for a batch, only the subprograms that hold the batch's addresses, completed later if
// another address needs more), its line table, and the names and paths these resolve to,
// each on first use. An address finds its unit through a small address → unit map (from
// .debug_aranges, and from the unit DIEs of units aranges does not name).
//
// Where the tables are built:
//   unit_cache.cc   the map, one unit's tables, names and paths, line tables;
//   unit_stream.cc  while a big compressed .debug_info is still being decompressed;
//   unit_export.cc  every unit in full, for an index build (ExportUnit and what it frees).
//
// Thread-safety: one thread at a time, except that ForEachUnitOf and PrebuildEveryUnit fan
// out over the cores themselves, and ExportUnit may be called from several threads for units
// that are not split (IsSplitUnit), split ones from one thread at a time.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
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
#include "base/flat_table.h"
#include "base/parallel.h"
#include "dwarf/address_index.h"
#include "dwarf/address_range.h"
#include "dwarf/aranges.h"
#include "dwarf/debug_files.h"
#include "dwarf/dwarf_file.h"
#include "dwarf/dwarf_options.h"
#include "dwarf/function_table.h"
#include "dwarf/line_table.h"
#include "stacksym/result.h"

namespace stacksym::dwarf {

// A function node's name, resolved on first use. `pretty` points into the demangle cache (or
// is `raw`, for a name that is not mangled), so a warm lookup copies the name without hashing
// it.
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

// One unit's tables, built on first use.
struct UnitState {
  bool ok = false;
  bool prebuilt = false;   // functions built while streaming; strings (and lines) still to read
  bool line_read = false;  // prebuilt with its line table
  bool completion_failed = false;      // a full rebuild of a partial table failed: keep it
  DwarfFile* function_file = nullptr;  // the file the function DIEs are in (main, dwo, dwp)
  UnitInfo* function_unit = nullptr;   // the unit they are in (the split unit for skeletons)
  FunctionTable functions;             // partial when built for a batch's addresses
  const LineTable* line = nullptr;
  std::string_view comp_dir;
  // Lazily resolved per node / per file index.
  std::vector<ResolvedName> names;
  struct OriginSlot {
    uint64_t hash = 0;
    uint64_t origin = 0;
    int32_t node = 0;
    bool empty() const { return hash == 0; }
  };
  FlatTable<OriginSlot> names_by_origin;  // abstract origin → first node
  std::vector<std::string> paths;
  std::vector<uint8_t> path_state;  // 0 unknown, 1 resolved, 2 no such file
  // Exported names whose bytes lay in .debug_info itself (DW_FORM_string), copied so that
  // they outlive the section (ReleaseExportedSections).
  std::deque<std::string> exported_names;
};

// For persisting the whole binary (src/index): the tables of one unit, built in full, with
// every node's name and every file's path resolved; the views stay valid as long as the cache.
struct UnitTables {
  bool ok = false;  // false: the unit could not be read (it answers nothing)
  std::span<const AddressSegment> segments;  // address → node
  std::span<const FunctionNode> nodes;
  std::vector<std::string_view> raw_names, pretty_names;  // per node (pretty: demangled)
  // Per node: HashBytes of its pretty and raw names where already known (else 0): names that
  // the demangle cache hashed once for every unit that shares them.
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
  const LineTable* line = nullptr;      // may be shared by units
  std::vector<std::string_view> paths;  // per file index of the line table; empty: unknown
};

class UnitCache {
 public:
  // What a batch does with a unit's addresses: work(state, addresses, positions), state null
  // for an unusable unit (ForEachUnitOf).
  using UnitWork =
      std::function<void(UnitState*, std::span<const uint64_t>, std::span<const uint32_t>)>;

  // Reads the units of `files` (which must outlive the cache), named and demangled as
  // `options` say. With .debug_info still streaming in, nothing is read until it is needed.
  UnitCache(DebugFiles& files, const DwarfOptions& options);
  ~UnitCache();

  // Scans the units and builds the address → unit map of a .debug_info that is whole; an
  // error when no unit could be scanned.
  Result<void> Init();

  // The tables of the unit holding `vaddr`, built if needed; null when no usable unit does.
  UnitState* UnitFor(uint64_t vaddr);
  // Builds the unit's tables once; `wanted` (sorted) lets the function table skip the
  // subprograms that hold none of those addresses.
  UnitState* EnsureUnit(size_t index, std::span<const uint64_t> wanted = {});
  // Groups the addresses by unit and calls work(state, addresses, positions) once per unit,
  // on `threads` threads (0: one per CPU; split units on the calling thread), each unit's
  // tables built for just its addresses by the thread that then does its work; state is null
  // for broken units. While .debug_info streams in, units are built as their bytes arrive.
  template <typename Work>
  void ForEachUnitOf(std::span<const uint64_t> vaddrs, unsigned threads, const Work& work);
  // Replaces a partial function table by the full one; false when there is nothing to gain.
  bool CompleteUnit(UnitState& state);
  const ResolvedName& NodeName(UnitState& state, int32_t node);
  // The path of file index `file` of the unit's line table; empty when unknown.
  const std::string& FilePath(UnitState& state, uint32_t file);
  // The line table whose file names a unit's DW_AT_decl_file values index, in any file read
  // (main, split object, supplementary file); null when none.
  const LineTable* DeclLineTable(DwarfFile& file, const UnitInfo& unit);
  // Waits for a .debug_info still being decompressed; null when the DWARF is unusable.
  DwarfFile* main();
  static bool IsSplit(const UnitInfo& unit);

  // For an index build (unit_export.cc). The tables of unit `index` (of unit_count()).
  bool IsSplitUnit(size_t index);
  // The unit's bytes in .debug_info (0 past the last): a guess at its cost to export.
  uint64_t UnitSize(size_t index);
  UnitTables ExportUnit(size_t index);
  // Frees the function table of unit `index` (its UnitTables' segments and nodes go with it):
  // an index build calls it once the unit is encoded, so that the memory serves the units
  // exported after it instead of new pages (the table is rebuilt if a lookup needs it).
  void ReleaseUnitFunctions(size_t index);
  // While ExportWhileStreaming runs (the source is retired after it): frees the rows of a
  // line table of this cache once the build has encoded them (its file table stays, for the
  // units sharing it). Elsewhere nothing happens: lookups may still need them.
  void ReleaseLineRows(const LineTable* line);
  // Once every unit is exported: gives back the memory of the decompressed sections only the
  // export read (.debug_info, .debug_line, range and location lists, abbreviations, aranges:
  // most of a big binary's DWARF), while the build still points into .debug_str, the exported
  // names and paths. Only when the DebugFiles are their one reader (a separate debug file
  // they opened themselves): otherwise nothing happens (false). Afterwards the DWARF is
  // retired: it must answer nothing more, and a caller that needs it again opens it anew.
  bool ReleaseExportedSections() { return files_.ReleaseExportedSections(); }
  // While a streamed .debug_info is still being decompressed: builds the full function table
  // of every unit as soon as its bytes are final, on `threads` threads (0: one per CPU), and
  // returns once the section is complete; ExportUnit then finds them built. Without a
  // stream (already loaded), nothing to do.
  void PrebuildEveryUnit(unsigned threads = 0);
  // The same with the memory of a releasable stream (a separate debug file these files alone
  // read, no DIE referring into another unit; streamed_units.cc): BeginStreamedExport says
  // how many unit indexes ExportWhileStreaming may hand over (0: it would do nothing), and
  // ExportWhileStreaming then calls exported(index) for each unit, on `threads` threads, as
  // soon as its bytes and the strings are final, with its tables built; it may ExportUnit
  // and ReleaseUnitFunctions that unit. The unit's bytes past its unit DIE are given back
  // after, and the source is retired (ReleaseExportedSections would do that at the end).
  // Returns once the section is complete; exported_while_streaming(index) tells which units
  // were handed over.
  size_t BeginStreamedExport();
  void ExportWhileStreaming(unsigned threads, const std::function<void(size_t)>& exported);
  bool exported_while_streaming(size_t index) const {
    return index < exported_in_stream_.size() && exported_in_stream_[index] != 0;
  }
  std::span<const AddressSegment> unit_map() const { return unit_map_; }  // address → unit

  // Diagnostics for tests and benchmarks.
  size_t unit_count();  // waits for a .debug_info still being decompressed
  size_t parsed_unit_count() const { return parsed_units_.load(); }
  // Units whose tables were built while .debug_info was still being decompressed.
  size_t prebuilt_unit_count() const { return prebuilt_units_; }
  // Units whose bytes a streamed batch gave back (AnswerWhileStreaming).
  size_t released_unit_count() const { return released_units_.size(); }
  size_t memory_bytes() const;  // heap held by tables and caches (not the section bytes)
  // Errors met while parsing units (each unit's first), for tests and --verbose output.
  const std::vector<Error>& unit_errors();
  // What LLVM warns about in the DWARF read so far and the answers went around, in its words
  // (aranges.h), not given by an earlier call. Does not wait for a streamed .debug_info.
  std::vector<std::string> TakeWarnings();

 private:
  Result<void> BuildUnitMap();
  // .debug_aranges, parsed on first use (a streamed batch needs it before the unit map does).
  const std::vector<ArangeEntry>& Aranges();
  std::unique_ptr<UnitState> BuildUnit(UnitInfo& unit, std::span<const uint64_t> wanted);
  // The function table of a skeleton unit: its split unit's, opened through the DebugFiles.
  Result<void> BuildSplitFunctions(UnitInfo& skeleton, UnitState* state);
  void FinishPrebuilt(UnitState& state, UnitInfo& unit);
  // A .debug_info still being decompressed: waits for it, then scans its units (once). On
  // failure the cache answers nothing (the symbol table takes over) and records why.
  void EnsureLoaded();
  // While .debug_info streams in: builds, on `threads` threads, the tables of the units
  // .debug_aranges assigns the addresses to, each as soon as its bytes are final; then waits
  // for the rest and hands the tables to the scanned units.
  // every_unit: full tables of every unit, whatever the addresses (PrebuildEveryUnit).
  void PrebuildWhileStreaming(std::span<const uint64_t> vaddrs, unsigned threads,
                              bool every_unit = false);
  // With DwarfOptions::release_streamed_info, while a releasable .debug_info streams in (a
  // separate debug file this cache's files alone read, no DIE referring into another unit;
  // streamed_units.cc): each unit, as soon as its bytes are final, gets the batch's addresses
  // the unit map will give it (the lowest unit covering them), its tables built and `work`
  // done for them, and then its bytes past its unit DIE given back; the decoder is held a
  // window ahead of the units under way. Marks the positions answered in answered_; false
  // (nothing done) when the conditions are not met.
  bool AnswerWhileStreaming(std::span<const uint64_t> vaddrs, unsigned threads,
                            const UnitWork& work);
  // A unit taken from the stream: its header (and unit DIE, read without strings), where it
  // is in the file's units, and the batch's addresses it answers.
  struct StreamedUnit {
    UnitInfo header;
    UnitInfo* scanned = nullptr;  // null: not a unit of a known version
    size_t index = 0;             // of `scanned`
    bool readable = false;        // a compile unit whose unit DIE reads
    std::vector<uint64_t> vaddrs;
    std::vector<uint32_t> positions;
  };
  // The two above: takes the units in offset order as their bytes arrive (claim(unit) under
  // the lock that orders them), has `process` do each on `threads` threads, and gives back
  // the bytes of those it says are done; the decoder is held a window ahead.
  void ConsumeStream(unsigned threads, size_t room, const std::function<void(StreamedUnit&)>& claim,
                     const std::function<bool(StreamedUnit&)>& process);
  bool CanReleaseStreamedUnits();
  size_t StreamedUnitRoom();  // how many units to publish while streaming
  bool StringsFinal();        // waits for a streamed .debug_str; false if it failed
  const LineTable* LineTableAt(uint64_t offset, uint8_t address_size);
  // The line table at `offset` of `file`'s .debug_line; null (the error recorded) if bad.
  std::unique_ptr<LineTable> ParseLineTable(const DwarfFile& file, uint64_t offset,
                                            uint8_t address_size, uint64_t str_offsets_base);
  void AddUnitError(Error error);

  DebugFiles& files_;
  DwarfOptions options_;
  DwarfFile* main_;     // files_.main(), until the DWARF turns out unusable (then null)
  bool loaded_ = true;  // units scanned, unit map built
  size_t prebuilt_units_ = 0;
  // By position of the batch: answered by AnswerWhileStreaming (ForEachUnitOf skips them).
  std::vector<uint8_t> answered_;
  bool released_ = false;                    // AnswerWhileStreaming gave bytes of .debug_info back
  std::vector<uint64_t> released_units_;     // their offsets, sorted
  std::vector<uint8_t> exported_in_stream_;  // by unit index (ExportWhileStreaming)
  bool in_stream_ = false;                   // ExportWhileStreaming runs
  // Where the scan AnswerWhileStreaming began goes on (Init), once the section is whole.
  std::optional<uint64_t> scan_resume_;
  std::optional<std::vector<ArangeEntry>> aranges_;  // until the unit map is built
  std::vector<AddressSegment> unit_map_;             // address → index into main_->units()
  AddressIndex unit_index_;                          // over unit_map_
  std::vector<std::unique_ptr<UnitState>> units_;
  std::unordered_map<uint64_t, std::unique_ptr<LineTable>> line_tables_;
  // Of split objects and the supplementary file, by (file, offset): declarations only.
  std::map<std::pair<const DwarfFile*, uint64_t>, std::unique_ptr<LineTable>> other_line_tables_;
  DemangleCache demangled_;
  std::vector<Error> unit_errors_;
  std::vector<std::string> warnings_;  // not taken yet
  std::atomic<size_t> parsed_units_{0};
  std::mutex mu_;  // line_tables_, unit_errors_ and warnings_ (units are parsed concurrently)
};

template <typename Work>
void UnitCache::ForEachUnitOf(std::span<const uint64_t> vaddrs, unsigned threads,
                              const Work& work) {
  answered_.clear();
  if (!loaded_) {
    const UnitWork unit_work = [&](UnitState* state, std::span<const uint64_t> wanted,
                                   std::span<const uint32_t> positions) {
      work(state, wanted, positions);
    };
    bool answered =
        options_.release_streamed_info && AnswerWhileStreaming(vaddrs, threads, unit_work);
    if (!answered) PrebuildWhileStreaming(vaddrs, threads);
  }
  EnsureLoaded();
  // Parts of .debug_info are zeros now: the source answers nothing after this batch.
  if (released_) files_.Retire();
  auto was_answered = [&](size_t position) {
    return position < answered_.size() && answered_[position] != 0;
  };
  if (!main_) {
    // The DWARF turned out unusable after all (as if it had none): what was answered while
    // it streamed in is taken back, so that every address falls back to the symbol table.
    for (uint32_t i = 0; i < vaddrs.size(); ++i) {
      if (was_answered(i)) work(nullptr, vaddrs.subspan(i, 1), std::span<const uint32_t>(&i, 1));
    }
    return;
  }
  // (unit, position) sorted by unit then address: each unit's addresses are contiguous and
  // sorted, which is what a filtered FunctionTable::Build wants.
  struct Item {
    int32_t unit;
    uint32_t position;
  };
  std::vector<Item> items;
  items.reserve(vaddrs.size());
  for (size_t i = 0; i < vaddrs.size(); ++i) {
    if (was_answered(i)) continue;
    int32_t index = FindSegment(unit_map_, unit_index_, vaddrs[i]);
    if (index >= 0) items.push_back({index, static_cast<uint32_t>(i)});
  }
  std::sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
    if (a.unit != b.unit) return a.unit < b.unit;
    return vaddrs[a.position] < vaddrs[b.position];
  });
  struct Group {
    size_t unit;
    size_t begin, end;  // into items
  };
  std::vector<Group> parallel, serial;
  for (size_t b = 0, e = 0; b < items.size(); b = e) {
    for (e = b + 1; e < items.size() && items[e].unit == items[b].unit; ++e) {
    }
    size_t index = static_cast<size_t>(items[b].unit);
    UnitInfo& unit = main_->units()[index];
    // Split units open files through shared state: they stay on this thread.
    bool split = main_->ReadUnitDie(unit) && IsSplit(unit);
    (split ? serial : parallel).push_back({index, b, e});
  }
  // Biggest units first (their size is the best guess of their parsing time): the threads
  // then finish close together instead of one parsing a huge unit while the others idle.
  std::stable_sort(parallel.begin(), parallel.end(), [&](const Group& x, const Group& y) {
    const UnitInfo& ux = main_->units()[x.unit];
    const UnitInfo& uy = main_->units()[y.unit];
    return ux.end - ux.offset > uy.end - uy.offset;
  });
  auto run = [&](const Group& g, std::vector<uint64_t>& wanted, std::vector<uint32_t>& positions) {
    wanted.clear();
    positions.clear();
    for (size_t k = g.begin; k < g.end; ++k) {
      wanted.push_back(vaddrs[items[k].position]);
      positions.push_back(items[k].position);
    }
    work(EnsureUnit(g.unit, wanted), std::span<const uint64_t>(wanted),
         std::span<const uint32_t>(positions));
  };
  // Each worker takes the next unit and does all of that unit's work: units are independent
  // apart from the locked caches, so no unit's tables are touched by two threads.
  std::atomic<size_t> next{0};
  RunOnThreads(ThreadCount(threads, parallel.size()), [&](unsigned) {
    std::vector<uint64_t> wanted;
    std::vector<uint32_t> positions;
    for (size_t i = next.fetch_add(1); i < parallel.size(); i = next.fetch_add(1)) {
      run(parallel[i], wanted, positions);
    }
  });
  std::vector<uint64_t> wanted;
  std::vector<uint32_t> positions;
  for (const Group& g : serial) run(g, wanted, positions);
}

}  // namespace stacksym::dwarf
