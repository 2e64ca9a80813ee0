// PerfMap: the /tmp/perf-PID.map format, overlap resolution (later lines win) checked against
// a brute-force reference on random maps, namespaced pids, and finding the map of a process
// in its own mount namespace (a container-like child with a private /tmp and pid namespace).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "normalize/jit_files.h"
#include "symbolize/perf_map.h"

namespace stacksym {
namespace {

TEST(PerfMapTest, ParsesLinesWithSpacesAndPrefixes) {
  symbolize::PerfMap map = symbolize::PerfMap::Parse(
      "7f0000001000 40 LazyCompile:~foo /app/index.js:12\n"
      "0x7f0000002000 0x10 Builtin: ArgumentsAdaptorTrampoline\n"
      "7f0000003000 8 py::bar:/tmp/x.py  \r\n"
      "7f0000004000 0 zero_size\n"
      "7f0000005000 10\n"
      "not a line\n"
      "7f0000006000 zz bad_size\n"
      "\n");
  EXPECT_EQ(map.size(), 3u);
  EXPECT_EQ(map.skipped_lines(), 4u);
  auto a = map.Find(0x7f000000103f);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->name, "LazyCompile:~foo /app/index.js:12");
  EXPECT_EQ(a->start, 0x7f0000001000u);
  EXPECT_EQ(a->size, 0x40u);
  EXPECT_FALSE(map.Find(0x7f0000001040));
  EXPECT_FALSE(map.Find(0x7f0000000fff));
  EXPECT_EQ(map.Find(0x7f0000002008)->name, "Builtin: ArgumentsAdaptorTrampoline");
  EXPECT_EQ(map.Find(0x7f0000003000)->name, "py::bar:/tmp/x.py");  // trailing blanks trimmed
  EXPECT_FALSE(map.Find(0x7f0000004000));
}

TEST(PerfMapTest, LaterLinesWinWhereEntriesOverlap) {
  symbolize::PerfMap map = symbolize::PerfMap::Parse(
      "1000 100 old_big\n"
      "1040 10 new_inner\n"
      "10f0 20 new_straddling\n");
  EXPECT_EQ(map.Find(0x1000)->name, "old_big");
  EXPECT_EQ(map.Find(0x1045)->name, "new_inner");
  EXPECT_EQ(map.Find(0x1045)->start, 0x1040u);
  EXPECT_EQ(map.Find(0x1050)->name, "old_big");
  EXPECT_EQ(map.Find(0x1050)->start, 0x1000u);  // offsets stay relative to the symbol start
  EXPECT_EQ(map.Find(0x10f0)->name, "new_straddling");
  EXPECT_EQ(map.Find(0x110f)->name, "new_straddling");
  EXPECT_FALSE(map.Find(0x1110));
}

TEST(PerfMapTest, SizeSaturatesAtTheTopOfTheAddressSpace) {
  symbolize::PerfMap map = symbolize::PerfMap::Parse("fffffffffffffff0 100 top\n");
  EXPECT_EQ(map.Find(0xfffffffffffffffe)->name, "top");
  EXPECT_EQ(map.Find(0xfffffffffffffff0)->size, 0xfu);
}

// Brute force: the last line covering the address.
std::optional<size_t> Reference(const std::vector<std::pair<uint64_t, uint64_t>>& lines,
                                uint64_t addr) {
  for (size_t k = lines.size(); k-- > 0;) {
    if (addr >= lines[k].first && addr - lines[k].first < lines[k].second) return k;
  }
  return std::nullopt;
}

TEST(PerfMapTest, MatchesBruteForceOnRandomOverlappingMaps) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::pair<uint64_t, uint64_t>> lines;
    std::string text;
    int count = 1 + static_cast<int>(rng() % 200);
    for (int k = 0; k < count; ++k) {
      uint64_t start = 0x1000 + rng() % 0x2000;
      uint64_t size = 1 + rng() % (rng() % 4 == 0 ? 0x800 : 0x40);
      lines.emplace_back(start, size);
      char line[64];
      std::snprintf(line, sizeof line, "%llx %llx sym%d\n", static_cast<unsigned long long>(start),
                    static_cast<unsigned long long>(size), k);
      text += line;
    }
    symbolize::PerfMap map = symbolize::PerfMap::Parse(text);
    ASSERT_EQ(map.size(), lines.size());
    for (uint64_t addr = 0xff0; addr < 0x3900; ++addr) {
      std::optional<size_t> want = Reference(lines, addr);
      std::optional<symbolize::PerfMapSymbol> got = map.Find(addr);
      ASSERT_EQ(want.has_value(), got.has_value()) << std::hex << addr << " round " << round;
      if (want) {
        ASSERT_EQ(got->name, "sym" + std::to_string(*want)) << std::hex << addr;
        ASSERT_EQ(got->start, lines[*want].first);
      }
    }
  }
}

TEST(PerfMapTest, LoadErrors) {
  Result<symbolize::PerfMap> missing = symbolize::PerfMap::Load("/nonexistent/perf-1.map");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(symbolize::LoadPerfMapForProcess(0));
  EXPECT_FALSE(symbolize::LoadPerfMapForProcess(-5));
  Result<symbolize::PerfMap> gone = symbolize::LoadPerfMapForProcess(0x3ffffff0);  // above pid_max
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
}

TEST(PerfMapTest, NamespacedPidOfSelfAndLoadForSelf) {
  Result<pid_t> self = normalize::NamespacedPid(getpid());
  ASSERT_TRUE(self) << self.error().ToString();
  EXPECT_GT(*self, 0);
  std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  std::ofstream(path) << "5000 20 jit::self test\n";
  Result<symbolize::PerfMap> map = symbolize::LoadPerfMapForProcess(getpid());
  std::remove(path.c_str());
  ASSERT_TRUE(map) << map.error().ToString();
  EXPECT_EQ(map->Find(0x5010)->name, "jit::self test");
}

// A child that maps a jitdump (as JIT agents do, which is how it is found wherever it lies)
// and writes its perf map only as it exits: both read after it has gone.
TEST(PerfMapTest, ReadsTheFilesOfAProcessThatHasExited) {
  char dir_template[] = "/tmp/stacksym-jitdump-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::string dir = dir_template;
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string dump = dir + "/jit-" + std::to_string(getpid()) + ".dump";
    int fd = open(dump.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    // Header only (magic, version 1, size 40, x86-64, pid) and one load of 0x10 bytes.
    uint32_t header[10] = {0x4A695444, 1, 40, 62, 0, static_cast<uint32_t>(getpid())};
    if (fd < 0 || write(fd, header, sizeof(header)) != sizeof(header)) _exit(10);
    if (mmap(nullptr, 40, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) _exit(11);
    std::string name = "jit::from_dump";
    uint32_t prefix[4] = {0, static_cast<uint32_t>(16 + 40 + name.size() + 1 + 0x10), 0, 0};
    uint64_t body[5] = {0x8000, 0x8000, 0x10, 1};
    uint32_t ids[2] = {1, 1};
    std::string code(0x10, '\x90');
    if (write(fd, prefix, 16) != 16 || write(fd, ids, 8) != 8 || write(fd, body, 32) != 32 ||
        write(fd, name.c_str(), name.size() + 1) != static_cast<ssize_t>(name.size() + 1) ||
        write(fd, code.data(), code.size()) != static_cast<ssize_t>(code.size())) {
      _exit(12);
    }
    char c = 'r';
    if (write(ready[1], &c, 1) != 1 || read(done[0], &c, 1) < 0) _exit(13);
    std::ofstream("/tmp/perf-" + std::to_string(getpid()) + ".map") << "9000 10 jit::at_exit\n";
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  Result<normalize::ProcessJitFiles> files = normalize::ProcessJitFiles::Open(child);
  ASSERT_TRUE(files) << files.error().ToString();
  ASSERT_EQ(write(done[1], "x", 1), 1);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  JitFiles after = files->Read();
  std::string map_path = "/tmp/perf-" + std::to_string(child) + ".map";
  std::string dump_path = dir + "/jit-" + std::to_string(child) + ".dump";
  std::remove(map_path.c_str());
  std::remove(dump_path.c_str());
  rmdir(dir.c_str());
  EXPECT_EQ(after.jitdump_path, "/proc/" + std::to_string(child) + "/root" + dump_path);
  Result<symbolize::PerfMap> map = symbolize::PerfMap::FromJitFiles(after);
  ASSERT_TRUE(map) << map.error().ToString();
  ASSERT_TRUE(map->Find(0x9004));
  EXPECT_EQ(map->Find(0x9004)->name, "jit::at_exit");
  ASSERT_TRUE(map->Find(0x800f));
  EXPECT_EQ(map->Find(0x800f)->name, "jit::from_dump");
  close(ready[0]);
  close(ready[1]);
  close(done[0]);
  close(done[1]);
}

// A child in new pid + mount namespaces with a private tmpfs on /tmp writes
// /tmp/perf-1.map (it is pid 1 there). The host sees neither that file in its /tmp nor
// that pid: only /proc/PID/root and NSpid lead to it.
TEST(PerfMapTest, FindsTheMapInsideAContainer) {
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  pid_t middle = fork();
  ASSERT_GE(middle, 0);
  if (middle == 0) {
    if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) _exit(10);
    pid_t inner = fork();
    if (inner < 0) _exit(11);
    if (inner == 0) {
      if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(12);
      if (mount("tmpfs", "/tmp", "tmpfs", 0, nullptr) != 0) _exit(13);
      FILE* f = std::fopen(("/tmp/perf-" + std::to_string(getpid()) + ".map").c_str(), "w");
      if (f == nullptr) _exit(14);
      std::fputs("6000 30 jit::in_container\n", f);
      std::fclose(f);
      char c = 'r';
      if (write(ready[1], &c, 1) != 1) _exit(15);
      if (read(done[0], &c, 1) < 0) _exit(16);
      // As a JVM does with -XX:+DumpPerfMapAtExit: more of the map as it exits.
      f = std::fopen(("/tmp/perf-" + std::to_string(getpid()) + ".map").c_str(), "a");
      if (f == nullptr) _exit(17);
      std::fputs("7000 10 jit::at_exit\n", f);
      std::fclose(f);
      _exit(0);
    }
    int status = 0;
    waitpid(inner, &status, 0);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 20);
  }
  close(ready[1]);
  close(done[0]);
  char c = 0;
  ssize_t got = read(ready[0], &c, 1);
  if (got != 1) {
    int status = 0;
    waitpid(middle, &status, 0);
    close(done[1]);
    GTEST_SKIP() << "cannot create pid+mount namespaces with a tmpfs (needs CAP_SYS_ADMIN); "
                 << "child exit " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  // The inner process is the only child of `middle`.
  std::string children;
  std::ifstream("/proc/" + std::to_string(middle) + "/task/" + std::to_string(middle) +
                "/children") >>
      children;
  pid_t inner = static_cast<pid_t>(std::stol(children));
  Result<pid_t> ns = normalize::NamespacedPid(inner);
  ASSERT_TRUE(ns);
  EXPECT_EQ(*ns, 1);
  Result<symbolize::PerfMap> map = symbolize::LoadPerfMapForProcess(inner);
  ASSERT_TRUE(map) << map.error().ToString();
  EXPECT_EQ(map->path(), "/proc/" + std::to_string(inner) + "/root/tmp/perf-1.map");
  auto sym = map->Find(0x6010);
  ASSERT_TRUE(sym);
  EXPECT_EQ(sym->name, "jit::in_container");
  // Opened while the process lives, read after it (and its namespaces) are gone.
  Result<normalize::ProcessJitFiles> files = normalize::ProcessJitFiles::Open(inner);
  ASSERT_TRUE(files) << files.error().ToString();
  EXPECT_EQ(files->namespaced_pid(), 1);
  EXPECT_TRUE(files->Alive());
  EXPECT_EQ(write(done[1], "x", 1), 1);
  int status = 0;
  waitpid(middle, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(files->Alive());
  JitFiles after = files->Read();
  EXPECT_EQ(after.perf_map_path, "/proc/" + std::to_string(inner) + "/root/tmp/perf-1.map");
  Result<symbolize::PerfMap> at_exit = symbolize::PerfMap::FromJitFiles(after);
  ASSERT_TRUE(at_exit) << at_exit.error().ToString();
  ASSERT_TRUE(at_exit->Find(0x7008));
  EXPECT_EQ(at_exit->Find(0x7008)->name, "jit::at_exit");
  EXPECT_EQ(at_exit->Find(0x6010)->name, "jit::in_container");
  close(done[1]);
  close(ready[0]);
}

}  // namespace
}  // namespace stacksym
