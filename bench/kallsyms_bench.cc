// Kernel symbol table costs: parsing /proc/kallsyms (text already in memory, and including
// the kernel's generation of the text), lookups, and — as a yardstick — a straightforward
// iostream parse of the same text into a sorted vector.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "stacksym/kernel.h"

namespace {

const std::string& KallsymsText() {
  static const std::string text = [] {
    std::ifstream in("/proc/kallsyms");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }();
  return text;
}

bool Usable(benchmark::State& state) {
  if (KallsymsText().empty()) {
    state.SkipWithError("/proc/kallsyms is not readable");
    return false;
  }
  return true;
}

void BM_ParseKallsymsText(benchmark::State& state) {
  if (!Usable(state)) return;
  const std::string& text = KallsymsText();
  size_t symbols = 0, bytes = 0;
  for (auto _ : state) {
    stacksym::KallsymsTable table = stacksym::KallsymsTable::Parse(text);
    symbols = table.size();
    bytes = table.memory_bytes();
    benchmark::DoNotOptimize(table);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * symbols));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["symbols"] = static_cast<double>(symbols);
  state.counters["table_MiB"] = static_cast<double>(bytes) / (1 << 20);
  state.counters["text_MiB"] = static_cast<double>(text.size()) / (1 << 20);
}
BENCHMARK(BM_ParseKallsymsText)->Unit(benchmark::kMillisecond);

// The whole load: the kernel formats /proc/kallsyms on read, which dominates.
void BM_LoadProcKallsyms(benchmark::State& state) {
  if (!Usable(state)) return;
  for (auto _ : state) {
    auto table = stacksym::KallsymsTable::Load();
    if (!table) {
      state.SkipWithError(table.error().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(*table);
  }
}
BENCHMARK(BM_LoadProcKallsyms)->Unit(benchmark::kMillisecond);

// Yardstick: what a simple iostream parser costs on the same text.
void BM_ParseKallsymsIostreamBaseline(benchmark::State& state) {
  if (!Usable(state)) return;
  struct Sym {
    uint64_t address;
    std::string name;
    std::string module;
  };
  const std::string& text = KallsymsText();
  for (auto _ : state) {
    std::istringstream in(text);
    std::vector<Sym> syms;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string addr, type, name, module;
      f >> addr >> type >> name >> module;
      syms.push_back({std::stoull(addr, nullptr, 16), name, module});
    }
    std::stable_sort(syms.begin(), syms.end(),
                     [](const Sym& a, const Sym& b) { return a.address < b.address; });
    benchmark::DoNotOptimize(syms);
  }
}
BENCHMARK(BM_ParseKallsymsIostreamBaseline)->Unit(benchmark::kMillisecond);

std::vector<uint64_t> RandomProbes(const stacksym::KallsymsTable& table, size_t n) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> probes;
  probes.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    stacksym::KernelSymbol s = table.at(rng() % table.size());
    probes.push_back(s.address + (s.size ? rng() % s.size : 0));
  }
  return probes;
}

void BM_FindRandom(benchmark::State& state) {
  if (!Usable(state)) return;
  stacksym::KallsymsTable table = stacksym::KallsymsTable::Parse(KallsymsText());
  if (table.empty()) {
    state.SkipWithError("kallsyms addresses are hidden");
    return;
  }
  std::vector<uint64_t> probes = RandomProbes(table, 4096);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.Find(probes[i++ & 4095]));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_FindRandom);

// Through KernelSymbolizer: the lookup plus building a SymbolizedAddress (strings).
void BM_KernelSymbolizeRandom(benchmark::State& state) {
  if (!Usable(state)) return;
  auto ks =
      stacksym::KernelSymbolizer::FromTable(stacksym::KallsymsTable::Parse(KallsymsText()), {});
  if (!ks || (*ks)->table().empty()) {
    state.SkipWithError("no usable kallsyms");
    return;
  }
  std::vector<uint64_t> probes = RandomProbes((*ks)->table(), 4096);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize((*ks)->Symbolize(probes[i++ & 4095]));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_KernelSymbolizeRandom);

}  // namespace

BENCHMARK_MAIN();
