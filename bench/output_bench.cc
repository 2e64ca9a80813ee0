// Writers and readers of profile outputs on a synthetic profile shaped like a real recording:
// 20 000 distinct stacks of depth 8-40 over 5 000 distinct frames in 20 modules, with inline
// chains on a third of the frames. Reports bytes/second of output and stacks/second.
#include <benchmark/benchmark.h>

#include <random>

#include "stacksym/output.h"

namespace {

stacksym::Profile MakeProfile(size_t stacks, size_t frames) {
  using namespace stacksym;
  Profile p;
  std::mt19937_64 rng(42);
  std::vector<uint32_t> modules;
  for (int m = 0; m < 20; ++m) {
    modules.push_back(p.AddModule({ModuleKind::kElf,
                                   "/usr/lib/libbench" + std::to_string(m) + ".so",
                                   {uint8_t(m), 0xab, 0xcd, 0xef}}));
  }
  for (size_t f = 0; f < frames; ++f) {
    p.InternFrame({FrameKind::kUser, modules[f % modules.size()], 0x1000 + f * 16});
  }
  p.symbols.resize(p.frames.size());
  for (size_t f = 0; f < frames; ++f) {
    FrameSymbols s;
    SourceFrame outer{"bench::namespace_" + std::to_string(f % 97) + "::Function" +
                          std::to_string(f) + "(int, std::string const&)",
                      "_ZN5bench" + std::to_string(f),
                      "/src/bench/file" + std::to_string(f % 50) + ".cc",
                      uint32_t(10 + f % 900),
                      3,
                      false};
    if (f % 3 == 0) {
      s.lines.push_back({"inline_helper_" + std::to_string(f % 31), "", "/src/bench/inl.h",
                         uint32_t(f % 200), 1, true});
    }
    s.lines.push_back(outer);
    p.symbols[f] = std::move(s);
  }
  for (size_t s = 0; s < stacks; ++s) {
    ProfileStack stack;
    stack.pid = 1000 + s % 4;
    stack.tid = stack.pid + s % 16;
    stack.comm = "worker-" + std::to_string(s % 16);
    size_t depth = 8 + rng() % 33;
    for (size_t d = 0; d < depth; ++d) stack.frames.push_back(uint32_t(rng() % frames));
    p.AddSample(stack, 1 + rng() % 50);
  }
  p.period_ns = 10101010;
  return p;
}

const stacksym::Profile& Sample() {
  static const stacksym::Profile p = MakeProfile(20000, 5000);
  return p;
}

void BM_EncodePprofGzip(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    auto r = stacksym::EncodePprof(Sample());
    bytes = r->size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["output_bytes"] = double(bytes);
  state.SetItemsProcessed(int64_t(state.iterations() * Sample().stacks.size()));
}
BENCHMARK(BM_EncodePprofGzip)->Unit(benchmark::kMillisecond);

void BM_DecodePprofGzip(benchmark::State& state) {
  std::string bytes = *stacksym::EncodePprof(Sample());
  for (auto _ : state) {
    auto r = stacksym::DecodePprof({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(int64_t(state.iterations() * Sample().stacks.size()));
  state.SetBytesProcessed(int64_t(state.iterations() * bytes.size()));
}
BENCHMARK(BM_DecodePprofGzip)->Unit(benchmark::kMillisecond);

void BM_FormatFolded(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = stacksym::FormatFolded(Sample());
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.SetBytesProcessed(int64_t(state.iterations() * bytes));
  state.SetItemsProcessed(int64_t(state.iterations() * Sample().stacks.size()));
}
BENCHMARK(BM_FormatFolded)->Unit(benchmark::kMillisecond);

void BM_ParseFolded(benchmark::State& state) {
  std::string text = stacksym::FormatFolded(Sample());
  for (auto _ : state) {
    auto r = stacksym::ParseFolded(text);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(int64_t(state.iterations() * text.size()));
}
BENCHMARK(BM_ParseFolded)->Unit(benchmark::kMillisecond);

void BM_RenderFlameGraphHtml(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    std::string page = stacksym::RenderFlameGraphHtml(Sample());
    bytes = page.size();
    benchmark::DoNotOptimize(page);
  }
  state.counters["output_bytes"] = double(bytes);
}
BENCHMARK(BM_RenderFlameGraphHtml)->Unit(benchmark::kMillisecond);

void BM_RenderFlameGraphSvg(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    std::string svg = stacksym::RenderFlameGraphSvg(Sample());
    bytes = svg.size();
    benchmark::DoNotOptimize(svg);
  }
  state.counters["output_bytes"] = double(bytes);
}
BENCHMARK(BM_RenderFlameGraphSvg)->Unit(benchmark::kMillisecond);

void BM_TopFunctions(benchmark::State& state) {
  for (auto _ : state) {
    auto stats = stacksym::TopFunctions(Sample());
    benchmark::DoNotOptimize(stats);
  }
  state.SetItemsProcessed(int64_t(state.iterations() * Sample().stacks.size()));
}
BENCHMARK(BM_TopFunctions)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
