// Units consumed while a big compressed .debug_info is being decompressed, each unit's bytes
// given back once it is done with: by a batch (AnswerWhileStreaming: its addresses answered)
// and by an index build (ExportWhileStreaming: the unit exported). The decompressed section
// is most of a big binary's DWARF (154 of 240 MB on libceph-common): held whole, it alone is
// most of the peak memory of a first symbolization.
//
// Both take the units in offset order under one lock (ConsumeStream), publish them in the
// file's units as they go (DIE references resolve through them), and give back each unit's
// bytes past its unit DIE, which the scan and the unit map after the stream still read. The
// decoder is held a window ahead of the first unit under way.
//
// A batch must answer an address in the unit the unit map will give it after the stream
// (BuildUnitMap: .debug_aranges where it names the unit, else the unit DIE's ranges; the
// lowest unit wins where units overlap), or the address could be looked up again in a unit
// whose bytes are gone: each unit, taken in order, claims the addresses it covers that no unit
// before it claimed, which is that choice. A unit not done here (a split unit, tables that
// fail to build) keeps its bytes and its work for after the stream.
#include <set>

#include "dwarf/unit_cache.h"

namespace stacksym::dwarf {

namespace {

// How far the decoder may run ahead of the first unit under way: enough that it rarely
// waits for the readers, small against the section.
constexpr size_t kDecodeWindow = size_t{16} << 20;

struct BatchItem {
  uint64_t vaddr;
  uint32_t position;
};

}  // namespace

bool UnitCache::CanReleaseStreamedUnits() {
  const elf::SectionStream* stream = files_.info_stream();
  return !loaded_ && stream != nullptr && stream->releasable() && files_.OwnsSections() &&
         !main_->MayReferAcrossUnits();
}

size_t UnitCache::StreamedUnitRoom() {
  // Room for the units .debug_aranges names, and more; past it, the rest is left to the
  // work after the stream.
  const std::vector<ArangeEntry>& aranges = Aranges();
  std::vector<uint64_t> named;
  named.reserve(aranges.size());
  for (const ArangeEntry& e : aranges) named.push_back(e.unit_offset);
  std::sort(named.begin(), named.end());
  return static_cast<size_t>(std::unique(named.begin(), named.end()) - named.begin()) * 2 + 1024;
}

void UnitCache::ConsumeStream(unsigned threads, size_t room,
                              const std::function<void(StreamedUnit&)>& claim,
                              const std::function<bool(StreamedUnit&)>& process) {
  const elf::SectionStream& stream = *files_.info_stream();
  const std::span<const uint8_t> info = stream.buffer();
  main_->StartUnitScan(room);
  std::mutex mu;  // the fields below
  uint64_t cursor = 0;
  bool stop = false;
  std::multiset<uint64_t> under_way;  // offsets of units taken and not done
  std::vector<uint64_t> released;     // offsets of units whose bytes were given back
  auto hold_decoder = [&] {           // with mu held
    uint64_t first = under_way.empty() ? cursor : *under_way.begin();
    stream.Limit(static_cast<size_t>(first) + kDecodeWindow);
  };
  // The next unit in offset order (mu held); false at the end, at a header the scan after
  // the stream stops at too, or when the room is full.
  auto take_next = [&](StreamedUnit& unit) {
    if (stop || cursor >= info.size()) return false;
    hold_decoder();
    size_t have = stream.WaitFor(std::min<uint64_t>(cursor + 12, info.size()));
    uint64_t end = DwarfFile::UnitEnd(info.first(have), cursor);
    if (end == 0 || end > info.size()) return stop = true, false;
    stream.Limit(static_cast<size_t>(end));  // a unit bigger than the window
    if (stream.WaitFor(static_cast<size_t>(end)) < end) return stop = true, false;
    Result<UnitInfo> header = DwarfFile::ParseUnitHeader(info.first(end), cursor);
    if (!header) return stop = true, false;
    unit = StreamedUnit();
    unit.header = *header;
    if (header->known_version()) {
      unit.scanned = main_->AddScannedUnit(*header);
      if (unit.scanned == nullptr) return stop = true, false;
      unit.index = static_cast<size_t>(unit.scanned - main_->units().data());
    }
    cursor = end;
    under_way.insert(header->offset);
    if (unit.scanned == nullptr || header->is_type_unit()) return true;  // covers nothing
    UnitInfo die = *header;  // (strings may not be final yet)
    unit.readable = static_cast<bool>(main_->ReadUnitDieWithoutStrings(die));
    unit.header = die;
    if (claim) claim(unit);
    return true;
  };
  RunOnThreads(ThreadCount(threads, SIZE_MAX), [&](unsigned) {
    StreamedUnit unit;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!take_next(unit)) break;
      }
      const UnitInfo& h = unit.header;
      const bool done = unit.readable && process(unit);
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
}

bool UnitCache::StringsFinal() {
  const elf::SectionStream* strings = files_.str_stream();
  return strings == nullptr || static_cast<bool>(strings->Wait());
}

bool UnitCache::AnswerWhileStreaming(std::span<const uint64_t> vaddrs, unsigned threads,
                                     const UnitWork& work) {
  if (!CanReleaseStreamedUnits() || vaddrs.size() > UINT32_MAX) return false;
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
  auto claim_range = [&](uint64_t low, uint64_t high, StreamedUnit& unit) {
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
  auto claim = [&](StreamedUnit& unit) {
    const uint64_t offset = unit.header.offset;
    auto named =
        std::lower_bound(by_unit.begin(), by_unit.end(), offset,
                         [&](uint32_t k, uint64_t o) { return aranges[k].unit_offset < o; });
    if (named != by_unit.end() && aranges[*named].unit_offset == offset) {
      for (; named != by_unit.end() && aranges[*named].unit_offset == offset; ++named) {
        claim_range(aranges[*named].low, aranges[*named].high, unit);
      }
    } else if (unit.readable) {
      std::vector<AddressRange> ranges;
      UnitInfo die = unit.header;
      if (main_->UnitRanges(die, &ranges)) {
        for (const AddressRange& r : ranges) claim_range(r.low, r.high, unit);
      }
    }
  };
  // Answers the unit's addresses; false when they are left to the lookups after the stream.
  auto answer = [&](StreamedUnit& taken) {
    if (taken.vaddrs.empty()) return true;  // nothing to answer: its bytes may go
    UnitInfo& unit = *taken.scanned;
    if (!StringsFinal() || !main_->ReadUnitDie(unit) || IsSplit(unit)) return false;
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
    // The tables as the lookups after the stream would build them (a function table that
    // fails leaves the line table to answer, the failure recorded).
    std::unique_ptr<UnitState> state = BuildUnit(unit, wanted);
    work(state->ok ? state.get() : nullptr, wanted, positions);
    for (uint32_t p : positions) answered_[p] = 1;
    return true;
  };
  ConsumeStream(threads, StreamedUnitRoom(), claim, answer);
  return true;
}

size_t UnitCache::BeginStreamedExport() {
  if (!CanReleaseStreamedUnits()) return 0;
  const size_t room = StreamedUnitRoom();
  units_.resize(room);  // the tables of units exported while streaming (Init keeps them)
  exported_in_stream_.assign(room, 0);
  return room;
}

void UnitCache::ExportWhileStreaming(unsigned threads,
                                     const std::function<void(size_t)>& exported) {
  auto export_unit = [&](StreamedUnit& taken) {
    UnitInfo& unit = *taken.scanned;
    // Split units open files through shared state: left to the export after the stream.
    if (!StringsFinal() || !main_->ReadUnitDie(unit) || IsSplit(unit)) return false;
    if (EnsureUnit(taken.index) == nullptr) return false;  // the export after says why
    exported(taken.index);
    exported_in_stream_[taken.index] = 1;
    return true;
  };
  in_stream_ = true;
  ConsumeStream(threads, exported_in_stream_.size(), nullptr, export_unit);
  in_stream_ = false;
  if (released_) files_.Retire();
}

}  // namespace stacksym::dwarf
