#include "dwarf/unit_cache.h"

#include <utility>

#include "dwarf/die_chain.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf/dwarf_error.h"

namespace stacksym::dwarf {

UnitCache::UnitCache(DebugFiles& files, const DwarfOptions& options)
    : files_(files),
      options_(options),
      main_(files.main()),
      loaded_(files.info_stream() == nullptr) {}

UnitCache::~UnitCache() = default;

Result<void> UnitCache::Init() {
  Result<void> scanned = scan_resume_ ? main_->FinishUnitScan(*scan_resume_) : main_->ScanUnits();
  // A corrupt header ends the scan; the units before it remain usable.
  if (!scanned) {
    if (main_->units().empty()) return scanned;
    unit_errors_.push_back(std::move(scanned).error());
  }
  units_.resize(main_->units().size());
  // Tables built while the units streamed in point at their units, which the rest of the
  // scan may have moved.
  for (size_t i = 0; i < units_.size(); ++i) {
    if (units_[i] && units_[i]->function_file == main_) {
      units_[i]->function_unit = &main_->units()[i];
    }
  }
  return BuildUnitMap();
}

void UnitCache::EnsureLoaded() {
  if (loaded_) return;
  loaded_ = true;
  Result<void> r = files_.FinishStreams();
  if (r) r = Init();
  if (!r) {
    // As if the file had no DWARF: every address falls back to the symbol table.
    unit_errors_.push_back(std::move(r).error().WithFile(files_.path()));
    main_ = nullptr;
    files_.DropMain();
  }
}

DwarfFile* UnitCache::main() {
  EnsureLoaded();
  return main_;
}

size_t UnitCache::unit_count() {
  EnsureLoaded();
  return main_ ? main_->units().size() : 0;
}

const std::vector<Error>& UnitCache::unit_errors() {
  EnsureLoaded();
  return unit_errors_;
}

std::vector<std::string> UnitCache::TakeWarnings() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(warnings_, {});
}

const std::vector<ArangeEntry>& UnitCache::Aranges() {
  if (!aranges_) {
    aranges_.emplace();
    std::vector<std::string> warnings;
    Result<void> parsed = ParseAranges(main_->sections().aranges, &*aranges_, &warnings);
    std::lock_guard<std::mutex> lock(mu_);
    // What was read before a corrupt entry is still used.
    if (!parsed) unit_errors_.push_back(std::move(parsed).error());
    for (std::string& w : warnings) warnings_.push_back(std::move(w));
  }
  return *aranges_;
}

Result<void> UnitCache::BuildUnitMap() {
  std::vector<UnitInfo>& units = main_->units();
  std::vector<IdRange> ranges;
  std::vector<uint8_t> covered(units.size(), 0);
  for (const ArangeEntry& e : Aranges()) {
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
  unit_map_ = FlattenByLowestId(std::move(ranges));
  unit_map_.shrink_to_fit();
  IndexSegments(unit_map_, &unit_index_);
  return {};
}

const LineTable* UnitCache::DeclLineTable(DwarfFile& file, const UnitInfo& unit) {
  if (&file == main_) {
    return unit.has_stmt_list ? LineTableAt(unit.stmt_list, unit.ctx.address_size) : nullptr;
  }
  // A split unit's declarations name files of its .debug_line.dwo (a header without rows, at
  // the start of the unit's contribution: gcc), or where it has none (clang), of its
  // skeleton's line table; a supplementary file's partial units have their own
  // DW_AT_stmt_list.
  uint64_t offset = 0;
  if (file.is_dwo() && file.sections().line.empty()) {
    const UnitInfo* skeleton = files_.SkeletonOf(&file);
    if (skeleton == nullptr || !skeleton->has_stmt_list) return nullptr;
    return LineTableAt(skeleton->stmt_list, skeleton->ctx.address_size);
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

std::unique_ptr<LineTable> UnitCache::ParseLineTable(const DwarfFile& file, uint64_t offset,
                                                     uint8_t address_size,
                                                     uint64_t str_offsets_base) {
  LineSections ls;
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

const LineTable* UnitCache::LineTableAt(uint64_t offset, uint8_t address_size) {
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

UnitState* UnitCache::UnitFor(uint64_t vaddr) {
  EnsureLoaded();
  int32_t unit_index = main_ ? FindSegment(unit_map_, unit_index_, vaddr) : -1;
  return unit_index < 0 ? nullptr : EnsureUnit(static_cast<size_t>(unit_index));
}

UnitState* UnitCache::EnsureUnit(size_t index, std::span<const uint64_t> wanted) {
  std::unique_ptr<UnitState>& slot = units_[index];
  if (!slot && std::binary_search(released_units_.begin(), released_units_.end(),
                                  main_->units()[index].offset)) {
    // AnswerWhileStreaming gives back only units it answered every address of: reaching one
    // is a bug, said rather than read as zeros.
    AddUnitError(MakeError(ErrorCode::kInternal, "unit at " + HexU64(main_->units()[index].offset) +
                                                     " was asked after its bytes were given back"));
    return nullptr;
  }
  if (!slot) {
    slot = BuildUnit(main_->units()[index], wanted);
  } else if (slot->prebuilt) {
    FinishPrebuilt(*slot, main_->units()[index]);
  }
  return slot->ok ? slot.get() : nullptr;
}

void UnitCache::FinishPrebuilt(UnitState& state, UnitInfo& unit) {
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

std::unique_ptr<UnitState> UnitCache::BuildUnit(UnitInfo& unit, std::span<const uint64_t> wanted) {
  auto state = std::make_unique<UnitState>();
  parsed_units_.fetch_add(1, std::memory_order_relaxed);
  if (Result<void> r = main_->ReadUnitDie(unit); !r) {
    AddUnitError(std::move(r).error());
    return state;  // not ok
  }
  state->comp_dir = unit.comp_dir;
  bool own_functions = !IsSplit(unit);
  if (!own_functions) {
    Result<void> r = BuildSplitFunctions(unit, state.get());
    if (!r) {
      // Without the split object its skeleton answers, as LLVM's does: the line table, and
      // the functions it describes itself (clang's -fsplit-dwarf-inlining puts the inline
      // tree there, named by DW_AT_name only), if any.
      AddUnitError(std::move(r).error());
      own_functions = true;
    }
  }
  if (own_functions) {
    Result<FunctionTable> functions = FunctionTable::Build(*main_, unit, wanted);
    if (functions) {
      state->functions = std::move(*functions);
      state->function_file = main_;
      state->function_unit = &unit;
    } else {
      AddUnitError(std::move(functions).error().WithFile(files_.path()));
    }
  }
  if (unit.has_stmt_list) state->line = LineTableAt(unit.stmt_list, unit.ctx.address_size);
  state->ok = true;
  return state;
}

Result<void> UnitCache::BuildSplitFunctions(UnitInfo& skeleton, UnitState* state) {
  std::vector<Error> notes;
  Result<DebugFiles::SplitObject> split = files_.OpenSplitUnit(skeleton, &notes);
  for (Error& note : notes) AddUnitError(std::move(note));
  if (!split) return std::move(split).error();
  Result<FunctionTable> functions = FunctionTable::Build(*split->dwarf, *split->unit);
  if (!functions) return std::move(functions).error().WithFile(split->elf->path());
  state->functions = std::move(*functions);
  state->function_unit = split->unit;
  state->function_file = files_.Keep(std::move(*split), skeleton);
  return {};
}

bool UnitCache::IsSplit(const UnitInfo& unit) {
  // The attribute, not its string: this is also asked before the strings are read.
  return unit.unit_type == DW_UT_skeleton || unit.has_dwo_name;
}

bool UnitCache::CompleteUnit(UnitState& state) {
  if (state.functions.coverage() == FunctionTable::Coverage::kFull || state.completion_failed ||
      state.function_file == nullptr) {
    return false;
  }
  Result<FunctionTable> full = FunctionTable::Build(*state.function_file, *state.function_unit);
  if (!full) {
    state.completion_failed = true;
    AddUnitError(std::move(full).error().WithFile(files_.path()));
    return false;
  }
  state.functions = std::move(*full);
  state.names.clear();  // node numbers changed
  state.names_by_origin = FlatTable<UnitState::OriginSlot>();
  return true;
}

const ResolvedName& UnitCache::NodeName(UnitState& state, int32_t node) {
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
    const FunctionNode& node_record = state.functions.nodes()[i];
    // What the walk saw of the DIE decides, as its own attributes would below (without
    // reading it again), unless the DIE's low_pc is wanted: an instance that describes
    // nothing itself is named as its origin, by the origin's first instance or, for the
    // first, by the chain from the origin on.
    const bool origin_decides =
        !options_.start_addresses &&
        (node_record.flags & (FunctionNode::kDescribesItself | FunctionNode::kOriginElsewhere)) ==
            0 &&
        node_record.origin != 0;
    if (origin_decides) {
      name.call_discriminator = node_record.call_discriminator;
      UnitState::OriginSlot& slot = origin_slot(node_record.origin);
      if (!slot.empty()) return take_shared(slot);
      slot = {MixHash(node_record.origin), node_record.origin, static_cast<int32_t>(i)};
      state.names_by_origin.Filled();
    }
    // Name and declaration come from one walk of the DIE's origin chain, each DIE read once.
    DieChain chain(*state.function_file,
                   origin_decides ? node_record.origin : node_record.die_offset);
    if (!origin_decides && chain.start_read()) {
      const SubroutineStart& start = chain.start();
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
    DeclAttrs decl;
    chain.Decl(&decl);
    name.start_line = static_cast<uint32_t>(std::min<uint64_t>(decl.line, 0xffffffff));
    name.has_start_file = decl.has_file && !decl.file_implicit_const &&
                          decl.file_unit == state.function_unit && decl.file_index <= 0xffffffff;
    name.start_file = static_cast<uint32_t>(decl.file_index);
  }
  return name;
}

const std::string& UnitCache::FilePath(UnitState& state, uint32_t file) {
  static const std::string kEmpty;
  if (state.line == nullptr) return kEmpty;
  if (file >= state.paths.size()) {
    if (file > state.line->files().size() + 1) return kEmpty;
    state.paths.resize(file + 1);
    state.path_state.resize(file + 1, 0);
  }
  if (state.path_state[file] == 0) {
    state.path_state[file] =
        state.line->FilePath(file, state.comp_dir, &state.paths[file], options_.relative_paths) ? 1
                                                                                                : 2;
  }
  return state.path_state[file] == 1 ? state.paths[file] : kEmpty;
}

void UnitCache::AddUnitError(Error error) {
  std::lock_guard<std::mutex> lock(mu_);
  unit_errors_.push_back(std::move(error));
}

size_t UnitCache::memory_bytes() const {
  size_t total = unit_map_.capacity() * sizeof(AddressSegment) + unit_index_.memory_bytes();
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
  return total;
}

}  // namespace stacksym::dwarf
