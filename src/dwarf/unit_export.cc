// UnitCache for an index build (src/index): every unit's tables in full, with every name and
// path resolved (ExportUnit), and the memory the build no longer needs given back unit by unit
// and, at the end, section by section.
#include <unordered_map>

#include "dwarf/unit_cache.h"

namespace stacksym::dwarf {

bool UnitCache::IsSplitUnit(size_t index) {
  EnsureLoaded();
  if (!main_ || index >= main_->units().size()) return false;
  UnitInfo& unit = main_->units()[index];
  return main_->ReadUnitDie(unit) && IsSplit(unit);
}

uint64_t UnitCache::UnitSize(size_t index) {
  EnsureLoaded();
  if (!main_ || index >= main_->units().size()) return 0;
  const UnitInfo& unit = main_->units()[index];
  return unit.end - unit.offset;
}

UnitTables UnitCache::ExportUnit(size_t index) {
  UnitTables out;
  if (!in_stream_) EnsureLoaded();  // (while streaming: a unit ExportWhileStreaming handed over)
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
  // A split unit whose .dwo could not be had has no function DIEs (its line table still
  // answers): no names to export, and no file to keep them in.
  const std::span<const uint8_t> info = state->function_file != nullptr
                                            ? state->function_file->sections().info
                                            : std::span<const uint8_t>();
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

void UnitCache::ReleaseUnitFunctions(size_t index) {
  if (index >= units_.size() || !units_[index] || !units_[index]->ok) return;
  UnitState& state = *units_[index];
  state.functions = FunctionTable::Unbuilt();
  std::vector<ResolvedName>().swap(state.names);  // node numbers: of the table just freed
  state.names_by_origin = FlatTable<UnitState::OriginSlot>();
}

void UnitCache::ReleaseLineRows(const LineTable* line) {
  // Owned by line_tables_ (not const there): handed out read-only to the exports.
  if (in_stream_ && line != nullptr) const_cast<LineTable*>(line)->ReleaseRows();
}

}  // namespace stacksym::dwarf
