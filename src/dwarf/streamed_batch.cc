// UnitCache::AnswerWhileStreaming: a batch answered unit by unit while a big compressed
// .debug_info is being decompressed, each unit's bytes given back once its addresses are
// answered. The decompressed section is most of a big binary's DWARF (154 of 240 MB on
// libceph-common): held whole, it alone is most of the peak memory of a first symbolization.
//
// Which unit answers an address must be the one the unit map gives after the stream
// (BuildUnitMap: .debug_aranges where it names the unit, else the unit DIE's ranges; the
// lowest unit wins where units overlap), or an address could be answered by one unit and
// looked up again in another whose bytes are gone. Units are taken in offset order under one
// lock, and each claims the addresses it covers that no unit before it claimed: the same
// choice. A unit that cannot be answered here (a split unit, tables that fail to build)
// keeps its bytes and its addresses for the lookups after the stream.
#include <set>

#include "dwarf/unit_cache.h"

namespace stacksym::dwarf {

namespace {

// How far the decoder may run ahead of the first unit under way: enough that it rarely
// waits for the readers, small against the section.
constexpr size_t kDecodeWindow = size_t{32} << 20;

struct BatchItem {
  uint64_t vaddr;
  uint32_t position;
};

// A unit taken from the stream: where it lies, and the batch's addresses it answers.
struct TakenUnit {
  UnitInfo header;
  UnitInfo* scanned = nullptr;  // in the file's units (a compile unit of a known version)
  bool readable = false;        // a compile unit of a known version whose unit DIE reads
  std::vector<uint64_t> vaddrs;
  std::vector<uint32_t> positions;
};

}  // namespace

bool UnitCache::AnswerWhileStreaming(std::span<const uint64_t> vaddrs, unsigned threads,
                                     const UnitWork& work) {
  const elf::SectionStream& stream = *files_.info_stream();
  if (!stream.releasable() || !files_.OwnsSections() || main_->MayReferAcrossUnits() ||
      vaddrs.size() > UINT32_MAX) {
    return false;
  }
  const std::span<const uint8_t> info = stream.buffer();
  std::vector<BatchItem> items(vaddrs.size());
  for (size_t i = 0; i < vaddrs.size(); ++i) items[i] = {vaddrs[i], static_cast<uint32_t>(i)};
  std::sort(items.begin(), items.end(),
            [](const BatchItem& a, const BatchItem& b) { return a.vaddr < b.vaddr; });
  std::vector<uint8_t> claimed(items.size(), 0);
  // .debug_aranges' entries by the unit they name.
  const std::vector<ArangeEntry>& aranges = Aranges();
  std::vector<uint32_t> by_unit(aranges.size());
  for (uint32_t k = 0; k < by_unit.size(); ++k) by_unit[k] = k;
  std::stable_sort(by_unit.begin(), by_unit.end(), [&](uint32_t a, uint32_t b) {
    return aranges[a].unit_offset < aranges[b].unit_offset;
  });
  answered_.assign(vaddrs.size(), 0);
  // DIE references are resolved through the file's units (FindUnit): they are published as
  // they are taken. Room for the units .debug_aranges names, and more; past it, the rest is
  // left to the lookups after the stream.
  size_t named_units = 0;
  for (size_t k = 0; k < by_unit.size(); ++k) {
    named_units += k == 0 || aranges[by_unit[k]].unit_offset != aranges[by_unit[k - 1]].unit_offset;
  }
  main_->StartUnitScan(named_units * 2 + 1024);

  std::mutex mu;  // the fields below
  uint64_t cursor = 0;
  bool stop = false;
  std::multiset<uint64_t> under_way;  // offsets of units taken and not done
  std::vector<uint64_t> released;     // offsets of units whose bytes were given back
  auto hold_decoder = [&] {           // with mu held
    uint64_t first = under_way.empty() ? cursor : *under_way.begin();
    stream.Limit(static_cast<size_t>(first) + kDecodeWindow);
  };
  auto claim = [&](uint64_t low, uint64_t high, TakenUnit& unit) {
    auto it = std::lower_bound(items.begin(), items.end(), low,
                               [](const BatchItem& e, uint64_t v) { return e.vaddr < v; });
    for (; it != items.end() && it->vaddr < high; ++it) {
      size_t k = static_cast<size_t>(it - items.begin());
      if (claimed[k]) continue;
      claimed[k] = 1;
      unit.vaddrs.push_back(it->vaddr);
      unit.positions.push_back(it->position);
    }
  };
  // The next unit in offset order, with its claims (mu held); false at the end, or at a
  // header the scan after the stream stops at too.
  auto take_next = [&](TakenUnit& unit) {
    if (stop || cursor >= info.size()) return false;
    hold_decoder();
    size_t have = stream.WaitFor(std::min<uint64_t>(cursor + 12, info.size()));
    uint64_t end = DwarfFile::UnitEnd(info.first(have), cursor);
    if (end == 0 || end > info.size()) return stop = true, false;
    stream.Limit(static_cast<size_t>(end));  // a unit bigger than the window
    if (stream.WaitFor(static_cast<size_t>(end)) < end) return stop = true, false;
    Result<UnitInfo> header = DwarfFile::ParseUnitHeader(info.first(end), cursor);
    if (!header) return stop = true, false;
    unit = TakenUnit();
    unit.header = *header;
    if (header->known_version()) {
      unit.scanned = main_->AddScannedUnit(*header);
      if (unit.scanned == nullptr) return stop = true, false;  // the room is full
    }
    cursor = end;
    under_way.insert(header->offset);
    if (!header->known_version() || header->is_type_unit()) return true;  // covers nothing
    UnitInfo die = *header;  // (strings may not be final yet)
    unit.readable = static_cast<bool>(main_->ReadUnitDieWithoutStrings(die));
    unit.header.die_end = die.die_end;
    auto named =
        std::lower_bound(by_unit.begin(), by_unit.end(), header->offset,
                         [&](uint32_t k, uint64_t o) { return aranges[k].unit_offset < o; });
    if (named != by_unit.end() && aranges[*named].unit_offset == header->offset) {
      for (; named != by_unit.end() && aranges[*named].unit_offset == header->offset; ++named) {
        claim(aranges[*named].low, aranges[*named].high, unit);
      }
    } else if (unit.readable) {
      std::vector<AddressRange> ranges;
      if (main_->UnitRanges(die, &ranges)) {
        for (const AddressRange& r : ranges) claim(r.low, r.high, unit);
      }
    }
    return true;
  };
  // Answers the unit's addresses; false when they are left to the lookups after the stream.
  auto answer = [&](TakenUnit& taken) {
    const elf::SectionStream* strings = files_.str_stream();
    if (strings != nullptr && !strings->Wait()) return false;
    UnitInfo& unit = *taken.scanned;
    if (!taken.readable || !main_->ReadUnitDie(unit) || IsSplit(unit)) return false;
    std::vector<size_t> order(taken.vaddrs.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return taken.vaddrs[a] < taken.vaddrs[b]; });
    std::vector<uint64_t> wanted(order.size());
    std::vector<uint32_t> positions(order.size());
    for (size_t k = 0; k < order.size(); ++k) {
      wanted[k] = taken.vaddrs[order[k]];
      positions[k] = taken.positions[order[k]];
    }
    Result<FunctionTable> functions = FunctionTable::Build(*main_, unit, wanted);
    if (!functions) return false;  // the lookups after the stream try again, and say why
    parsed_units_.fetch_add(1, std::memory_order_relaxed);
    UnitState state;
    state.functions = std::move(*functions);
    state.function_file = main_;
    state.function_unit = &unit;
    state.comp_dir = unit.comp_dir;
    if (unit.has_stmt_list) state.line = LineTableAt(unit.stmt_list, unit.ctx.address_size);
    state.line_read = true;
    state.ok = true;
    work(&state, wanted, positions);
    for (uint32_t p : positions) answered_[p] = 1;
    return true;
  };
  RunOnThreads(ThreadCount(threads, SIZE_MAX), [&](unsigned) {
    TakenUnit unit;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!take_next(unit)) break;
      }
      const UnitInfo& h = unit.header;
      bool done = unit.readable && (unit.vaddrs.empty() || answer(unit));
      // The header and unit DIE stay: the scan and the unit map after the stream read them.
      if (done) stream.Release(static_cast<size_t>(h.die_end), static_cast<size_t>(h.end));
      std::lock_guard<std::mutex> lock(mu);
      if (done) released.push_back(h.offset);
      under_way.erase(under_way.find(h.offset));
      hold_decoder();
    }
  });
  stream.Unlimit();
  scan_resume_ = cursor;
  std::sort(released.begin(), released.end());
  released_units_ = std::move(released);
  released_ = !released_units_.empty();
  return true;
}

}  // namespace stacksym::dwarf
