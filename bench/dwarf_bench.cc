// DWARF lookup speed (DebugInfoSource): the warm per-address cost once a binary's tables are
// built (the common case: many addresses against one binary), the cold cost of opening the
// DWARF and answering a first batch, an index build's export of every unit, and demangling
// every linkage name of a big C++ library. Inputs:
// libc.so.6 with libc6-dbg's separate debug file, and libceph-common.so.2 with librados2-dbg
// (95 MB of compressed DWARF 5) when present; missing inputs are reported as skipped.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "dwarf/debug_info_source.h"
#include "dwarf/dwarf_file.h"
#include "dwarf/function_table.h"
#include "dwarf/line_table.h"
#include "stacksym/demangle.h"
#include "stacksym/elf.h"

namespace {

using stacksym::dwarf::DebugInfoSource;
namespace dwarf = stacksym::dwarf;
using stacksym::ElfFile;
using stacksym::SourceFrame;

const char* const kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const char* const kCeph = "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2";

// `count` addresses spread over the function symbols of `elf`, in random order (a profile's
// frames do not arrive sorted).
std::vector<uint64_t> SampleAddresses(const ElfFile& elf, size_t count) {
  std::vector<uint64_t> out;
  std::mt19937_64 rng(42);
  std::vector<const stacksym::ElfSymbol*> functions;
  for (const auto& s : elf.symbols().symbols()) {
    if (s.type == 2 /* STT_FUNC */ && s.size > 0) functions.push_back(&s);
  }
  if (functions.empty()) return out;
  for (size_t i = 0; i < count; ++i) {
    const auto* s = functions[rng() % functions.size()];
    out.push_back(s->address + rng() % s->size);
  }
  return out;
}

struct Loaded {
  std::shared_ptr<ElfFile> elf;
  std::unique_ptr<dwarf::DebugInfoSource> source;
  std::vector<uint64_t> addresses;
};

bool Load(const char* path, bool demangle, Loaded* out, std::string* why) {
  auto elf = ElfFile::Open(path);
  if (!elf) {
    *why = elf.error().ToString();
    return false;
  }
  dwarf::DwarfOptions options;
  options.demangle = demangle;
  auto source = dwarf::DebugInfoSource::Open(*elf, options);
  if (!source || !*source) {
    *why = std::string("no DWARF for ") + path + " (install its -dbg package)";
    return false;
  }
  out->elf = *elf;
  out->source = std::move(*source);
  out->addresses = SampleAddresses(*out->elf, 5000);
  return !out->addresses.empty();
}

// Per-address cost with every table already built: each address of the sample was looked up
// once before timing starts.
void WarmLookup(benchmark::State& state, const char* path, bool demangle) {
  Loaded loaded;
  std::string why;
  if (!Load(path, demangle, &loaded, &why)) {
    state.SkipWithError(why.c_str());
    return;
  }
  std::vector<SourceFrame> frames;
  size_t answered = 0;
  for (uint64_t a : loaded.addresses) answered += loaded.source->Lookup(a, &frames);
  size_t i = 0;
  size_t frame_count = 0;
  for (auto _ : state) {
    loaded.source->Lookup(loaded.addresses[i], &frames);
    frame_count += frames.size();
    if (++i == loaded.addresses.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["answered_%"] = 100.0 * answered / loaded.addresses.size();
  state.counters["frames/addr"] =
      benchmark::Counter(static_cast<double>(frame_count) / state.iterations());
  state.counters["table_MB"] = loaded.source->memory_bytes() / 1e6;
}

// Open + tables for the units the sample needs + every lookup, from a freshly opened file
// (sections are decompressed again each iteration).
void ColdBatch(benchmark::State& state, const char* path) {
  std::string why;
  std::vector<uint64_t> addresses;
  {
    Loaded probe;
    if (!Load(path, false, &probe, &why)) {
      state.SkipWithError(why.c_str());
      return;
    }
    addresses = probe.addresses;
  }
  std::vector<SourceFrame> frames;
  for (auto _ : state) {
    auto elf = ElfFile::Open(path);
    dwarf::DwarfOptions options;
    options.demangle = false;
    auto source = dwarf::DebugInfoSource::Open(*elf, options);
    for (uint64_t a : addresses) (*source)->Lookup(a, &frames);
    benchmark::DoNotOptimize(frames.data());
  }
  state.SetItemsProcessed(state.iterations() * addresses.size());
}

// `path` loaded (with demangling), and its debug file opened apart with its sections
// decompressed once, for benchmarks of the DWARF work without the decompression: sources
// opened on it later find the sections there. Null (the benchmark skipped, saying why) when
// either fails.
std::shared_ptr<ElfFile> OpenDecompressed(benchmark::State& state, const char* path,
                                          Loaded* loaded) {
  std::string why;
  if (!Load(path, true, loaded, &why)) {
    state.SkipWithError(why.c_str());
    return nullptr;
  }
  auto debug_file = ElfFile::Open(loaded->source->path());
  if (!debug_file) {
    state.SkipWithError(debug_file.error().ToString().c_str());
    return nullptr;
  }
  // Decompresses the sections, once, and waits for them (they may stream in the background).
  auto primed = dwarf::DebugInfoSource::Open(*debug_file, dwarf::DwarfOptions{});
  if (primed && *primed) (void)(*primed)->units().unit_count();
  return *debug_file;
}

// The DWARF work of a batch without the decompression: the debug file (which keeps its
// decompressed sections) stays open, each iteration opens a new source on it and answers the
// sample with LookupBatch on `threads` threads (unit map, filtered unit tables, names).
void BatchOnDecompressed(benchmark::State& state, const char* path) {
  Loaded loaded;
  std::shared_ptr<ElfFile> debug_file = OpenDecompressed(state, path, &loaded);
  if (!debug_file) return;
  unsigned threads = static_cast<unsigned>(state.range(0));
  std::vector<std::vector<SourceFrame>> frames(loaded.addresses.size());
  for (auto _ : state) {
    auto source = dwarf::DebugInfoSource::Open(debug_file, dwarf::DwarfOptions{});
    (*source)->LookupBatch(
        loaded.addresses, [&](size_t i) { return &frames[i]; }, threads);
    benchmark::DoNotOptimize(frames.data());
    state.counters["units_parsed"] = static_cast<double>((*source)->units().parsed_unit_count());
  }
  state.SetItemsProcessed(state.iterations() * loaded.addresses.size());
}

// An index build's DWARF work without the decompression, on one thread: every unit of the
// binary exported (IndexBuilder's ExportUnit: its full function table walked, each node's name
// resolved through its origin chain and demangled, its line table parsed and its paths
// resolved), from a new source on the kept-open debug file each iteration.
void ExportEveryUnit(benchmark::State& state, const char* path) {
  Loaded loaded;
  std::shared_ptr<ElfFile> debug_file = OpenDecompressed(state, path, &loaded);
  if (!debug_file) return;
  size_t nodes = 0;
  for (auto _ : state) {
    auto source = dwarf::DebugInfoSource::Open(debug_file, dwarf::DwarfOptions{});
    nodes = 0;
    for (size_t i = 0; i < (*source)->units().unit_count(); ++i) {
      dwarf::UnitTables tables = (*source)->units().ExportUnit(i);
      nodes += tables.nodes.size();
      benchmark::DoNotOptimize(tables.pretty_names.data());
      (*source)->units().ReleaseUnitFunctions(i);
    }
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(nodes));
}

// The function-table walks of an index build, on one thread: every unit's full table
// (FunctionTable::Build: each subroutine DIE read, the rest of each subtree skipped) over the
// kept-open debug file each iteration, no names, no line tables.
void WalkEveryUnit(benchmark::State& state, const char* path) {
  Loaded loaded;
  std::shared_ptr<ElfFile> debug_file = OpenDecompressed(state, path, &loaded);
  if (!debug_file) return;
  stacksym::Result<dwarf::DwarfSections> sections = stacksym::LoadDwarfSections(*debug_file);
  if (!sections) {
    state.SkipWithError(sections.error().ToString().c_str());
    return;
  }
  size_t nodes = 0;
  for (auto _ : state) {
    dwarf::DwarfFile file(*sections);
    if (stacksym::Result<void> r = file.ScanUnits(); !r) {
      state.SkipWithError(r.error().ToString().c_str());
      return;
    }
    nodes = 0;
    for (dwarf::UnitInfo& unit : file.units()) {
      if (unit.is_type_unit()) continue;
      stacksym::Result<dwarf::FunctionTable> table = dwarf::FunctionTable::Build(file, unit);
      if (table) nodes += table->nodes().size();
    }
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(nodes));
}

// The line programs of an index build, on one thread: every unit's (LineTable::Parse: the
// state machine run into sorted rows), each distinct program once per iteration.
void ParseEveryLineTable(benchmark::State& state, const char* path) {
  Loaded loaded;
  std::shared_ptr<ElfFile> debug_file = OpenDecompressed(state, path, &loaded);
  if (!debug_file) return;
  stacksym::Result<dwarf::DwarfSections> sections = stacksym::LoadDwarfSections(*debug_file);
  if (!sections) {
    state.SkipWithError(sections.error().ToString().c_str());
    return;
  }
  dwarf::DwarfFile file(*sections);
  if (stacksym::Result<void> r = file.ScanUnits(); !r) {
    state.SkipWithError(r.error().ToString().c_str());
    return;
  }
  std::vector<std::pair<uint64_t, uint8_t>> programs;  // offset, address size
  for (dwarf::UnitInfo& unit : file.units()) {
    if (!file.ReadUnitDie(unit) || !unit.has_stmt_list) continue;
    programs.emplace_back(unit.stmt_list, unit.ctx.address_size);
  }
  std::sort(programs.begin(), programs.end());
  programs.erase(std::unique(programs.begin(), programs.end()), programs.end());
  dwarf::LineSections lines;
  lines.line = sections->line;
  lines.line_str = sections->line_str;
  lines.str = sections->str;
  lines.str_offsets = sections->str_offsets;
  size_t rows = 0;
  for (auto _ : state) {
    rows = 0;
    for (const auto& [offset, address_size] : programs) {
      stacksym::Result<dwarf::LineTable> table =
          dwarf::LineTable::Parse(lines, offset, address_size);
      if (table) rows += table->rows().size();
    }
  }
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["MB"] = static_cast<double>(lines.line.size()) / 1e6;
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(rows));
}

// libiberty's cost on a big C++ library's names, the piece of a cold index build as big as its
// gap to 1.5x the direct run: every distinct linkage name in the debug file's .debug_str
// demangled once per iteration (on libceph-common 266 295 names, 35 MB into 140 MB).
void DemangleEveryLinkageName(benchmark::State& state, const char* path) {
  Loaded loaded;
  std::shared_ptr<ElfFile> debug_file = OpenDecompressed(state, path, &loaded);
  if (!debug_file) return;
  auto strings = debug_file->SectionData(".debug_str");
  if (!strings) {
    state.SkipWithError(strings.error().ToString().c_str());
    return;
  }
  std::vector<std::string_view> names;
  const char* text = reinterpret_cast<const char*>(strings->data());
  for (size_t at = 0; at < strings->size();) {
    size_t length = strnlen(text + at, strings->size() - at);
    std::string_view name(text + at, length);
    if (name.size() > 2 && name.substr(0, 2) == "_Z") names.push_back(name);
    at += length + 1;
  }
  size_t demangled_bytes = 0;
  for (auto _ : state) {
    demangled_bytes = 0;
    for (std::string_view name : names) demangled_bytes += stacksym::Demangle(name).size();
  }
  state.counters["names"] = static_cast<double>(names.size());
  state.counters["demangled_MB"] = static_cast<double>(demangled_bytes) / 1e6;
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(names.size()));
}

BENCHMARK_CAPTURE(WarmLookup, libc_raw_names, kLibc, false);
BENCHMARK_CAPTURE(WarmLookup, libc_demangled, kLibc, true);
BENCHMARK_CAPTURE(WarmLookup, ceph_raw_names, kCeph, false);
BENCHMARK_CAPTURE(WarmLookup, ceph_demangled, kCeph, true);
BENCHMARK_CAPTURE(BatchOnDecompressed, libc_5000, kLibc)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BatchOnDecompressed, ceph_5000, kCeph)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(ExportEveryUnit, libc, kLibc)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(ExportEveryUnit, ceph, kCeph)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(WalkEveryUnit, libc, kLibc)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(WalkEveryUnit, ceph, kCeph)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(ParseEveryLineTable, libc, kLibc)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(ParseEveryLineTable, ceph, kCeph)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(DemangleEveryLinkageName, ceph, kCeph)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK_CAPTURE(ColdBatch, libc_5000, kLibc)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(ColdBatch, ceph_5000, kCeph)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
