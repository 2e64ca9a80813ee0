#include "dwarf/debug_info_source.h"

#include "dwarf/die_chain.h"
#include "dwarf/frame_locals.h"

namespace stacksym::dwarf {

using dwarf::DwarfFile;
using dwarf::LineTable;
using dwarf::UnitInfo;

DebugInfoSource::~DebugInfoSource() = default;

Result<std::unique_ptr<DebugInfoSource>> DebugInfoSource::Open(std::shared_ptr<ElfFile> binary,
                                                               const dwarf::DwarfOptions& options,
                                                               const OpenTuning& tuning) {
  Result<std::unique_ptr<dwarf::DebugFiles>> files =
      dwarf::DebugFiles::Open(std::move(binary), options.search, tuning.stream_info_from);
  if (!files) return std::move(files).error();
  if (!*files) return std::unique_ptr<DebugInfoSource>();
  std::unique_ptr<DebugInfoSource> source(new DebugInfoSource());
  source->options_ = options;
  source->files_ = std::move(*files);
  source->units_ = std::make_unique<dwarf::UnitCache>(*source->files_, options);
  // A streaming .debug_info is scanned once it is complete (UnitCache::EnsureLoaded).
  if (source->files_->info_stream() != nullptr) return source;
  if (Result<void> r = source->units_->Init(); !r) {
    return std::move(r).error().WithFile(source->path());
  }
  return source;
}

Result<std::unique_ptr<DebugInfoSource>> DebugInfoSource::FromSections(
    const dwarf::DwarfSections& sections, const dwarf::DwarfOptions& options) {
  std::unique_ptr<DebugInfoSource> source(new DebugInfoSource());
  source->options_ = options;
  source->files_ = dwarf::DebugFiles::FromSections(sections);
  source->units_ = std::make_unique<dwarf::UnitCache>(*source->files_, options);
  if (Result<void> r = source->units_->Init(); !r) return std::move(r).error();
  return source;
}

void DebugInfoSource::LookupBatch(std::span<const uint64_t> vaddrs,
                                  const std::function<std::vector<SourceFrame>*(size_t)>& frames_of,
                                  unsigned threads) {
  auto answer = [&](dwarf::UnitState* state, std::span<const uint64_t> wanted,
                    std::span<const uint32_t> positions) {
    for (size_t k = 0; k < wanted.size(); ++k) {
      std::vector<SourceFrame>* frames = frames_of(positions[k]);
      if (state == nullptr || !LookupInUnit(*state, wanted[k], frames)) {
        frames->clear();
      }
    }
  };
  units_->ForEachUnitOf(vaddrs, threads, answer);
}

bool DebugInfoSource::Lookup(uint64_t vaddr, std::vector<SourceFrame>* frames) {
  dwarf::UnitState* state = units_->UnitFor(vaddr);
  if (state == nullptr) {
    frames->clear();
    return false;
  }
  return LookupInUnit(*state, vaddr, frames);
}

const dwarf::VariableTable* DebugInfoSource::Variables() {
  DwarfFile* main = units_->main();
  if (!main) return nullptr;
  if (!variables_) {
    files_->LoadLocationLists();
    // A skeleton unit's variables are in its split unit: opened as for CODE answers
    // (UnitCache::EnsureUnit → DebugFiles::OpenSplitUnit: .dwp, then .dwo, with the
    // skeleton's addresses).
    auto split_unit_of = [this, main](size_t index) -> std::pair<DwarfFile*, UnitInfo*> {
      UnitInfo& unit = main->units()[index];
      if (!main->ReadUnitDie(unit) || !dwarf::UnitCache::IsSplit(unit)) return {};
      dwarf::UnitState* state = units_->EnsureUnit(index);
      if (state == nullptr || state->function_file == nullptr || state->function_file == main) {
        return {};
      }
      return {state->function_file, state->function_unit};
    };
    variables_ =
        std::make_unique<dwarf::VariableTable>(dwarf::VariableTable::Build(*main, split_unit_of));
  }
  return variables_.get();
}

bool DebugInfoSource::LookupVariable(uint64_t vaddr, DataDeclaration* out) {
  const dwarf::VariableTable* variables = Variables();
  return variables != nullptr && Declaration(variables->Find(vaddr), out);
}

bool DebugInfoSource::LookupVariableAtOffset(
    uint64_t offset, const std::function<std::optional<uint64_t>(uint64_t)>& offset_of,
    DataDeclaration* out) {
  const dwarf::VariableTable* variables = Variables();
  if (variables == nullptr) return false;
  const dwarf::VariableTable::Entry* best = nullptr;
  uint64_t best_start = 0;
  for (const dwarf::VariableTable::Entry& v : variables->entries()) {
    std::optional<uint64_t> start = offset_of(v.low);
    if (!start || *start > offset) continue;
    // Among equal starts the later DIE, as LLVM's map keeps the last one written.
    if (best != nullptr &&
        (*start < best_start || (*start == best_start && v.die_offset < best->die_offset)))
      continue;
    best = &v;
    best_start = *start;
  }
  if (best == nullptr || offset - best_start >= best->high - best->low) return false;
  return Declaration(best, out);
}

bool DebugInfoSource::Declaration(const dwarf::VariableTable::Entry* variable,
                                  DataDeclaration* out) {
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
    const LineTable* line = units_->DeclLineTable(*decl.file_file, *unit);
    // As llvm-symbolizer 16 writes it (LineTable::FilePath's one rule).
    if (line == nullptr || !line->FilePath(decl.file_index, unit->comp_dir, &out->file)) {
      out->file.clear();
    }
  }
  return true;
}

std::optional<std::string_view> DebugInfoSource::EmbeddedSource(uint64_t vaddr) {
  dwarf::UnitState* state = units_->UnitFor(vaddr);
  if (state == nullptr || state->line == nullptr) return std::nullopt;
  const dwarf::LineRow* row = state->line->Find(vaddr);
  if (row == nullptr) return std::nullopt;
  return state->line->FileSource(row->file);
}

dwarf::FunctionRun DebugInfoSource::OutermostRun(uint64_t vaddr) {
  dwarf::UnitState* state = units_->UnitFor(vaddr);
  if (state == nullptr) return {};
  // A table built for some addresses (LookupBatch) leaves out the inlined code they are not
  // in, which would cut the run short: the run is found in the whole unit's table.
  if (state->functions.coverage() != dwarf::FunctionTable::Coverage::kFull &&
      !units_->CompleteUnit(*state)) {
    return {};
  }
  return state->functions.OutermostRun(vaddr);
}

void DebugInfoSource::LookupLocals(uint64_t vaddr, std::vector<FrameLocal>* out) {
  dwarf::UnitState* state = units_->UnitFor(vaddr);
  if (state == nullptr || state->function_file == nullptr) return;
  int32_t node = state->functions.Find(vaddr);
  if (state->functions.MayBeIncomplete(node) && units_->CompleteUnit(*state)) {
    node = state->functions.Find(vaddr);
  }
  if (node < 0) return;
  files_->LoadLocationLists();
  // Declaration files of a split unit are its .debug_line.dwo's, not the skeleton's table.
  const LineTable* decl_line =
      state->function_file == files_->main()
          ? state->line
          : units_->DeclLineTable(*state->function_file, *state->function_unit);
  dwarf::ReadFrameLocals(*state->function_file,
                         state->functions.nodes()[static_cast<size_t>(node)].die_offset, decl_line,
                         state->comp_dir, out);
}

bool DebugInfoSource::LookupInUnit(dwarf::UnitState& state, uint64_t vaddr,
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
  if (state.functions.MayBeIncomplete(node) && units_->CompleteUnit(state)) {
    node = state.functions.Find(vaddr);
  }
  const dwarf::LineRow* row = state.line ? state.line->Find(vaddr) : nullptr;
  if (node < 0 && row == nullptr) return finish(false);

  auto name_frame = [&](SourceFrame& frame, int32_t n) {
    if (n < 0) return;
    const dwarf::ResolvedName& name = units_->NodeName(state, n);
    frame.raw_function.assign(name.raw);
    frame.function.assign(name.pretty.empty() ? name.raw : name.pretty);
    if (name.has_start_file) frame.start_file.assign(units_->FilePath(state, name.start_file));
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
      frame.file.assign(units_->FilePath(state, row->file));
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
    first.file.assign(units_->FilePath(state, row->file));
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
    caller.file.assign(units_->FilePath(state, inlined.call_file));
    caller.line = inlined.call_line;
    caller.column = inlined.call_column;
    caller.discriminator = units_->NodeName(state, current).call_discriminator;
    current = inlined.parent;
  }
  return finish(true);
}

size_t DebugInfoSource::memory_bytes() const {
  size_t total = files_->memory_bytes() + units_->memory_bytes();
  if (variables_) total += sizeof(dwarf::VariableTable) + variables_->memory_bytes();
  return total;
}

}  // namespace stacksym::dwarf
