// UnitCache while a big compressed .debug_info is still being decompressed (on a background
// thread, DebugFiles::info_stream()): the cores would otherwise wait for the whole section, so
// each unit's function table is built as soon as its bytes are final, and handed to the unit
// once the section is whole and scanned.
#include "dwarf/unit_cache.h"

namespace stacksym::dwarf {

void UnitCache::PrebuildEveryUnit(unsigned threads) {
  if (!loaded_) PrebuildWhileStreaming({}, threads, true);
}

void UnitCache::PrebuildWhileStreaming(std::span<const uint64_t> vaddrs, unsigned threads,
                                       bool every_unit) {
  const elf::SectionStream& stream = *files_.info_stream();
  std::span<const uint8_t> info = stream.buffer();
  std::vector<uint64_t> sorted(vaddrs.begin(), vaddrs.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  // Units are taken in the order their bytes become final. Which addresses a unit holds:
  // .debug_aranges where it names the unit (as BuildUnitMap decides, so the tables are built
  // for exactly the addresses the lookups will bring), else the unit DIE's own ranges. The
  // unit list and map proper come after the whole section.
  static const std::vector<ArangeEntry> kNone;
  const std::vector<ArangeEntry>& aranges = every_unit ? kNone : Aranges();
  std::vector<uint64_t> aranged;  // unit offsets .debug_aranges names, sorted
  for (const ArangeEntry& e : aranges) aranged.push_back(e.unit_offset);
  std::sort(aranged.begin(), aranged.end());
  aranged.erase(std::unique(aranged.begin(), aranged.end()), aranged.end());
  std::vector<std::vector<uint64_t>> by_aranges(aranged.size());  // sorted addresses per unit
  {
    std::vector<IdRange> ranges;
    for (const ArangeEntry& e : aranges) {
      auto it = std::lower_bound(aranged.begin(), aranged.end(), e.unit_offset);
      ranges.push_back({e.low, e.high, static_cast<int32_t>(it - aranged.begin())});
    }
    // Lowest offset wins where ranges overlap, as in BuildUnitMap (units are in offset order).
    std::vector<AddressSegment> map = FlattenByLowestId(std::move(ranges));
    AddressIndex index;
    IndexSegments(map, &index);
    for (uint64_t a : sorted) {
      int32_t id = FindSegment(map, index, a);
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
    uint64_t unit_end = DwarfFile::UnitEnd(info.first(have), cursor);
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
    Result<UnitInfo> header = DwarfFile::ParseUnitHeader(info.first(end), offset);
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
    state->function_file = main_;
    state->prebuilt = true;
    // The line table too, once the strings its file names may use are final.
    if (unit.has_stmt_list && (files_.str_stream() == nullptr || files_.str_stream()->done())) {
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

}  // namespace stacksym::dwarf
