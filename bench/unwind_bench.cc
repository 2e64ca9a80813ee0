// Unwind-table speed and size: building the compact table from .eh_frame (+ .debug_frame)
// for libc, libpython3.11 and libceph-common (the ELF is opened once, outside the timing),
// and loading it back from the persisted table file of a cache directory (BM_Load*), and
// Find() per lookup at random pcs. Missing files are reported as skipped.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "stacksym/unwind.h"

namespace {

using stacksym::ElfFile;
using stacksym::UnwindTable;

const char* const kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const char* const kLibPython = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";
const char* const kPython = "/usr/bin/python3.11";
const char* const kCeph = "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2";

void BuildTable(benchmark::State& state, const char* path) {
  if (access(path, R_OK) != 0) return state.SkipWithError((std::string("missing ") + path).c_str());
  auto elf = ElfFile::Open(path);
  if (!elf) return state.SkipWithError(elf.error().ToString().c_str());
  std::shared_ptr<const UnwindTable> table;
  for (auto _ : state) {
    auto built = UnwindTable::Build(**elf);
    if (!built) return state.SkipWithError(built.error().ToString().c_str());
    table = std::move(*built);
    benchmark::DoNotOptimize(table.get());
  }
  state.counters["fdes"] = static_cast<double>(table->stats().fdes);
  state.counters["rows"] = static_cast<double>(table->rows().size());
  state.counters["table_bytes"] = static_cast<double>(table->memory_bytes());
  state.counters["eh_frame_bytes"] = static_cast<double>([&] {
    const stacksym::ElfSection* s = (*elf)->FindSection(".eh_frame");
    return s ? s->size : 0;
  }());
  state.counters["fdes/s"] = benchmark::Counter(
      static_cast<double>(table->stats().fdes) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_BuildLibc(benchmark::State& s) { BuildTable(s, kLibc); }
void BM_BuildLibPython(benchmark::State& s) { BuildTable(s, kLibPython); }
void BM_BuildPython(benchmark::State& s) { BuildTable(s, kPython); }
void BM_BuildLibCephCommon(benchmark::State& s) { BuildTable(s, kCeph); }
BENCHMARK(BM_BuildLibc)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildLibPython)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildPython)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildLibCephCommon)->Unit(benchmark::kMillisecond);

// Loading the table of a binary from the persisted unwind table in a cache directory (what
// `record` does from its second recording on): a fresh UnwindTableCache per iteration, so each
// Get reads the file, checks its CRCs and rows, and copies the rows. Compare with BM_Build*.
void LoadTable(benchmark::State& state, const char* path) {
  if (access(path, R_OK) != 0) return state.SkipWithError((std::string("missing ") + path).c_str());
  auto elf = ElfFile::Open(path);
  if (!elf) return state.SkipWithError(elf.error().ToString().c_str());
  char dir[] = "/tmp/stacksym-unwind-bench-XXXXXX";
  if (mkdtemp(dir) == nullptr) return state.SkipWithError("mkdtemp");
  stacksym::UnwindTableCacheOptions options;
  options.dir = dir;
  stacksym::UnwindTableCache(options).Get(**elf);  // stores the file
  std::shared_ptr<const UnwindTable> table;
  uint64_t loads = 0;
  for (auto _ : state) {
    stacksym::UnwindTableCache cache(options);
    table = cache.Get(**elf);
    loads += cache.dir_loads();
    benchmark::DoNotOptimize(table.get());
  }
  if (loads != static_cast<uint64_t>(state.iterations()))
    state.SkipWithError("not loaded from the cache");
  state.counters["rows"] = static_cast<double>(table->rows().size());
  std::filesystem::remove_all(dir);
}

void BM_LoadLibc(benchmark::State& s) { LoadTable(s, kLibc); }
void BM_LoadLibPython(benchmark::State& s) { LoadTable(s, kLibPython); }
void BM_LoadPython(benchmark::State& s) { LoadTable(s, kPython); }
void BM_LoadLibCephCommon(benchmark::State& s) { LoadTable(s, kCeph); }
BENCHMARK(BM_LoadLibc)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoadLibPython)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoadPython)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoadLibCephCommon)->Unit(benchmark::kMillisecond);

void FindRandom(benchmark::State& state, const char* path) {
  if (access(path, R_OK) != 0) return state.SkipWithError((std::string("missing ") + path).c_str());
  auto elf = ElfFile::Open(path);
  if (!elf) return state.SkipWithError(elf.error().ToString().c_str());
  auto table = UnwindTable::Build(**elf);
  if (!table || (*table)->empty()) return state.SkipWithError("no table");
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<uint64_t> pc((*table)->base_pc(), (*table)->end_pc() - 1);
  std::vector<uint64_t> pcs(4096);
  for (uint64_t& p : pcs) p = pc(rng);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize((*table)->Find(pcs[i++ & 4095]));
  }
  state.counters["rows"] = static_cast<double>((*table)->rows().size());
}

void BM_FindLibc(benchmark::State& s) { FindRandom(s, kLibc); }
void BM_FindLibCephCommon(benchmark::State& s) { FindRandom(s, kCeph); }
BENCHMARK(BM_FindLibc);
BENCHMARK(BM_FindLibCephCommon);

}  // namespace

BENCHMARK_MAIN();
