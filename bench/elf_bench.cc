// ELF reader speed: opening + building the symbol table (the hot path when a profile touches
// a new library), symbol lookups, decompressing a large .debug_info, and the pread-only
// build-ID reader. Inputs are system files; missing ones are reported as skipped.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <random>
#include <string>

#include "stacksym/elf.h"

namespace {

using stacksym::ElfFile;

const char* const kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const char* const kBash = "/usr/bin/bash";
const char* const kLlvm = "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1";  // ~45k dynamic symbols

// libc's separate debug file (libc6-dbg): zlib-compressed DWARF and a full .symtab.
std::string LibcDebugFile() {
  auto libc = ElfFile::Open(kLibc);
  if (!libc) return "";
  std::string id = (*libc)->build_id_hex();
  if (id.size() < 3) return "";
  return "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
}

void OpenAndBuildSymbols(benchmark::State& state, const std::string& path) {
  if (access(path.c_str(), R_OK) != 0) return state.SkipWithError(("missing " + path).c_str());
  size_t count = 0;
  for (auto _ : state) {
    auto elf = ElfFile::Open(path);
    if (!elf) return state.SkipWithError(elf.error().ToString().c_str());
    count = (*elf)->symbols().symbols().size();
    benchmark::DoNotOptimize(count);
  }
  state.counters["symbols"] = static_cast<double>(count);
  state.counters["symbols/s"] = benchmark::Counter(static_cast<double>(count) * state.iterations(),
                                                   benchmark::Counter::kIsRate);
}

void BM_OpenSymbolsLibc(benchmark::State& s) { OpenAndBuildSymbols(s, kLibc); }
void BM_OpenSymbolsBash(benchmark::State& s) { OpenAndBuildSymbols(s, kBash); }
void BM_OpenSymbolsLlvm(benchmark::State& s) { OpenAndBuildSymbols(s, kLlvm); }
void BM_OpenSymbolsLibcDebug(benchmark::State& s) { OpenAndBuildSymbols(s, LibcDebugFile()); }
BENCHMARK(BM_OpenSymbolsLibc)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpenSymbolsBash)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpenSymbolsLlvm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OpenSymbolsLibcDebug)->Unit(benchmark::kMicrosecond);

void BM_FindLlvm(benchmark::State& state) {
  auto elf = ElfFile::Open(kLlvm);
  if (!elf) return state.SkipWithError("libLLVM-14 not available");
  const auto& table = (*elf)->symbols();
  auto syms = table.symbols();
  std::mt19937_64 rng(42);
  std::vector<uint64_t> addrs(4096);
  for (uint64_t& a : addrs) {
    const auto& s = syms[rng() % syms.size()];
    a = s.address + (s.size ? rng() % s.size : 0);
  }
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.Find(addrs[i++ & 4095]));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FindLlvm);

void BM_DecompressLibcDebugInfo(benchmark::State& state) {
  std::string path = LibcDebugFile();
  if (access(path.c_str(), R_OK) != 0) return state.SkipWithError("libc6-dbg not installed");
  size_t bytes = 0;
  for (auto _ : state) {
    auto elf = ElfFile::Open(path);  // fresh file: nothing cached
    auto data = (*elf)->SectionData(".debug_info");
    if (!data) return state.SkipWithError(data.error().ToString().c_str());
    bytes = data->size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
}
BENCHMARK(BM_DecompressLibcDebugInfo)->Unit(benchmark::kMillisecond);

void BM_ReadBuildIdFromFdLibc(benchmark::State& state) {
  int fd = open(kLibc, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return state.SkipWithError("libc not readable");
  for (auto _ : state) {
    auto id = stacksym::ReadBuildIdFromFd(fd);
    benchmark::DoNotOptimize(id);
  }
  close(fd);
}
BENCHMARK(BM_ReadBuildIdFromFdLibc);

}  // namespace

BENCHMARK_MAIN();
