#include "dwarf/debug_info_source.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "base/flat_table.h"
#include "base/parallel.h"
#include "dwarf/aranges.h"
#include "dwarf/debug_file_finder.h"
#include "dwarf/die_chain.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf/dwarf_error.h"
#include "dwarf/dwp_index.h"
#include "dwarf/frame_locals.h"
#include "elf/section_stream.h"

namespace stacksym {

using dwarf::AddressRange;
using dwarf::DwarfFile;
using dwarf::DwarfSections;
using dwarf::FunctionTable;
using dwarf::LineTable;
using dwarf::UnitInfo;

// Per-unit tables, built on first use.
struct DebugInfoSource::UnitState {
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

// The split-DWARF package of the binary, opened once.
struct DebugInfoSource::DwpPackage {
  std::shared_ptr<ElfFile> elf;
  DwpIndex index;
  DwarfSections sections;  // whole *.dwo sections; each unit's contributions are sliced out
};

namespace {

bool HasDebugInfo(const ElfFile& elf) {
  const ElfSection* s = elf.FindSection(".debug_info");
  return s != nullptr && s->type != 8 /* SHT_NOBITS */ && s->size > 0;
}

bool IsCompressed(const ElfFile& elf, std::string_view name) {
  const ElfSection* s = elf.FindSection(name);
  return s != nullptr &&
         ((s->flags & 0x800 /* SHF_COMPRESSED */) != 0 || s->name.starts_with(".z"));
}

// Reads (decompressing on first use) the DWARF sections of `elf`. Decompression dominates the
// cost of opening big compressed debug files, so when both halves hold compressed data, the
// string/line/range sections are decompressed on a second thread while this one does
// .debug_info (ElfFile decompresses each section once, under a per-section once-flag).
// `streams`: when given and .debug_info is compressed and at least `stream_from` bytes, it
// and a compressed .debug_str are only started here, each on a background thread, and their
// streams returned there; s.info and s.str are then whole-size buffers whose bytes become
// final later (front to back). The small sections are read meanwhile, on this thread.
struct SectionStreams {
  std::shared_ptr<const SectionStream> info;
  std::shared_ptr<const SectionStream> str;
};
Result<DwarfSections> LoadSections(const ElfFile& elf, bool dwo, SectionStreams* streams = nullptr,
                                   uint64_t stream_from = 0) {
  DwarfSections s;
  struct Want {
    const char* name;
    std::span<const uint8_t>* out;
    bool in_main_skipped_for_dwo;
  };
  const Want first[] = {
      {".debug_info", &s.info, false},
      {".debug_abbrev", &s.abbrev, false},
      {".debug_aranges", &s.aranges, true},
  };
  const Want second[] = {
      {".debug_str", &s.str, false},           {".debug_line", &s.line, false},
      {".debug_line_str", &s.line_str, true},  {".debug_str_offsets", &s.str_offsets, false},
      {".debug_addr", &s.addr, true},          {".debug_ranges", &s.ranges, true},
      {".debug_rnglists", &s.rnglists, false},
  };
  auto load = [&](std::span<const Want> wants, std::string_view skip = {}) -> Result<void> {
    for (const Want& w : wants) {
      // Split objects have *.dwo sections; addresses and aranges stay in the skeleton's file.
      if (dwo && w.in_main_skipped_for_dwo) continue;
      if (w.name == skip) continue;
      std::string name = std::string(w.name) + (dwo ? ".dwo" : "");
      Result<std::span<const uint8_t>> data = elf.SectionData(name);
      if (!data) return std::move(data).error().WithFile(elf.path());
      *w.out = *data;
    }
    return {};
  };
  const ElfSection* info = elf.FindSection(".debug_info");
  if (streams != nullptr && !dwo && info != nullptr && IsCompressed(elf, ".debug_info") &&
      info->size >= stream_from) {
    streams->info = StreamSectionData(elf, *info);
    s.info = streams->info->buffer();
    // The small sections first, so that parsing can start early; .debug_str (big, and only
    // needed once names are resolved) is started after them, not competing with them.
    if (Result<void> r = load(first, ".debug_info"); !r) return std::move(r).error();
    const ElfSection* str = elf.FindSection(".debug_str");
    bool stream_str = str != nullptr && IsCompressed(elf, ".debug_str");
    if (Result<void> r = load(second, stream_str ? ".debug_str" : ""); !r) {
      return std::move(r).error();
    }
    if (stream_str) {
      streams->str = StreamSectionData(elf, *str);
      s.str = streams->str->buffer();
    }
    return s;
  }
  bool parallel = false;
  if (!dwo && IsCompressed(elf, ".debug_info")) {
    for (const Want& w : second) parallel |= IsCompressed(elf, w.name);
  }
  if (!parallel) {
    if (Result<void> r = load(first); !r) return std::move(r).error();
    if (Result<void> r = load(second); !r) return std::move(r).error();
    if (dwo) {
      // A split object's location lists (DATA and FRAME answers) are small: read with it.
      const Want lists[] = {{".debug_loc", &s.loc, false}, {".debug_loclists", &s.loclists, false}};
      if (Result<void> r = load(lists); !r) return std::move(r).error();
    }
    return s;
  }
  Result<void> second_result;
  SpreadThread helper([&] { second_result = load(second); });
  Result<void> first_result = load(first);
  helper.Join();
  if (!first_result) return std::move(first_result).error();
  if (!second_result) return std::move(second_result).error();
  return s;
}

}  // namespace

Result<DwarfSections> LoadDwarfSections(const ElfFile& elf) { return LoadSections(elf, false); }

DebugInfoSource::~DebugInfoSource() = default;

Result<std::unique_ptr<DebugInfoSource>> DebugInfoSource::Open(std::shared_ptr<ElfFile> binary,
                                                               const SymbolizeOptions& options,
                                                               const OpenTuning& tuning) {
  std::unique_ptr<DebugInfoSource> source(new DebugInfoSource());
  source->options_ = options;
  source->binary_ = binary;
  source->finder_ = std::make_unique<DebugFileFinder>(options.debug_dirs, options.known_path,
                                                      options.known_root, options.fetcher);
  source->finder_->set_dwp_path(options.dwp_path);
  std::shared_ptr<ElfFile> debug_file;
  if (HasDebugInfo(*binary)) {
    debug_file = binary;
  } else {
    Result<std::shared_ptr<ElfFile>> found = source->finder_->FindSeparateDebugFile(*binary);
    if (!found) return std::move(found).error();
    debug_file = *found;
    if (!debug_file || !HasDebugInfo(*debug_file)) return std::unique_ptr<DebugInfoSource>();
  }
  source->debug_file_ = debug_file;
  source->path_ = debug_file->path();
  SectionStreams streams;
  Result<DwarfSections> sections =
      LoadSections(*debug_file, false, &streams, tuning.stream_info_from);
  if (!sections) return std::move(sections).error();
  source->main_ = std::make_unique<DwarfFile>(*sections);

  if (debug_file->debugaltlink() || debug_file->FindSection(".debug_sup") != nullptr) {
    Result<std::shared_ptr<ElfFile>> alt = source->finder_->FindSupplementaryFile(*debug_file);
    // Without the supplementary file, names that live there are missing; lines still work.
    if (alt && *alt) {
      Result<DwarfSections> alt_sections = LoadSections(**alt, false);
      if (alt_sections) {
        source->supplementary_file_ = *alt;
        source->supplementary_ = std::make_unique<DwarfFile>(*alt_sections);
        (void)source->supplementary_->ScanUnits();
        source->main_->set_supplementary(source->supplementary_.get());
        source->supplementary_->set_supplementary(source->supplementary_.get());
      }
    }
  }
  // A streaming .debug_info is scanned once it is complete (EnsureLoaded).
  source->info_stream_ = std::move(streams.info);
  source->str_stream_ = std::move(streams.str);
  if (source->info_stream_ != nullptr) {
    source->loaded_ = false;
    return source;
  }
  if (Result<void> r = source->Init(*sections); !r)
    return std::move(r).error().WithFile(source->path_);
  return source;
}

Result<std::unique_ptr<DebugInfoSource>> DebugInfoSource::FromSections(
    const DwarfSections& sections, const SymbolizeOptions& options) {
  std::unique_ptr<DebugInfoSource> source(new DebugInfoSource());
  source->options_ = options;
  source->path_ = "<memory>";
  source->main_ = std::make_unique<DwarfFile>(sections);
  if (Result<void> r = source->Init(sections); !r) return std::move(r).error();
  return source;
}

Result<void> DebugInfoSource::Init(const DwarfSections& sections) {
  Result<void> scanned = main_->ScanUnits();
  // A corrupt header ends the scan; the units before it remain usable.
  if (!scanned) {
    if (main_->units().empty()) return scanned;
    unit_errors_.push_back(std::move(scanned).error());
  }
  units_.resize(main_->units().size());
  return BuildUnitMap();
}

void DebugInfoSource::EnsureLoaded() {
  if (loaded_) return;
  loaded_ = true;
  // SectionData waits for the same decoding and joins its thread.
  Result<std::span<const uint8_t>> info = debug_file_->SectionData(".debug_info");
  info_stream_.reset();
  if (str_stream_) {
    Result<std::span<const uint8_t>> str = debug_file_->SectionData(".debug_str");
    str_stream_.reset();
    if (info && !str) info = std::move(str).error();
  }
  Result<void> r = info ? Init(main_->sections()) : Result<void>(std::move(info).error());
  if (!r) {
    // As if the file had no DWARF: every address falls back to the symbol table.
    unit_errors_.push_back(std::move(r).error().WithFile(path_));
    main_.reset();
  }
}

size_t DebugInfoSource::unit_count() {
  EnsureLoaded();
  return main_ ? main_->units().size() : 0;
}

const std::vector<Error>& DebugInfoSource::unit_errors() {
  EnsureLoaded();
  return unit_errors_;
}

const std::vector<dwarf::ArangeEntry>& DebugInfoSource::Aranges() {
  if (!aranges_) {
    aranges_.emplace();
    Result<void> parsed = dwarf::ParseAranges(main_->sections().aranges, &*aranges_);
    // What was read before a corrupt entry is still used.
    if (!parsed) unit_errors_.push_back(std::move(parsed).error());
  }
  return *aranges_;
}

Result<void> DebugInfoSource::BuildUnitMap() {
  std::vector<UnitInfo>& units = main_->units();
  std::vector<dwarf::IdRange> ranges;
  std::vector<uint8_t> covered(units.size(), 0);
  for (const dwarf::ArangeEntry& e : Aranges()) {
    auto it = std::lower_bound(units.begin(), units.end(), e.unit_offset,
                               [](const UnitInfo& u, uint64_t o) { return u.offset < o; });
    if (it == units.end() || it->offset != e.unit_offset || it->is_type_unit()) continue;
    int32_t index = static_cast<int32_t>(it - units.begin());
    covered[static_cast<size_t>(index)] = 1;
    ranges.push_back({e.low, e.high, index});
  }
  // Units aranges does not describe (clang emits no aranges; producers may leave units out):
  // their own unit-DIE ranges. Only the unit DIE is read, never the whole unit.
  std::vector<AddressRange> unit_ranges;
  for (size_t i = 0; i < units.size(); ++i) {
    if (covered[i] || units[i].is_type_unit()) continue;
    unit_ranges.clear();
    Result<void> r = main_->UnitRanges(units[i], &unit_ranges);
    if (!r) {
      unit_errors_.push_back(std::move(r).error());
      continue;
    }
    for (const AddressRange& ar : unit_ranges) {
      ranges.push_back({ar.low, ar.high, static_cast<int32_t>(i)});
    }
  }
  aranges_.reset();  // in the unit map now
  unit_map_ = dwarf::FlattenByLowestId(std::move(ranges));
  unit_map_.shrink_to_fit();
  dwarf::IndexSegments(unit_map_, &unit_index_);
  return {};
}

const LineTable* DebugInfoSource::DeclLineTable(DwarfFile& file, const UnitInfo& unit) {
  if (&file == main_.get()) {
    return unit.has_stmt_list ? LineTableAt(unit.stmt_list, unit.ctx.address_size) : nullptr;
  }
  // A split unit's declarations name files of its .debug_line.dwo (a header without rows, at
  // the start of the unit's contribution: gcc), or where it has none (clang), of its
  // skeleton's line table; a supplementary file's partial units have their own
  // DW_AT_stmt_list.
  uint64_t offset = 0;
  if (file.is_dwo() && file.sections().line.empty()) {
    auto skeleton = skeleton_of_.find(&file);
    if (skeleton == skeleton_of_.end() || !skeleton->second->has_stmt_list) return nullptr;
    return LineTableAt(skeleton->second->stmt_list, skeleton->second->ctx.address_size);
  }
  if (!file.is_dwo()) {
    if (!unit.has_stmt_list) return nullptr;
    offset = unit.stmt_list;
  }
  std::pair<const DwarfFile*, uint64_t> key{&file, offset};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = other_line_tables_.find(key);
    if (it != other_line_tables_.end()) return it->second.get();
  }
  std::unique_ptr<LineTable> owned =
      ParseLineTable(file, offset, unit.ctx.address_size, unit.str_offsets_base);
  std::lock_guard<std::mutex> lock(mu_);
  return other_line_tables_.emplace(key, std::move(owned)).first->second.get();
}

std::unique_ptr<LineTable> DebugInfoSource::ParseLineTable(const DwarfFile& file, uint64_t offset,
                                                           uint8_t address_size,
                                                           uint64_t str_offsets_base) {
  dwarf::LineSections ls;
  const DwarfSections& s = file.sections();
  ls.line = s.line;
  ls.line_str = s.line_str;
  ls.str = s.str;
  ls.str_offsets = s.str_offsets;
  ls.str_offsets_base = str_offsets_base;
  Result<LineTable> table = LineTable::Parse(ls, offset, address_size);
  if (!table) {
    AddUnitError(std::move(table).error());
    return nullptr;
  }
  return std::make_unique<LineTable>(std::move(*table));
}

const LineTable* DebugInfoSource::LineTableAt(uint64_t offset, uint8_t address_size) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = line_tables_.find(offset);
    if (it != line_tables_.end()) return it->second.get();
  }
  std::unique_ptr<LineTable> owned = ParseLineTable(*main_, offset, address_size, 0);
  std::lock_guard<std::mutex> lock(mu_);
  // Failures are cached as nullptr too; a table another thread parsed meanwhile wins.
  return line_tables_.emplace(offset, std::move(owned)).first->second.get();
}

Result<void> DebugInfoSource::OpenSplitUnit(UnitInfo& skeleton, UnitState* state) {
  // Sources made from raw sections (tests, fuzzing) have no files to search.
  if (!finder_ || (!binary_ && !debug_file_)) {
    return MakeError(ErrorCode::kNotFound, "split DWARF unit without a file to search from");
  }
  std::unique_ptr<DwarfFile> dwo;
  std::shared_ptr<ElfFile> dwo_elf;
  // A .dwp package first (it replaces the .dwo files), then the .dwo itself.
  const DwpPackage* package = Package();
  std::optional<DwpUnitSections> contrib;
  if (package != nullptr) contrib = package->index.Find(skeleton.dwo_id);
  if (contrib) {
    auto slice = [](std::span<const uint8_t> s, const DwpContribution& c) {
      if (c.size == 0 && c.offset == 0) return s;
      if (c.offset > s.size() || c.size > s.size() - c.offset) return std::span<const uint8_t>();
      return s.subspan(static_cast<size_t>(c.offset), static_cast<size_t>(c.size));
    };
    DwarfSections s = package->sections;
    s.info = slice(s.info, contrib->info);
    s.abbrev = slice(s.abbrev, contrib->abbrev);
    s.line = slice(s.line, contrib->line);
    s.str_offsets = slice(s.str_offsets, contrib->str_offsets);
    s.rnglists = slice(s.rnglists, contrib->rnglists);
    // One column for both: .debug_loc.dwo (index version 2), .debug_loclists.dwo (5).
    s.loc = slice(s.loc, contrib->loclists);
    s.loclists = slice(s.loclists, contrib->loclists);
    dwo = std::make_unique<DwarfFile>(s, true);
    dwo_elf = package->elf;
  }
  if (!dwo) {
    Result<std::shared_ptr<ElfFile>> found =
        finder_->FindDwo(binary_ ? *binary_ : *debug_file_, skeleton.comp_dir, skeleton.dwo_name);
    if (!found) return std::move(found).error();
    if (!*found) {
      return MakeError(ErrorCode::kNotFound,
                       "split DWARF object " + std::string(skeleton.dwo_name) + " not found");
    }
    Result<DwarfSections> s = LoadSections(**found, true);
    if (!s) return std::move(s).error();
    dwo = std::make_unique<DwarfFile>(*s, true);
    dwo_elf = *found;
  }
  if (Result<void> r = dwo->ScanUnits(); !r && dwo->units().empty()) return r;
  UnitInfo* split = nullptr;
  for (UnitInfo& u : dwo->units()) {
    if (u.is_type_unit()) continue;
    if (!dwo->ReadUnitDie(u)) continue;
    if (!skeleton.has_dwo_id || (u.has_dwo_id && u.dwo_id == skeleton.dwo_id)) {
      split = &u;
      break;
    }
  }
  if (split == nullptr) {
    return MakeError(ErrorCode::kMalformed,
                     "no unit with the skeleton's DWO id in " + std::string(skeleton.dwo_name));
  }
  // Addresses (and DWARF 4 range lists) of a split unit live in the skeleton's file.
  split->addr_section = main_->sections().addr;
  split->addr_overridden = true;
  split->addr_base = skeleton.addr_base;
  split->low_pc = skeleton.low_pc;
  if (split->ctx.version < 5) {
    split->ranges_section = main_->sections().ranges;
    split->ranges_overridden = true;
    split->gnu_ranges_base = skeleton.gnu_ranges_base;
  }
  Result<FunctionTable> functions = FunctionTable::Build(*dwo, *split);
  if (!functions) return std::move(functions).error().WithFile(dwo_elf->path());
  state->functions = std::move(*functions);
  state->function_file = dwo.get();
  state->function_unit = split;
  skeleton_of_[dwo.get()] = &skeleton;
  split_dwarf_.push_back(std::move(dwo));
  // The package is held by dwp_; each .dwo file is held here.
  if (package == nullptr || dwo_elf != package->elf) split_files_.push_back(std::move(dwo_elf));
  return {};
}

// Finds, opens and indexes the .dwp package on the first call only: every split unit of a
// binary lives in the same package, and reopening it per unit would map the file and parse
// its index once per unit. A miss or a broken package is remembered just the same.
const DebugInfoSource::DwpPackage* DebugInfoSource::Package() {
  if (dwp_searched_) return dwp_.get();
  dwp_searched_ = true;
  ++dwp_searches_;
  // "<binary>.dwp" first, then "<separate debug file>.dwp" (a package shipped with the debug
  // file, e.g. in the same debug directory).
  std::vector<const ElfFile*> owners;
  if (binary_) owners.push_back(binary_.get());
  if (debug_file_ && debug_file_ != binary_) owners.push_back(debug_file_.get());
  for (const ElfFile* owner : owners) {
    Result<std::shared_ptr<ElfFile>> found = finder_->FindDwp(*owner);
    if (!found) {
      AddUnitError(std::move(found).error());
      continue;
    }
    if (!*found) continue;
    Result<std::unique_ptr<DwpPackage>> package = OpenPackage(*found);
    if (!package) {
      AddUnitError(std::move(package).error());
      continue;
    }
    dwp_ = std::move(*package);
    break;
  }
  return dwp_.get();
}

Result<std::unique_ptr<DebugInfoSource::DwpPackage>> DebugInfoSource::OpenPackage(
    std::shared_ptr<ElfFile> elf) {
  ++dwp_opens_;
  if (elf->FindSection(".debug_cu_index") == nullptr) {
    return MakeError(ErrorCode::kMalformed, "no .debug_cu_index: not a split-DWARF package")
        .WithFile(elf->path());
  }
  Result<std::span<const uint8_t>> index_bytes = elf->SectionData(".debug_cu_index");
  if (!index_bytes) return std::move(index_bytes).error().WithFile(elf->path());
  Result<DwpIndex> index = DwpIndex::Parse(*index_bytes);
  if (!index) return std::move(index).error().WithFile(elf->path());
  Result<DwarfSections> whole = LoadSections(*elf, true);
  if (!whole) return std::move(whole).error();
  auto package = std::make_unique<DwpPackage>();
  package->elf = std::move(elf);
  package->index = std::move(*index);
  package->sections = *whole;
  return package;
}

const std::string& DebugInfoSource::dwp_path() const {
  static const std::string kNone;
  return dwp_ ? dwp_->elf->path() : kNone;
}

DebugInfoSource::UnitState* DebugInfoSource::EnsureUnit(size_t index,
                                                        std::span<const uint64_t> wanted) {
  std::unique_ptr<UnitState>& slot = units_[index];
  if (!slot) {
    slot = BuildUnit(main_->units()[index], wanted);
  } else if (slot->prebuilt) {
    FinishPrebuilt(*slot, main_->units()[index]);
  }
  return slot->ok ? slot.get() : nullptr;
}

void DebugInfoSource::FinishPrebuilt(UnitState& state, UnitInfo& unit) {
  state.prebuilt = false;
  if (Result<void> r = main_->ReadUnitDie(unit); !r) {
    AddUnitError(std::move(r).error());
    return;  // not ok
  }
  state.comp_dir = unit.comp_dir;
  if (unit.has_stmt_list && !state.line_read) {
    state.line = LineTableAt(unit.stmt_list, unit.ctx.address_size);
  }
  state.ok = true;
}

std::unique_ptr<DebugInfoSource::UnitState> DebugInfoSource::BuildUnit(
    UnitInfo& unit, std::span<const uint64_t> wanted) {
  auto state = std::make_unique<UnitState>();
  parsed_units_.fetch_add(1, std::memory_order_relaxed);
  if (Result<void> r = main_->ReadUnitDie(unit); !r) {
    AddUnitError(std::move(r).error());
    return state;  // not ok
  }
  state->comp_dir = unit.comp_dir;
  if (IsSplit(unit)) {
    Result<void> r = OpenSplitUnit(unit, state.get());
    // Without the split object the line table of the skeleton still answers.
    if (!r) AddUnitError(std::move(r).error());
  } else {
    Result<FunctionTable> functions = FunctionTable::Build(*main_, unit, wanted);
    if (functions) {
      state->functions = std::move(*functions);
      state->function_file = main_.get();
      state->function_unit = &unit;
    } else {
      AddUnitError(std::move(functions).error().WithFile(path_));
    }
  }
  if (unit.has_stmt_list) state->line = LineTableAt(unit.stmt_list, unit.ctx.address_size);
  state->ok = true;
  return state;
}

void DebugInfoSource::PrebuildEveryUnit(unsigned threads) {
  if (!loaded_) PrebuildWhileStreaming({}, threads, true);
}

void DebugInfoSource::PrebuildWhileStreaming(std::span<const uint64_t> vaddrs, unsigned threads,
                                             bool every_unit) {
  const SectionStream& stream = *info_stream_;
  std::span<const uint8_t> info = stream.buffer();
  std::vector<uint64_t> sorted(vaddrs.begin(), vaddrs.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  // Units are taken in the order their bytes become final. Which addresses a unit holds:
  // .debug_aranges where it names the unit (as BuildUnitMap decides, so the tables are built
  // for exactly the addresses the lookups will bring), else the unit DIE's own ranges. The
  // unit list and map proper come after the whole section.
  static const std::vector<dwarf::ArangeEntry> kNone;
  const std::vector<dwarf::ArangeEntry>& aranges = every_unit ? kNone : Aranges();
  std::vector<uint64_t> aranged;  // unit offsets .debug_aranges names, sorted
  for (const dwarf::ArangeEntry& e : aranges) aranged.push_back(e.unit_offset);
  std::sort(aranged.begin(), aranged.end());
  aranged.erase(std::unique(aranged.begin(), aranged.end()), aranged.end());
  std::vector<std::vector<uint64_t>> by_aranges(aranged.size());  // sorted addresses per unit
  {
    std::vector<dwarf::IdRange> ranges;
    for (const dwarf::ArangeEntry& e : aranges) {
      auto it = std::lower_bound(aranged.begin(), aranged.end(), e.unit_offset);
      ranges.push_back({e.low, e.high, static_cast<int32_t>(it - aranged.begin())});
    }
    // Lowest offset wins where ranges overlap, as in BuildUnitMap (units are in offset order).
    std::vector<dwarf::AddressSegment> map = dwarf::FlattenByLowestId(std::move(ranges));
    dwarf::AddressIndex index;
    dwarf::IndexSegments(map, &index);
    for (uint64_t a : sorted) {
      int32_t id = dwarf::FindSegment(map, index, a);
      if (id >= 0) by_aranges[static_cast<size_t>(id)].push_back(a);
    }
  }
  std::mutex cursor_mu;
  uint64_t cursor = 0;
  bool stop = false;
  std::mutex built_mu;
  std::vector<std::pair<UnitInfo, std::unique_ptr<UnitState>>> built;
  auto take_next = [&](uint64_t* offset, uint64_t* end) {
    std::lock_guard<std::mutex> lock(cursor_mu);
    if (stop || cursor >= info.size()) return false;
    // The unit length first (4 or 12 bytes): it tells where the next unit starts.
    size_t have = stream.WaitFor(std::min<uint64_t>(cursor + 12, info.size()));
    uint64_t unit_end = dwarf::DwarfFile::UnitEnd(info.first(have), cursor);
    if (unit_end == 0 || unit_end > info.size()) {
      stop = true;  // truncated or corrupt: the regular path reports it
      return false;
    }
    *offset = cursor;
    *end = unit_end;
    cursor = unit_end;
    return true;
  };
  auto build = [&](uint64_t offset, uint64_t end, std::vector<AddressRange>& ranges,
                   std::vector<uint64_t>& wanted) {
    if (stream.WaitFor(end) < end) return;  // decoding failed before this unit
    Result<UnitInfo> header = dwarf::DwarfFile::ParseUnitHeader(info.first(end), offset);
    if (!header || !header->known_version() || header->is_type_unit()) return;
    UnitInfo unit = *header;
    // Functions only: strings and possibly the line table wait until the unit is handed
    // over (.debug_str may still be arriving). Split units open other files through shared
    // state: they are left to the regular path.
    if (!main_->ReadUnitDieWithoutStrings(unit) || IsSplit(unit)) return;
    wanted.clear();
    auto named = std::lower_bound(aranged.begin(), aranged.end(), offset);
    if (every_unit) {
      // wanted stays empty: the full table
    } else if (named != aranged.end() && *named == offset) {
      wanted = by_aranges[static_cast<size_t>(named - aranged.begin())];
    } else {
      ranges.clear();
      if (!main_->UnitRanges(unit, &ranges)) return;
      for (const AddressRange& r : ranges) {
        for (auto it = std::lower_bound(sorted.begin(), sorted.end(), r.low);
             it != sorted.end() && *it < r.high; ++it) {
          wanted.push_back(*it);
        }
      }
      std::sort(wanted.begin(), wanted.end());
      wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    }
    if (!every_unit && wanted.empty()) return;
    Result<FunctionTable> functions = FunctionTable::Build(*main_, unit, wanted);
    if (!functions) return;  // the regular path tries again, and records why
    auto state = std::make_unique<UnitState>();
    state->functions = std::move(*functions);
    state->function_file = main_.get();
    state->prebuilt = true;
    // The line table too, once the strings its file names may use are final.
    if (unit.has_stmt_list && (str_stream_ == nullptr || str_stream_->done())) {
      state->line = LineTableAt(unit.stmt_list, unit.ctx.address_size);
      state->line_read = true;
    }
    std::lock_guard<std::mutex> lock(built_mu);
    built.emplace_back(unit, std::move(state));
  };
  RunOnThreads(ThreadCount(threads, SIZE_MAX), [&](unsigned) {
    std::vector<AddressRange> ranges;
    std::vector<uint64_t> wanted;
    uint64_t offset = 0, end = 0;
    while (take_next(&offset, &end)) build(offset, end, ranges, wanted);
  });

  EnsureLoaded();
  if (!main_) return;
  // Hand the tables to the units the scan found; the lookups then find them built.
  for (auto& [header, state] : built) {
    int found = main_->FindUnit(header.die_offset);
    if (found < 0) continue;
    UnitInfo& unit = main_->units()[static_cast<size_t>(found)];
    if (unit.offset != header.offset || units_[static_cast<size_t>(found)]) continue;
    state->function_unit = &unit;
    units_[static_cast<size_t>(found)] = std::move(state);
    parsed_units_.fetch_add(1, std::memory_order_relaxed);
    ++prebuilt_units_;
  }
}

bool DebugInfoSource::IsSplit(const UnitInfo& unit) {
  // The attribute, not its string: this is also asked before the strings are read.
  return unit.unit_type == dwarf::DW_UT_skeleton || unit.has_dwo_name;
}

bool DebugInfoSource::CompleteUnit(UnitState& state) {
  if (state.functions.coverage() == FunctionTable::Coverage::kFull || state.completion_failed) {
    return false;
  }
  Result<FunctionTable> full = FunctionTable::Build(*state.function_file, *state.function_unit);
  if (!full) {
    state.completion_failed = true;
    AddUnitError(std::move(full).error().WithFile(path_));
    return false;
  }
  state.functions = std::move(*full);
  state.names.clear();  // node numbers changed
  state.names_by_origin = FlatTable<UnitState::OriginSlot>();
  return true;
}

const DebugInfoSource::ResolvedName& DebugInfoSource::NodeName(UnitState& state, int32_t node) {
  size_t i = static_cast<size_t>(node);
  if (i >= state.names.size()) state.names.resize(state.functions.nodes().size());
  ResolvedName& name = state.names[i];
  if (!name.done) {
    name.done = true;
    // Instances of one inline function in a unit (often hundreds) share its name and
    // declaration: resolved once per abstract origin (in this file: the declaration search
    // does not follow references into another), then taken from its first instance.
    auto origin_slot = [&](uint64_t origin) -> UnitState::OriginSlot& {
      return state.names_by_origin.Find(
          MixHash(origin), [&](const UnitState::OriginSlot& s) { return s.origin == origin; });
    };
    auto take_shared = [&](const UnitState::OriginSlot& slot) -> const ResolvedName& {
      const ResolvedName& same = state.names[static_cast<size_t>(slot.node)];
      name.raw = same.raw;
      name.pretty = same.pretty;
      name.pretty_hash = same.pretty_hash;
      name.raw_hash = same.raw_hash;
      name.has_start_file = same.has_start_file;
      name.start_file = same.start_file;
      name.start_line = same.start_line;
      return name;
    };
    const dwarf::FunctionNode& node_record = state.functions.nodes()[i];
    // What the walk saw of the DIE decides, as its own attributes would below (without
    // reading it again), unless the DIE's low_pc is wanted: an instance that describes
    // nothing itself is named as its origin, by the origin's first instance or, for the
    // first, by the chain from the origin on.
    const bool origin_decides =
        !options_.start_addresses &&
        (node_record.flags &
         (dwarf::FunctionNode::kDescribesItself | dwarf::FunctionNode::kOriginElsewhere)) == 0 &&
        node_record.origin != 0;
    if (origin_decides) {
      name.call_discriminator = node_record.call_discriminator;
      UnitState::OriginSlot& slot = origin_slot(node_record.origin);
      if (!slot.empty()) return take_shared(slot);
      slot = {MixHash(node_record.origin), node_record.origin, static_cast<int32_t>(i)};
      state.names_by_origin.Filled();
    }
    // Name and declaration come from one walk of the DIE's origin chain, each DIE read once.
    dwarf::DieChain chain(*state.function_file,
                          origin_decides ? node_record.origin : node_record.die_offset);
    if (!origin_decides && chain.start_read()) {
      const dwarf::SubroutineStart& start = chain.start();
      name.has_low_pc = start.has_low_pc && options_.start_addresses;
      name.low_pc = start.low_pc;
      name.call_discriminator = start.call_discriminator;
      if (!start.describes_itself && start.abstract_origin.file == state.function_file) {
        uint64_t origin = start.abstract_origin.offset;
        UnitState::OriginSlot& slot = origin_slot(origin);
        if (!slot.empty()) return take_shared(slot);
        slot = {MixHash(origin), origin, static_cast<int32_t>(i)};
        state.names_by_origin.Filled();
      }
    }
    name.raw = chain.Name(options_.short_function_names);
    if (options_.demangle && !name.raw.empty()) {
      const DemangleCache::Hashed demangled = demangled_.GetHashed(name.raw);
      name.pretty = demangled.pretty;
      name.pretty_hash = demangled.pretty_hash;
      name.raw_hash = demangled.raw_hash;
    }
    // The declaration as llvm-symbolizer reads it: a file index into the line table of the
    // unit holding the function (a DW_FORM_implicit_const one it cannot resolve).
    dwarf::DeclAttrs decl;
    chain.Decl(&decl);
    name.start_line = static_cast<uint32_t>(std::min<uint64_t>(decl.line, 0xffffffff));
    name.has_start_file = decl.has_file && !decl.file_implicit_const &&
                          decl.file_unit == state.function_unit && decl.file_index <= 0xffffffff;
    name.start_file = static_cast<uint32_t>(decl.file_index);
  }
  return name;
}

const std::string& DebugInfoSource::FilePath(UnitState& state, uint32_t file) {
  static const std::string kEmpty;
  if (state.line == nullptr) return kEmpty;
  if (file >= state.paths.size()) {
    if (file > state.line->files().size() + 1) return kEmpty;
    state.paths.resize(file + 1);
    state.path_state.resize(file + 1, 0);
  }
  if (state.path_state[file] == 0) {
    state.path_state[file] =
        state.line->FilePath(file, state.comp_dir, &state.paths[file],
                             /*comp_dir_before_dir0=*/true, options_.relative_paths)
            ? 1
            : 2;
  }
  return state.path_state[file] == 1 ? state.paths[file] : kEmpty;
}

void DebugInfoSource::AddUnitError(Error error) {
  std::lock_guard<std::mutex> lock(mu_);
  unit_errors_.push_back(std::move(error));
}

template <typename Work>
void DebugInfoSource::ForEachUnitOf(std::span<const uint64_t> vaddrs, unsigned threads,
                                    const Work& work) {
  EnsureLoaded();
  if (!main_) return;
  // (unit, position) sorted by unit then address: each unit's addresses are contiguous and
  // sorted, which is what a filtered FunctionTable::Build wants.
  struct Item {
    int32_t unit;
    uint32_t position;
  };
  std::vector<Item> items;
  items.reserve(vaddrs.size());
  for (size_t i = 0; i < vaddrs.size(); ++i) {
    int32_t index = dwarf::FindSegment(unit_map_, unit_index_, vaddrs[i]);
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

void DebugInfoSource::Prefetch(std::span<const uint64_t> vaddrs, unsigned threads) {
  if (!loaded_) PrebuildWhileStreaming(vaddrs, threads);
  ForEachUnitOf(vaddrs, threads,
                [](UnitState*, std::span<const uint64_t>, std::span<const uint32_t>) {});
}

void DebugInfoSource::LookupBatch(std::span<const uint64_t> vaddrs,
                                  const std::function<std::vector<SourceFrame>*(size_t)>& frames_of,
                                  unsigned threads) {
  if (!loaded_) PrebuildWhileStreaming(vaddrs, threads);
  ForEachUnitOf(
      vaddrs, threads,
      [&](UnitState* state, std::span<const uint64_t> wanted, std::span<const uint32_t> positions) {
        for (size_t k = 0; k < wanted.size(); ++k) {
          std::vector<SourceFrame>* frames = frames_of(positions[k]);
          if (state == nullptr || !LookupInUnit(*state, wanted[k], frames)) {
            frames->clear();
          }
        }
      });
}

bool DebugInfoSource::Lookup(uint64_t vaddr, std::vector<SourceFrame>* frames) {
  EnsureLoaded();
  int32_t unit_index = main_ ? dwarf::FindSegment(unit_map_, unit_index_, vaddr) : -1;
  UnitState* state = unit_index < 0 ? nullptr : EnsureUnit(static_cast<size_t>(unit_index));
  if (state == nullptr) {
    frames->clear();
    return false;
  }
  return LookupInUnit(*state, vaddr, frames);
}

void DebugInfoSource::LoadLocationLists() {
  // Only DATA and FRAME answers read location lists: their sections are read on the first
  // such request, not when the file is opened.
  if (!debug_file_ || locations_loaded_) return;
  locations_loaded_ = true;
  auto section = [&](const char* name) {
    Result<std::span<const uint8_t>> data = debug_file_->SectionData(name);
    return data ? *data : std::span<const uint8_t>();
  };
  main_->set_location_lists(section(".debug_loc"), section(".debug_loclists"));
}

bool DebugInfoSource::LookupVariable(uint64_t vaddr, DataDeclaration* out) {
  EnsureLoaded();
  if (!main_) return false;
  if (!variables_) {
    LoadLocationLists();
    // A skeleton unit's variables are in its split unit: opened as for CODE answers
    // (EnsureUnit → OpenSplitUnit: .dwp, then .dwo, with the skeleton's addresses).
    auto split_unit_of = [this](size_t index) -> std::pair<DwarfFile*, UnitInfo*> {
      UnitInfo& unit = main_->units()[index];
      if (!main_->ReadUnitDie(unit) || !IsSplit(unit) || index >= units_.size()) return {};
      UnitState* state = EnsureUnit(index);
      if (state == nullptr || state->function_file == nullptr ||
          state->function_file == main_.get()) {
        return {};
      }
      return {state->function_file, state->function_unit};
    };
    variables_ =
        std::make_unique<dwarf::VariableTable>(dwarf::VariableTable::Build(*main_, split_unit_of));
  }
  const dwarf::VariableTable::Entry* variable = variables_->Find(vaddr);
  dwarf::DeclAttrs decl;
  // Declarations moved by dwz into the supplementary file are followed there.
  if (variable == nullptr || variable->file == nullptr) return false;
  dwarf::FindDecl(*variable->file, variable->die_offset, &decl, /*follow_supplementary=*/true);
  if (decl.line == 0 || decl.line > UINT32_MAX) return false;
  *out = DataDeclaration();
  out->line = static_cast<uint32_t>(decl.line);
  out->file_form_implicit_const = decl.file_implicit_const;
  const UnitInfo* unit = decl.file_unit;
  if (decl.has_file && unit != nullptr && decl.file_file != nullptr) {
    const LineTable* line = DeclLineTable(*decl.file_file, *unit);
    // As llvm-symbolizer 16 writes it (DATA answers are LLVM 15+'s: no comp_dir twice).
    if (line == nullptr || !line->FilePath(decl.file_index, unit->comp_dir, &out->file, false)) {
      out->file.clear();
    }
  }
  return true;
}

void DebugInfoSource::LookupLocals(uint64_t vaddr, std::vector<FrameLocal>* out) {
  EnsureLoaded();
  int32_t unit_index = main_ ? dwarf::FindSegment(unit_map_, unit_index_, vaddr) : -1;
  UnitState* state = unit_index < 0 ? nullptr : EnsureUnit(static_cast<size_t>(unit_index));
  if (state == nullptr || state->function_file == nullptr) return;
  int32_t node = state->functions.Find(vaddr);
  if (state->functions.MayBeIncomplete(node) && CompleteUnit(*state)) {
    node = state->functions.Find(vaddr);
  }
  if (node < 0) return;
  LoadLocationLists();
  // Declaration files of a split unit are its .debug_line.dwo's, not the skeleton's table.
  const LineTable* decl_line = state->function_file == main_.get()
                                   ? state->line
                                   : DeclLineTable(*state->function_file, *state->function_unit);
  dwarf::ReadFrameLocals(*state->function_file,
                         state->functions.nodes()[static_cast<size_t>(node)].die_offset, decl_line,
                         state->comp_dir, out);
}

bool DebugInfoSource::LookupInUnit(UnitState& state, uint64_t vaddr,
                                   std::vector<SourceFrame>* frames) {
  // Frames of the previous call are reused (not cleared) so that their strings keep their
  // capacity: a warm lookup then copies names without allocating.
  size_t used = 0;
  auto next_frame = [&]() -> SourceFrame& {
    if (used == frames->size()) frames->emplace_back();
    SourceFrame& f = (*frames)[used++];
    ClearKeepingStorage(f);
    return f;
  };
  auto finish = [&](bool found) {
    frames->resize(used);
    return found;
  };
  int32_t node = state.functions.Find(vaddr);
  // A table built for other addresses of the unit may lack this one's function.
  if (state.functions.MayBeIncomplete(node) && CompleteUnit(state)) {
    node = state.functions.Find(vaddr);
  }
  const dwarf::LineRow* row = state.line ? state.line->Find(vaddr) : nullptr;
  if (node < 0 && row == nullptr) return finish(false);

  auto name_frame = [&](SourceFrame& frame, int32_t n) {
    if (n < 0) return;
    const ResolvedName& name = NodeName(state, n);
    frame.raw_function.assign(name.raw);
    frame.function.assign(name.pretty.empty() ? name.raw : name.pretty);
    if (name.has_start_file) frame.start_file.assign(FilePath(state, name.start_file));
    frame.start_line = name.start_line;
    frame.has_start_address = name.has_low_pc;
    frame.start_address = name.has_low_pc ? name.low_pc : 0;  // as an index answers
  };
  auto nodes = state.functions.nodes();
  if (!options_.inlines) {
    // Only the out-of-line function, with the line of the address itself.
    int32_t outer = node;
    while (outer >= 0 && nodes[static_cast<size_t>(outer)].inlined) {
      outer = nodes[static_cast<size_t>(outer)].parent;
    }
    SourceFrame& frame = next_frame();
    name_frame(frame, outer >= 0 ? outer : node);
    if (row != nullptr) {
      frame.file.assign(FilePath(state, row->file));
      frame.line = row->line;
      frame.column = row->column;
      frame.discriminator = state.line->Discriminator(row);
    }
    return finish(true);
  }
  // Innermost frame: the line row of the address. Each outer frame: the call site recorded
  // on the inlined subroutine it contains. The chain ends at the first out-of-line function.
  SourceFrame& first = next_frame();
  name_frame(first, node);
  if (row != nullptr) {
    first.file.assign(FilePath(state, row->file));
    first.line = row->line;
    first.column = row->column;
    first.discriminator = state.line->Discriminator(row);
  }
  int32_t current = node;
  size_t guard = 0;
  while (current >= 0 && nodes[static_cast<size_t>(current)].inlined && ++guard < 4096) {
    const dwarf::FunctionNode& inlined = nodes[static_cast<size_t>(current)];
    (*frames)[used - 1].inlined = true;
    SourceFrame& caller = next_frame();
    name_frame(caller, inlined.parent);
    caller.file.assign(FilePath(state, inlined.call_file));
    caller.line = inlined.call_line;
    caller.column = inlined.call_column;
    caller.discriminator = NodeName(state, current).call_discriminator;
    current = inlined.parent;
  }
  return finish(true);
}

bool DebugInfoSource::IsSplitUnit(size_t index) {
  EnsureLoaded();
  if (!main_ || index >= main_->units().size()) return false;
  UnitInfo& unit = main_->units()[index];
  return main_->ReadUnitDie(unit) && IsSplit(unit);
}

uint64_t DebugInfoSource::UnitSize(size_t index) {
  EnsureLoaded();
  if (!main_ || index >= main_->units().size()) return 0;
  const UnitInfo& unit = main_->units()[index];
  return unit.end - unit.offset;
}

DebugInfoSource::UnitTables DebugInfoSource::ExportUnit(size_t index) {
  UnitTables out;
  EnsureLoaded();
  if (!main_ || index >= units_.size()) return out;
  UnitState* state = EnsureUnit(index);
  if (state == nullptr) return out;
  CompleteUnit(*state);  // a table built earlier for a batch may be partial
  out.ok = true;
  out.segments = state->functions.segments();
  out.nodes = state->functions.nodes();
  out.raw_names.reserve(out.nodes.size());
  out.pretty_names.reserve(out.nodes.size());
  out.name_hashes.reserve(out.nodes.size());
  // Names are views of .debug_str, the demangle cache or (DW_FORM_string) .debug_info; the
  // last are copied, once each, to outlive the section.
  const std::span<const uint8_t> info = state->function_file->sections().info;
  std::unordered_map<const char*, std::string_view> copied;
  auto lasting = [&](std::string_view text) {
    const auto* at = reinterpret_cast<const uint8_t*>(text.data());
    if (text.empty() || at < info.data() || at >= info.data() + info.size()) return text;
    auto [it, added] = copied.try_emplace(text.data());
    if (added) it->second = state->exported_names.emplace_back(text);
    return it->second;
  };
  for (size_t n = 0; n < out.nodes.size(); ++n) {
    const ResolvedName& name = NodeName(*state, static_cast<int32_t>(n));
    std::string_view raw = lasting(name.raw);
    out.raw_names.push_back(raw);
    // An unmangled name is its own demangled form: then the lasting copy serves both.
    const bool pretty_is_raw = name.pretty.empty() || name.pretty.data() == name.raw.data();
    out.pretty_names.push_back(pretty_is_raw ? raw : name.pretty);
    out.name_hashes.push_back({pretty_is_raw ? name.raw_hash : name.pretty_hash, name.raw_hash});
  }
  out.starts.resize(out.nodes.size());
  out.line = state->line;
  if (state->line != nullptr) {
    // FilePath answers file indexes up to files().size() + 1 (past that: unknown).
    size_t count = state->line->files().size() + 2;
    for (size_t f = 0; f < count; ++f) FilePath(*state, static_cast<uint32_t>(f));
    for (size_t f = 0; f < count; ++f) {
      out.paths.push_back(f < state->paths.size() && state->path_state[f] == 1
                              ? std::string_view(state->paths[f])
                              : std::string_view());
    }
  }
  for (size_t n = 0; n < out.nodes.size(); ++n) {
    const ResolvedName& name = NodeName(*state, static_cast<int32_t>(n));
    UnitTables::NodeStart& start = out.starts[n];
    if (name.has_start_file && name.start_file < out.paths.size()) {
      start.file = out.paths[name.start_file];
      start.file_index = name.start_file;
    }
    start.line = name.start_line;
    start.call_discriminator = name.call_discriminator;
  }
  // An index build asks each name once: the unit's cache of them goes now (tens of MB over a
  // big C++ library, all of it new pages); a later lookup resolves the names it needs again.
  std::vector<ResolvedName>().swap(state->names);
  state->names_by_origin = FlatTable<UnitState::OriginSlot>();
  return out;
}

bool DebugInfoSource::ReleaseExportedSections() {
  // Only a debug file this source opened itself: the binary's sections may have other
  // readers (the symbolizer's own DWARF), and spans of them outlive this call.
  if (!main_ || !debug_file_ || debug_file_ == binary_ || debug_file_.use_count() != 1) {
    return false;
  }
  for (const char* name : {".debug_info", ".debug_line", ".debug_rnglists", ".debug_ranges",
                           ".debug_abbrev", ".debug_aranges", ".debug_loclists", ".debug_loc"}) {
    if (const ElfSection* section = debug_file_->FindSection(name)) {
      debug_file_->DiscardDecompressed(*section);
    }
  }
  retired_ = true;
  return true;
}

void DebugInfoSource::ReleaseUnitFunctions(size_t index) {
  if (index >= units_.size() || !units_[index] || !units_[index]->ok) return;
  UnitState& state = *units_[index];
  state.functions = dwarf::FunctionTable::Unbuilt();
  std::vector<ResolvedName>().swap(state.names);  // node numbers: of the table just freed
  state.names_by_origin = FlatTable<UnitState::OriginSlot>();
}

std::vector<std::shared_ptr<ElfFile>> DebugInfoSource::files_read() const {
  std::vector<std::shared_ptr<ElfFile>> out;
  if (debug_file_ && debug_file_ != binary_) out.push_back(debug_file_);
  if (supplementary_file_) out.push_back(supplementary_file_);
  for (const auto& f : split_files_) out.push_back(f);
  if (dwp_ && dwp_->elf) out.push_back(dwp_->elf);
  return out;
}

size_t DebugInfoSource::file_heap_bytes() const {
  size_t total = 0;
  if (debug_file_ && debug_file_ != binary_) total += debug_file_->heap_bytes();
  if (supplementary_file_) total += supplementary_file_->heap_bytes();
  for (const auto& f : split_files_) total += f->heap_bytes();
  return total;
}

size_t DebugInfoSource::memory_bytes() const {
  size_t total = unit_map_.capacity() * sizeof(dwarf::AddressSegment) + unit_index_.memory_bytes();
  if (main_) total += main_->memory_bytes();
  if (supplementary_) total += supplementary_->memory_bytes();
  for (const auto& d : split_dwarf_) total += d->memory_bytes();
  for (const auto& u : units_) {
    if (!u) continue;
    total += sizeof(UnitState) + u->functions.memory_bytes() +
             u->names.capacity() * sizeof(ResolvedName) + u->names_by_origin.memory_bytes();
    for (const std::string& p : u->paths) total += sizeof(std::string) + p.capacity();
  }
  for (const auto& [offset, table] : line_tables_) {
    if (table) total += sizeof(LineTable) + table->memory_bytes();
  }
  for (const auto& [key, table] : other_line_tables_) {
    if (table) total += sizeof(LineTable) + table->memory_bytes();
  }
  total += demangled_.memory_bytes();
  if (variables_) total += sizeof(dwarf::VariableTable) + variables_->memory_bytes();
  return total;
}

}  // namespace stacksym
