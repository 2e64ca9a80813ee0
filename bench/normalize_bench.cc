// Normalization speed: {no, uncached, cached build IDs} × {uncached, cached VMAs} × VMA source
// for 5 addresses in a small process, and 3000 addresses over ~150 executable VMAs in a process
// with ≥1500 VMAs (a child that dlopens a few hundred system libraries). Floors: a bare loop of
// PROCMAP_QUERY ioctls (one per address, and one per VMA as the walk needs), and text parsers
// to compare against (a naive fgets+sscanf parser, and ours alone).
//
// Sources: "text" (/proc/PID/maps), "ioctl" (PROCMAP_QUERY, build IDs from the kernel),
// "ioctl_userbid" (PROCMAP_QUERY for VMAs, build IDs read by us through map_files).
#include <benchmark/benchmark.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "normalize/maps_text.h"
#include "normalize/procmap_query.h"
#include "normalize/vma_sources.h"
#include "stacksym/normalize.h"

namespace {

using namespace stacksym;

// A forked child that waits (with the parent's address space, or after loading libraries)
// until the parent dies or kills it.
struct Child {
  pid_t pid = -1;
  std::vector<uint64_t> addrs;
  size_t vma_count = 0;
  size_t exec_vmas = 0;
};

void WaitForever(int ready_fd) {
  char c = 1;
  if (write(ready_fd, &c, 1) != 1) _exit(1);
  close(ready_fd);
  while (true) pause();
}

pid_t ForkChild(void (*prepare)()) {
  int p[2];
  if (pipe(p) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    if (prepare) prepare();
    WaitForever(p[1]);
  }
  close(p[1]);
  char c;
  if (read(p[0], &c, 1) != 1) pid = -1;
  close(p[0]);
  return pid;
}

struct MapsLine {
  uint64_t start, end;
  bool exec, file;
};

std::vector<MapsLine> ReadMaps(pid_t pid) {
  std::vector<MapsLine> out;
  std::string path = "/proc/" + std::to_string(pid) + "/maps";
  FILE* f = fopen(path.c_str(), "r");
  if (!f) return out;
  char line[4096];
  while (fgets(line, sizeof(line), f)) {
    unsigned long long s, e, inode;
    char perms[5];
    if (sscanf(line, "%llx-%llx %4s %*x %*x:%*x %llu", &s, &e, perms, &inode) == 4) {
      out.push_back({s, e, perms[2] == 'x', inode != 0});
    }
  }
  fclose(f);
  return out;
}

__attribute__((noinline)) int LocalFunction(int x) { return x * 7; }

// 5 addresses in this binary and its libraries; valid in a forked child too.
Child& SmallChild() {
  static Child child = [] {
    Child c;
    c.pid = ForkChild(nullptr);
    c.addrs = {reinterpret_cast<uint64_t>(&LocalFunction), reinterpret_cast<uint64_t>(&printf),
               reinterpret_cast<uint64_t>(&memcpy), reinterpret_cast<uint64_t>(&fopen),
               reinterpret_cast<uint64_t>(&benchmark::Initialize)};
    std::sort(c.addrs.begin(), c.addrs.end());
    c.vma_count = ReadMaps(c.pid).size();
    return c;
  }();
  return child;
}

void LoadManyLibraries() {
  // Quiet: library constructors may print.
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) {
    dup2(devnull, 1);
    dup2(devnull, 2);
  }
  const char* dir = "/usr/lib/x86_64-linux-gnu";
  DIR* d = opendir(dir);
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind("lib", 0) == 0 && n.find(".so.") != std::string::npos) names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  size_t loaded = 0;
  for (const std::string& n : names) {
    // Skip libraries whose constructors are known to misbehave in a bare process.
    if (n.find("asan") != std::string::npos || n.find("tsan") != std::string::npos ||
        n.find("lsan") != std::string::npos || n.find("ubsan") != std::string::npos ||
        n.find("hwasan") != std::string::npos || n.find("memusage") != std::string::npos ||
        n.find("pcprofile") != std::string::npos || n.find("SegFault") != std::string::npos ||
        n.find("libc_malloc_debug") != std::string::npos) {
      continue;
    }
    if (dlopen((std::string(dir) + "/" + n).c_str(), RTLD_LAZY | RTLD_LOCAL)) ++loaded;
    if (loaded >= 480) break;
  }
}

// ≥1500 VMAs; 3000 addresses over ~150 executable file-backed VMAs (20 each, spread evenly).
Child& LargeChild() {
  static Child child = [] {
    Child c;
    c.pid = ForkChild(&LoadManyLibraries);
    std::vector<MapsLine> maps = ReadMaps(c.pid);
    c.vma_count = maps.size();
    std::vector<MapsLine> exec;
    for (const MapsLine& m : maps) {
      if (m.exec && m.file) exec.push_back(m);
    }
    c.exec_vmas = exec.size();
    size_t want = std::min<size_t>(150, exec.size());
    for (size_t k = 0; k < want; ++k) {
      const MapsLine& m = exec[k * exec.size() / want];
      for (int j = 0; j < 20; ++j) c.addrs.push_back(m.start + (m.end - m.start) * j / 20);
    }
    return c;
  }();
  return child;
}

enum class Source { kText, kIoctl, kIoctlUserBuildIds };
enum class BuildIds { kNo, kUncached, kCached };

const char* Name(Source s) {
  return s == Source::kText ? "text" : s == Source::kIoctl ? "ioctl" : "ioctl_userbid";
}
const char* Name(BuildIds b) {
  return b == BuildIds::kNo ? "no_bid" : b == BuildIds::kUncached ? "uncached_bid" : "cached_bid";
}

void RunNormalize(benchmark::State& state, Child& (*get_child)(), Source source, BuildIds bids,
                  bool cache_vmas) {
  Child& child = get_child();
  if (child.pid <= 0 || child.addrs.empty()) return state.SkipWithError("child process failed");
  if (source != Source::kText && !normalize::ProcmapQuerySupported()) {
    return state.SkipWithError("kernel lacks PROCMAP_QUERY");
  }
  NormalizerOptions o;
  o.vma_source = source == Source::kText ? VmaSourceKind::kText : VmaSourceKind::kIoctl;
  o.kernel_build_ids = source == Source::kIoctl;
  o.build_ids = bids != BuildIds::kNo;
  o.cache_vmas = cache_vmas;
  Normalizer normalizer(o);
  if (!normalizer.Normalize(child.pid, child.addrs)) return state.SkipWithError("normalize");
  for (auto _ : state) {
    if (bids == BuildIds::kUncached) normalizer.ClearBuildIdCache();
    auto r = normalizer.Normalize(child.pid, child.addrs);
    benchmark::DoNotOptimize(r);
  }
  NormalizerStats s = normalizer.stats();
  double calls = static_cast<double>(s.calls);
  state.counters["lookups/call"] = static_cast<double>(s.vma_lookups) / calls;
  state.counters["bid_reads/call"] = static_cast<double>(s.build_id_reads) / calls;
  state.counters["vmas"] = static_cast<double>(child.vma_count);
  state.counters["addrs"] = static_cast<double>(child.addrs.size());
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(child.addrs.size()));
}

// A new Normalizer per call: opens /proc/PID/maps, remembers nothing, caches nothing — the
// cost of a one-shot normalization (the published text-vs-ioctl comparison).
void RunFresh(benchmark::State& state, Child& (*get_child)(), Source source, bool build_ids) {
  Child& child = get_child();
  if (child.pid <= 0 || child.addrs.empty()) return state.SkipWithError("child process failed");
  if (source != Source::kText && !normalize::ProcmapQuerySupported()) {
    return state.SkipWithError("kernel lacks PROCMAP_QUERY");
  }
  NormalizerOptions o;
  o.vma_source = source == Source::kText ? VmaSourceKind::kText : VmaSourceKind::kIoctl;
  o.kernel_build_ids = source == Source::kIoctl;
  o.build_ids = build_ids;
  o.vma_cache_processes = 0;
  o.cache_build_ids = false;
  for (auto _ : state) {
    Normalizer normalizer(o);
    auto r = normalizer.Normalize(child.pid, child.addrs);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(child.addrs.size()));
}

// One PROCMAP_QUERY per address (no names, no build IDs): the kernel's floor for answering
// each address independently. `walk`: one ioctl per VMA, as the sorted walk needs.
void RunBareIoctl(benchmark::State& state, Child& (*get_child)(), bool walk, bool with_bid) {
  Child& child = get_child();
  if (child.pid <= 0) return state.SkipWithError("child process failed");
  if (!normalize::ProcmapQuerySupported()) return state.SkipWithError("kernel lacks PROCMAP_QUERY");
  std::string path = "/proc/" + std::to_string(child.pid) + "/maps";
  uint8_t bid[64];
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);  // kept open, as the Normalizer does
  for (auto _ : state) {
    uint64_t end = 0;
    for (uint64_t a : child.addrs) {
      if (walk && a < end) continue;
      normalize::procmap_query q;
      std::memset(&q, 0, sizeof(q));
      q.size = sizeof(q);
      q.query_flags = normalize::kQueryCoveringOrNextVma;
      q.query_addr = a;
      if (with_bid) {
        q.build_id_addr = reinterpret_cast<uintptr_t>(bid);
        q.build_id_size = sizeof(bid);
      }
      if (ioctl(fd, normalize::kProcmapQuery, &q) == 0) end = q.vma_end;
      benchmark::DoNotOptimize(q);
    }
  }
  close(fd);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(child.addrs.size()));
}

// A naive text parser as found in many tools: fopen + fgets + sscanf per line, then a search.
void RunNaiveSscanf(benchmark::State& state, Child& (*get_child)()) {
  Child& child = get_child();
  std::string path = "/proc/" + std::to_string(child.pid) + "/maps";
  for (auto _ : state) {
    std::vector<MapsLine> maps;
    FILE* f = fopen(path.c_str(), "r");
    char line[4096];
    char name[4096];
    while (fgets(line, sizeof(line), f)) {
      unsigned long long s, e, off, inode;
      unsigned major, minor;
      char perms[5];
      name[0] = 0;
      if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %4095[^\n]", &s, &e, perms, &off, &major,
                 &minor, &inode, name) >= 7) {
        maps.push_back({s, e, perms[2] == 'x', inode != 0});
      }
    }
    fclose(f);
    size_t found = 0;
    for (uint64_t a : child.addrs) {
      auto it = std::partition_point(maps.begin(), maps.end(),
                                     [a](const MapsLine& m) { return m.end <= a; });
      found += it != maps.end() && it->start <= a;
    }
    benchmark::DoNotOptimize(found);
  }
}

// Our parser alone over the whole file (read + parse every line), no normalization.
void RunOurTextParse(benchmark::State& state, Child& (*get_child)()) {
  Child& child = get_child();
  std::string path = "/proc/" + std::to_string(child.pid) + "/maps";
  std::vector<char> buf(1 << 20);
  std::vector<normalize::MapsEntry> entries;
  for (auto _ : state) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    size_t filled = 0;
    ssize_t n;
    while ((n = read(fd, buf.data() + filled, buf.size() - filled)) > 0) {
      filled += static_cast<size_t>(n);
      if (filled == buf.size()) buf.resize(buf.size() * 2);
    }
    close(fd);
    entries.clear();
    normalize::MapsParseStats stats;
    normalize::ParseMapsLines(std::span<char>(buf.data(), filled), 0, true, {}, &entries, &stats);
    benchmark::DoNotOptimize(entries.data());
  }
}

void RegisterAll() {
  struct Case {
    const char* name;
    Child& (*child)();
  };
  for (Case c : {Case{"small5", &SmallChild}, Case{"large3000", &LargeChild}}) {
    for (Source s : {Source::kText, Source::kIoctl, Source::kIoctlUserBuildIds}) {
      for (BuildIds b : {BuildIds::kNo, BuildIds::kUncached, BuildIds::kCached}) {
        if (s == Source::kIoctlUserBuildIds && b == BuildIds::kNo) continue;  // = ioctl no_bid
        for (bool vc : {false, true}) {
          std::string name = std::string("Normalize/") + c.name + "/" + Name(s) + "/" + Name(b) +
                             (vc ? "/cached_vmas" : "/uncached_vmas");
          benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
            RunNormalize(st, c.child, s, b, vc);
          })->Unit(benchmark::kMicrosecond);
        }
      }
    }
    for (Source s : {Source::kText, Source::kIoctl, Source::kIoctlUserBuildIds}) {
      for (bool bid : {false, true}) {
        if (s == Source::kIoctlUserBuildIds && !bid) continue;
        std::string name = std::string("Normalize/") + c.name + "/" + Name(s) +
                           (bid ? "/uncached_bid" : "/no_bid") + "/fresh_normalizer";
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
          RunFresh(st, c.child, s, bid);
        })->Unit(benchmark::kMicrosecond);
      }
    }
    for (bool walk : {false, true}) {
      for (bool bid : {false, true}) {
        std::string name = std::string("BareIoctl/") + c.name +
                           (walk ? "/per_vma" : "/per_address") + (bid ? "/with_bid" : "/no_bid");
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
          RunBareIoctl(st, c.child, walk, bid);
        })->Unit(benchmark::kMicrosecond);
      }
    }
    benchmark::RegisterBenchmark((std::string("TextParser/") + c.name + "/naive_sscanf").c_str(),
                                 [=](benchmark::State& st) { RunNaiveSscanf(st, c.child); })
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string("TextParser/") + c.name + "/stacksym_full").c_str(),
                                 [=](benchmark::State& st) { RunOurTextParse(st, c.child); })
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  RegisterAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (Child* c : {&SmallChild(), &LargeChild()}) {
    if (c->pid > 0) {
      kill(c->pid, SIGKILL);
      waitpid(c->pid, nullptr, 0);
    }
  }
  std::fprintf(
      stderr,
      "small child: %zu VMAs; large child: %zu VMAs, %zu executable file VMAs, %zu addresses\n",
      SmallChild().vma_count, LargeChild().vma_count, LargeChild().exec_vmas,
      LargeChild().addrs.size());
  return 0;
}
