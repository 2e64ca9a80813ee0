// JIT frames through the one profile symbolizer: a profile's anonymous module of a process
// (Module::pid) named from the perf map the recorder read (Profile::jit_files), else from
// --perf-map-dir's files; a pprof round trip keeps the pid and the process's addresses (above
// the 2^40 a file offset may have); and `symbolize process` answers a JIT address of a live
// process as the profile symbolizer answers it.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "stacksym/output.h"
#include "stacksym/process.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {
namespace {

constexpr uint32_t kPid = 4242;
constexpr uint64_t kLeaf = 0x7f0012340000, kCaller = 0x7f0012340100, kUnmapped = 0x7f00aa000000;
const std::string kMap =
    "7f0012340000 100 JS:*leafHot /app/x.js:2\n"
    "7f0012340100 80 JS:*callerHot /app/x.js:8\n";

Profile JitProfile() {
  Profile p;
  uint32_t jit =
      p.AddModule({.kind = ModuleKind::kAnonymous, .path = "", .build_id = {}, .pid = kPid});
  uint32_t other =
      p.AddModule({.kind = ModuleKind::kAnonymous, .path = "", .build_id = {}, .pid = kPid + 1});
  uint32_t leaf = p.InternFrame({FrameKind::kUser, jit, kLeaf + 0x10});
  uint32_t caller = p.InternFrame({FrameKind::kUser, jit, kCaller + 0x7f});
  uint32_t unmapped = p.InternFrame({FrameKind::kUser, jit, kUnmapped});
  uint32_t elsewhere = p.InternFrame({FrameKind::kUser, other, kLeaf + 0x10});
  p.AddSample({.pid = kPid, .tid = kPid, .comm = "node", .frames = {leaf, caller, unmapped}}, 3);
  p.AddSample({.pid = kPid + 1, .tid = kPid + 1, .comm = "node", .frames = {elsewhere}}, 1);
  return p;
}

ProfileSymbolizeOptions NoKernel() {
  ProfileSymbolizeOptions o;
  o.kallsyms_path.clear();
  return o;
}

std::string Name(const Profile& p, uint32_t f) {
  return p.symbols[f] && !p.symbols[f]->lines.empty() ? p.symbols[f]->lines[0].function : "";
}

TEST(JitProfileTest, NamesFramesFromTheFilesTheRecorderRead) {
  Profile p = JitProfile();
  auto files = std::make_shared<JitFiles>();
  files->perf_map_path = "/proc/4242/root/tmp/perf-7.map";
  files->perf_map = kMap;
  p.jit_files[kPid] = files;
  ProfileSymbolizeStats stats = SymbolizeProfile(p, NoKernel());
  EXPECT_EQ(stats.jit_frames, 4u);
  EXPECT_EQ(stats.jit_named, 2u);
  EXPECT_EQ(Name(p, 0), "JS:*leafHot /app/x.js:2");
  EXPECT_EQ(p.symbols[0]->lines[0].raw_function, "JS:*leafHot /app/x.js:2");
  EXPECT_EQ(Name(p, 1), "JS:*callerHot /app/x.js:8");
  ASSERT_TRUE(p.symbols[2]);
  EXPECT_EQ(p.symbols[2]->reason, Reason::kAnonymous);
  // Another process at the same address is not named by this one's map.
  ASSERT_TRUE(p.symbols[3]);
  EXPECT_EQ(p.symbols[3]->reason, Reason::kAnonymous);
  ASSERT_EQ(stats.messages.size(), 1u);
  EXPECT_NE(stats.messages[0].find("pid 4243"), std::string::npos) << stats.messages[0];
}

TEST(JitProfileTest, PprofKeepsPidAndAddressesAndPerfMapDirNamesLater) {
  Result<std::string> bytes = EncodePprof(JitProfile(), /*gzip=*/false);
  ASSERT_TRUE(bytes) << bytes.error().ToString();
  Result<Profile> read =
      DecodePprof({reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()});
  ASSERT_TRUE(read) << read.error().ToString();
  ASSERT_EQ(read->modules.size(), 2u);
  EXPECT_EQ(read->modules[0].kind, ModuleKind::kAnonymous);
  EXPECT_EQ(read->modules[0].pid, kPid);
  EXPECT_EQ(read->modules[1].pid, kPid + 1);
  Profile original = JitProfile();
  ASSERT_EQ(read->frames, original.frames);
  EXPECT_TRUE(read->jit_files.empty());

  // Nothing to name them with: they keep a reason, and the message says where was looked.
  Profile unnamed = *read;
  ProfileSymbolizeStats none = SymbolizeProfile(unnamed, NoKernel());
  EXPECT_EQ(none.jit_named, 0u);
  EXPECT_EQ(unnamed.symbols[0]->reason, Reason::kAnonymous);

  char dir_template[] = "/tmp/stacksym-perfmapdir-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::string dir = dir_template;
  std::ofstream(dir + "/perf-" + std::to_string(kPid) + ".map") << kMap;
  ProfileSymbolizeOptions options = NoKernel();
  options.perf_map_dirs = {"/nonexistent", dir};
  ProfileSymbolizeStats stats = SymbolizeProfile(*read, options);
  std::system(("rm -rf " + dir).c_str());
  EXPECT_EQ(stats.jit_named, 2u);
  EXPECT_EQ(Name(*read, 0), "JS:*leafHot /app/x.js:2");
  EXPECT_EQ(Name(*read, 1), "JS:*callerHot /app/x.js:8");

  // Written again with its names, read again: the same.
  Result<std::string> named = EncodePprof(*read, /*gzip=*/false);
  ASSERT_TRUE(named);
  Result<Profile> again =
      DecodePprof({reinterpret_cast<const uint8_t*>(named->data()), named->size()});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->frames, original.frames);
  EXPECT_EQ(Name(*again, 1), "JS:*callerHot /app/x.js:8");
}

TEST(JitProfileTest, ProcessSymbolizerAnswersAsTheProfileSymbolizer) {
  // JIT-like code: anonymous executable memory of this process, named by its perf map.
  void* code =
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(code, MAP_FAILED);
  uint64_t start = reinterpret_cast<uint64_t>(code);
  std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  char line[128];
  std::snprintf(line, sizeof(line), "%llx 40 jit::self_test\n",
                static_cast<unsigned long long>(start + 0x100));
  std::ofstream(path) << line;
  uint64_t addr = start + 0x123;
  ProcessSymbolizer process;
  Result<std::vector<SymbolizedAddress>> live = process.Symbolize(getpid(), {&addr, 1});
  ASSERT_TRUE(live) << live.error().ToString();
  ASSERT_EQ(live->size(), 1u);

  Profile p;
  uint32_t m = p.AddModule({.kind = ModuleKind::kAnonymous,
                            .path = "",
                            .build_id = {},
                            .pid = static_cast<uint32_t>(getpid())});
  uint32_t f = p.InternFrame({FrameKind::kUser, m, addr});
  p.AddSample({.pid = static_cast<uint32_t>(getpid()), .tid = 0, .comm = "self", .frames = {f}}, 1);
  ProfileSymbolizeOptions options = NoKernel();
  options.perf_map_dirs = {"/tmp"};
  SymbolizeProfile(p, options);
  std::remove(path.c_str());
  munmap(code, 4096);
  EXPECT_EQ((*live)[0].symbol, "jit::self_test");
  EXPECT_EQ((*live)[0].offset, 0x23u);
  ASSERT_TRUE(p.symbols[f]);
  FrameSymbols expected = ToFrameSymbols(std::move((*live)[0]));
  EXPECT_EQ(p.symbols[f]->reason, expected.reason);
  ASSERT_EQ(p.symbols[f]->lines.size(), 1u);
  ASSERT_EQ(expected.lines.size(), 1u);
  EXPECT_EQ(p.symbols[f]->lines[0].function, expected.lines[0].function);
  EXPECT_EQ(p.symbols[f]->lines[0].raw_function, expected.lines[0].raw_function);
}

}  // namespace
}  // namespace stacksym
