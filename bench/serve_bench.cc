// `stacksym serve` throughput and latency: requests of 1000 file offsets (sampled inside
// functions) of libc (libc6-dbg) and, when librados2-dbg is installed, libceph-common, cold
// (a fresh server: find, open and parse on the first requests; the page cache is warm) and
// warm (parsed files kept), 1, 4 and 16 concurrent clients over loopback; against a local
// symbolization of a profile holding the same 1000 frames (SymbolizeProfile, what
// `symbolize-profile` runs, without process start-up and file writing).
// Counters: rps = requests per second; p50_ms, p99_ms = request latency as the client sees it.
#include <benchmark/benchmark.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "remote/symbolize_api.h"
#include "stacksym/elf.h"
#include "stacksym/output.h"
#include "stacksym/remote.h"
#include "stacksym/symbolize_profile.h"

namespace {

using namespace stacksym;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Input {
  std::string name;
  std::string path;
  std::vector<uint8_t> build_id;
  std::vector<uint64_t> offsets;  // 1000, inside functions
  std::string dir;                // <dir>/.build-id/xx/rest → the binary
};

// 1000 file offsets inside functions of `path`, or nothing when its debug file is missing.
Input MakeInput(const std::string& name, const std::string& path) {
  Input in;
  in.name = name;
  in.path = path;
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  if (!elf) return in;
  std::string hex = (*elf)->build_id_hex();
  if (hex.size() < 3 || !fs::exists("/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" +
                                    hex.substr(2) + ".debug")) {
    return in;
  }
  std::span<const uint8_t> id = (*elf)->build_id();
  in.build_id.assign(id.begin(), id.end());
  std::vector<const ElfSymbol*> functions;
  for (const ElfSymbol& s : (*elf)->symbols().symbols()) {
    if (s.size > 0) functions.push_back(&s);
  }
  std::mt19937_64 rng(42);
  while (in.offsets.size() < 1000 && !functions.empty()) {
    const ElfSymbol* s = functions[rng() % functions.size()];
    if (auto off = (*elf)->VaddrToFileOffset(s->address + rng() % s->size)) {
      in.offsets.push_back(*off);
    }
  }
  in.dir = "/tmp/stacksym-serve-bench-" + name;
  fs::path link = fs::path(in.dir) / ".build-id" / hex.substr(0, 2) / hex.substr(2);
  fs::create_directories(link.parent_path());
  std::error_code ec;
  fs::remove(link, ec);
  fs::create_symlink(path, link);
  return in;
}

const std::vector<Input>& Inputs() {
  static const std::vector<Input> inputs = [] {
    std::vector<Input> v;
    v.push_back(MakeInput("libc", "/usr/lib/x86_64-linux-gnu/libc.so.6"));
    v.push_back(MakeInput("libceph-common", "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2"));
    return v;
  }();
  return inputs;
}

std::unique_ptr<SymbolServer> StartServer(const Input& in) {
  SymbolServerOptions options;
  options.debug_dirs = {in.dir, "/usr/lib/debug"};
  // Server worker threads (default 32, more than the most clients: each keep-alive connection
  // holds one); STACKSYM_SERVE_THREADS.
  const char* threads = std::getenv("STACKSYM_SERVE_THREADS");
  options.threads = threads != nullptr ? static_cast<unsigned>(std::atoi(threads)) : 32;
  options.max_concurrent = options.threads;
  Result<std::unique_ptr<SymbolServer>> server = SymbolServer::Start("127.0.0.1", 0, options);
  return server ? *std::move(server) : nullptr;
}

// `clients` threads each send `requests` requests; latencies appended (seconds).
std::string g_failure;  // the first failed request, for the error message

bool RunClients(int port, const std::string& body, int clients, int requests,
                std::vector<double>* latencies) {
  std::vector<std::vector<double>> per(clients);
  std::vector<char> ok(clients, 1);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client("127.0.0.1", port);
      client.set_read_timeout(std::chrono::seconds(300));
      client.set_keep_alive(true);  // as the profile symbolizer's server backend does
      client.set_tcp_nodelay(true);
      for (int r = 0; r < requests; ++r) {
        auto start = Clock::now();
        httplib::Result res = client.Post("/v1/symbolize", body, "application/json");
        per[c].push_back(std::chrono::duration<double>(Clock::now() - start).count());
        if (!res || res->status != 200) {
          if (ok[c]) {
            static std::mutex mutex;
            std::lock_guard lock(mutex);
            g_failure = res ? "HTTP " + std::to_string(res->status) + " " + res->body.substr(0, 100)
                            : httplib::to_string(res.error());
          }
          ok[c] = 0;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (auto& p : per) latencies->insert(latencies->end(), p.begin(), p.end());
  return std::all_of(ok.begin(), ok.end(), [](char b) { return b != 0; });
}

void Report(benchmark::State& state, std::vector<double> latencies, double wall) {
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    return latencies[std::min(latencies.size() - 1, static_cast<size_t>(p * latencies.size()))];
  };
  state.counters["rps"] = static_cast<double>(latencies.size()) / wall;
  state.counters["p50_ms"] = pct(0.50) * 1e3;
  state.counters["p99_ms"] = pct(0.99) * 1e3;
}

std::string Body(const Input& in) {
  remote::SymbolizeRequest request;
  request.modules.push_back({in.build_id, in.offsets});
  return remote::WriteSymbolizeRequest(request);
}

void BM_ServeCold(benchmark::State& state, const Input* in) {
  if (in->offsets.empty()) return state.SkipWithError(("no debug file for " + in->path).c_str());
  int clients = static_cast<int>(state.range(0));
  std::string body = Body(*in);
  std::vector<double> latencies;
  double wall = 0;
  for (auto _ : state) {
    std::unique_ptr<SymbolServer> server = StartServer(*in);
    auto start = Clock::now();
    if (!server || !RunClients(server->port(), body, clients, 1, &latencies)) {
      return state.SkipWithError(("request failed: " + g_failure).c_str());
    }
    double t = std::chrono::duration<double>(Clock::now() - start).count();
    wall += t;
    state.SetIterationTime(t);
  }
  Report(state, latencies, wall);
}

void BM_ServeWarm(benchmark::State& state, const Input* in) {
  if (in->offsets.empty()) return state.SkipWithError(("no debug file for " + in->path).c_str());
  int clients = static_cast<int>(state.range(0));
  std::string body = Body(*in);
  std::unique_ptr<SymbolServer> server = StartServer(*in);
  std::vector<double> warmup;
  if (!server || !RunClients(server->port(), body, 1, 1, &warmup)) {
    return state.SkipWithError(("request failed: " + g_failure).c_str());
  }
  std::vector<double> latencies;
  double wall = 0;
  for (auto _ : state) {
    auto start = Clock::now();
    if (!RunClients(server->port(), body, clients, 20, &latencies)) {
      return state.SkipWithError(("request failed: " + g_failure).c_str());
    }
    double t = std::chrono::duration<double>(Clock::now() - start).count();
    wall += t;
    state.SetIterationTime(t);
  }
  Report(state, latencies, wall);
}

// The same 1000 frames in a profile, symbolized locally from scratch (what symbolize-profile
// does after reading its input).
void BM_LocalSymbolizeProfile(benchmark::State& state, const Input* in) {
  if (in->offsets.empty()) return state.SkipWithError(("no debug file for " + in->path).c_str());
  std::vector<double> latencies;
  double wall = 0;
  for (auto _ : state) {
    Profile p;
    uint32_t m = p.AddModule({ModuleKind::kElf, in->path, in->build_id});
    for (uint64_t off : in->offsets) {
      p.AddSample({1, 1, "bench", {p.InternFrame({FrameKind::kUser, m, off})}}, 1);
    }
    auto start = Clock::now();
    ProfileSymbolizeStats stats = SymbolizeProfile(p);
    double t = std::chrono::duration<double>(Clock::now() - start).count();
    if (stats.modules_found != 1) return state.SkipWithError("module not found");
    latencies.push_back(t);
    wall += t;
    state.SetIterationTime(t);
  }
  Report(state, latencies, wall);
}

}  // namespace

int main(int argc, char** argv) {
  for (const Input& in : Inputs()) {
    benchmark::RegisterBenchmark(("BM_ServeCold/" + in.name).c_str(), BM_ServeCold, &in)
        ->Arg(1)
        ->Arg(4)
        ->Arg(16)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
    benchmark::RegisterBenchmark(("BM_ServeWarm/" + in.name).c_str(), BM_ServeWarm, &in)
        ->Arg(1)
        ->Arg(4)
        ->Arg(16)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
    benchmark::RegisterBenchmark(("BM_LocalSymbolizeProfile/" + in.name).c_str(),
                                 BM_LocalSymbolizeProfile, &in)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
