// Process symbolization against a live child (process_target): a deleted binary, a
// dlopen()ed library, a second thread, the vDSO, perf-map JIT code and the heap. Answers are
// checked against ElfSymbolizer on the files on disk and against llvm-symbolizer; exits,
// bad pids and bad addresses must give Reasons.
#include "stacksym/process.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <sstream>
#include <string>
#include <vector>

#include "normalize/vma_sources.h"
#include "process_test_target.h"
#include "stacksym/normalize.h"
#include "test_util.h"

namespace stacksym {
namespace {

using testing::FixturePath;
using testing::Hex;
using testing::RunCommand;
using testing::TargetProcess;

class ProcessSymbolizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    target_ = TargetProcess::Start(&error);
    ASSERT_TRUE(target_) << error;
    for (const char* name : {"main_work", "thread", "lib_compute", "jit", "heap"}) {
      ASSERT_NE(target_->at(name), 0u) << name;
    }
  }

  // What the on-disk file says for the address, via the normalizer's file offset.
  SymbolizedAddress OnDisk(const std::string& file, uint64_t address) {
    Normalizer normalizer;
    std::vector<uint64_t> one = {address};
    Result<NormalizedBatch> batch = normalizer.Normalize(target_->pid(), one);
    EXPECT_TRUE(batch);
    EXPECT_TRUE(batch->addresses[0].ok());
    auto sym = ElfSymbolizer::Open(file);
    EXPECT_TRUE(sym) << sym.error().ToString();
    return (*sym)->Symbolize(batch->addresses[0].file_offset, AddressKind::kFileOffset);
  }

  // llvm-symbolizer's answer for the same file at the same virtual address: one
  // (function, line) pair per inline frame.
  std::vector<std::pair<std::string, uint32_t>> LlvmSymbolizer(const std::string& file,
                                                               uint64_t vaddr) {
    std::istringstream in(RunCommand("llvm-symbolizer --obj='" + file + "' " + Hex(vaddr)));
    std::vector<std::pair<std::string, uint32_t>> frames;
    std::string function, location;
    while (std::getline(in, function) && std::getline(in, location)) {
      if (function.empty()) break;
      size_t colon = location.find(':');
      frames.emplace_back(function, static_cast<uint32_t>(std::stoul(location.substr(colon + 1))));
    }
    return frames;
  }

  void ExpectSameAsOnDisk(const SymbolizedAddress& live, const std::string& file,
                          uint64_t address) {
    SymbolizedAddress disk = OnDisk(file, address);
    ASSERT_FALSE(live.reason) << ReasonText(*live.reason);
    ASSERT_FALSE(disk.reason);
    EXPECT_EQ(live.symbol, disk.symbol);
    EXPECT_EQ(live.offset, disk.offset);
    EXPECT_EQ(live.vaddr, disk.vaddr);
    ASSERT_EQ(live.frames.size(), disk.frames.size());
    for (size_t i = 0; i < live.frames.size(); ++i) {
      EXPECT_EQ(live.frames[i].function, disk.frames[i].function);
      EXPECT_EQ(live.frames[i].file, disk.frames[i].file);
      EXPECT_EQ(live.frames[i].line, disk.frames[i].line);
    }
    auto llvm = LlvmSymbolizer(file, live.vaddr);
    ASSERT_FALSE(llvm.empty());
    if (live.frames.empty()) {
      EXPECT_EQ(live.symbol, llvm.back().first);  // symbols only: the outermost function
    } else {
      ASSERT_EQ(live.frames.size(), llvm.size());
      for (size_t i = 0; i < llvm.size(); ++i) {
        EXPECT_EQ(live.frames[i].function, llvm[i].first);
        EXPECT_EQ(live.frames[i].line, llvm[i].second);
      }
    }
  }

  std::unique_ptr<TargetProcess> target_;
};

TEST_F(ProcessSymbolizerTest, EveryKindOfMapping) {
  ASSERT_TRUE(target_->DeleteBinary());  // map_files must still reach it
  const uint64_t jit = target_->at("jit");
  std::vector<uint64_t> addrs = {
      target_->at("main_work") + 1,
      target_->at("thread"),
      target_->at("lib_compute") + 2,
      jit + 4,
      jit + 0x45,
      jit + 0x80,
      target_->at("heap"),
      0,
      ~uint64_t{0},
  };
  uint64_t vdso = target_->at("vdso_clock_gettime");
  if (vdso) addrs.push_back(vdso);

  ProcessSymbolizer symbolizer;
  Result<std::vector<SymbolizedAddress>> r = symbolizer.Symbolize(target_->pid(), addrs);
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->size(), addrs.size());
  const std::vector<SymbolizedAddress>& out = *r;
  const std::vector<SymbolSource>& sources = symbolizer.last_sources();
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].input, addrs[i]);

  // The deleted executable and its thread function.
  EXPECT_EQ(out[0].symbol, "process_target_work");
  EXPECT_EQ(out[0].offset, 1u);
  EXPECT_EQ(out[0].module, target_->binary() + " (deleted)");
  EXPECT_EQ(sources[0], SymbolSource::kElf);
  ExpectSameAsOnDisk(out[0], FixturePath("process_target"), addrs[0]);
  EXPECT_EQ(out[1].symbol, "process_target_thread");
  ExpectSameAsOnDisk(out[1], FixturePath("process_target"), addrs[1]);

  // The dlopen()ed library.
  EXPECT_EQ(out[2].symbol, "process_lib_compute");
  EXPECT_EQ(out[2].offset, 2u);
  EXPECT_EQ(out[2].module, FixturePath("libprocess_lib.so"));
  ExpectSameAsOnDisk(out[2], FixturePath("libprocess_lib.so"), addrs[2]);

  // JIT code from the perf map (names with spaces), and past its entries.
  ASSERT_FALSE(out[3].reason);
  EXPECT_EQ(out[3].symbol, "jit_function_one");
  EXPECT_EQ(out[3].offset, 4u);
  EXPECT_EQ(out[3].symbol_size, 0x40u);
  EXPECT_EQ(sources[3], SymbolSource::kPerfMap);
  EXPECT_NE(out[3].module.find("perf-" + std::to_string(target_->pid()) + ".map"),
            std::string::npos);
  ASSERT_FALSE(out[4].reason);
  EXPECT_EQ(out[4].symbol, "JS:~jit function two /app/x.js:3");
  EXPECT_EQ(out[4].offset, 5u);
  EXPECT_EQ(out[5].reason, Reason::kAnonymous);

  // Heap, and addresses that are never mapped.
  EXPECT_EQ(out[6].reason, Reason::kAnonymous);
  EXPECT_TRUE(out[7].reason);
  EXPECT_TRUE(out[8].reason);

  if (!vdso) GTEST_SKIP() << "the C library exposes no __vdso_clock_gettime to check";
  const SymbolizedAddress& v = out.back();
  ASSERT_FALSE(v.reason) << ReasonText(*v.reason);
  EXPECT_NE(v.symbol.find("clock_gettime"), std::string::npos) << v.symbol;
  EXPECT_EQ(v.offset, 0u);
  EXPECT_EQ(v.module, "[vdso]");
  EXPECT_EQ(sources.back(), SymbolSource::kVdso);
}

TEST_F(ProcessSymbolizerTest, CommandMatchesLlvmSymbolizerOnTheFileOnDisk) {
  ASSERT_TRUE(target_->DeleteBinary());
  uint64_t address = target_->at("main_work") + 3;
  SymbolizedAddress disk = OnDisk(FixturePath("process_target"), address);
  ASSERT_FALSE(disk.reason);
  int code = -1;
  std::string ours =
      RunCommand(std::string(STACKSYM_CLI) + " symbolize process --output-style=llvm --pid " +
                     std::to_string(target_->pid()) + " " + Hex(address),
                 &code);
  EXPECT_EQ(code, 0);
  std::string llvm = RunCommand("llvm-symbolizer --obj='" + FixturePath("process_target") + "' " +
                                Hex(disk.vaddr));
  EXPECT_EQ(ours, llvm);

  // Text and JSON name the function too; the vma source can be forced.
  for (const char* source : {"text", "ioctl"}) {
    std::string json = RunCommand(std::string(STACKSYM_CLI) + " symbolize process --json --pid " +
                                  std::to_string(target_->pid()) + " --vma-source " + source + " " +
                                  Hex(address) + " 2>&1");
    if (std::string(source) == "ioctl" && !normalize::ProcmapQuerySupported()) continue;
    EXPECT_NE(json.find("\"symbol\":\"process_target_work\""), std::string::npos) << json;
  }
}

TEST_F(ProcessSymbolizerTest, SourcesAreReusedAcrossCalls) {
  std::vector<uint64_t> addrs = {target_->at("main_work"), target_->at("lib_compute"),
                                 target_->at("jit") + 4};
  uint64_t vdso = target_->at("vdso_clock_gettime");
  if (vdso) addrs.push_back(vdso);
  ProcessSymbolizer symbolizer;
  auto first = symbolizer.Symbolize(target_->pid(), addrs);
  ASSERT_TRUE(first);
  EXPECT_EQ(symbolizer.stats().files_opened, 2u);
  EXPECT_EQ(symbolizer.stats().file_cache_hits, 0u);
  EXPECT_EQ(symbolizer.stats().perf_map_loads, 1u);
  auto second = symbolizer.Symbolize(target_->pid(), addrs);
  ASSERT_TRUE(second);
  EXPECT_EQ(symbolizer.stats().files_opened, 2u);
  EXPECT_EQ(symbolizer.stats().file_cache_hits, 2u);
  EXPECT_EQ(symbolizer.stats().perf_map_loads, 1u);
  if (vdso) {
    EXPECT_EQ(symbolizer.stats().vdso_reuses, 1u);
  }
  for (size_t i = 0; i < addrs.size(); ++i) {
    ASSERT_FALSE((*second)[i].reason) << i;
    EXPECT_EQ((*first)[i].symbol, (*second)[i].symbol);
  }

  // The JIT appends to its map: the next call re-reads it.
  std::string map_path = "/tmp/perf-" + std::to_string(target_->pid()) + ".map";
  FILE* map = std::fopen(map_path.c_str(), "a");
  ASSERT_NE(map, nullptr);
  std::fprintf(map, "%llx 10 jit_function_three\n",
               static_cast<unsigned long long>(target_->at("jit") + 0x100));
  std::fclose(map);
  std::vector<uint64_t> jit3 = {target_->at("jit") + 0x108};
  auto third = symbolizer.Symbolize(target_->pid(), jit3);
  ASSERT_TRUE(third);
  EXPECT_EQ((*third)[0].symbol, "jit_function_three");
  EXPECT_EQ(symbolizer.stats().perf_map_loads, 2u);
}

TEST_F(ProcessSymbolizerTest, TinyFileCacheStillAnswersEveryAddress) {
  ProcessSymbolizerOptions options;
  options.cached_files = 1;  // every new file evicts the one the same call just used
  ProcessSymbolizer symbolizer(options);
  std::vector<uint64_t> addrs = {target_->at("main_work"), target_->at("lib_compute"),
                                 target_->at("thread")};
  for (int round = 0; round < 2; ++round) {
    auto r = symbolizer.Symbolize(target_->pid(), addrs);
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)[0].symbol, "process_target_work");
    EXPECT_EQ((*r)[1].symbol, "process_lib_compute");
    EXPECT_EQ((*r)[2].symbol, "process_target_thread");
  }
  EXPECT_EQ(symbolizer.stats().files_opened, 4u);
  options.cached_files = 0;
  ProcessSymbolizer uncached(options);
  ASSERT_TRUE(uncached.Symbolize(target_->pid(), addrs));
  ASSERT_TRUE(uncached.Symbolize(target_->pid(), addrs));
  EXPECT_EQ(uncached.stats().files_opened, 4u);
  EXPECT_EQ(uncached.stats().file_cache_hits, 0u);
}

// The kept ElfSymbolizers are bounded by the heap they hold, least recently used first; the
// answers do not change, only how often files are parsed.
TEST_F(ProcessSymbolizerTest, MemoryBoundDropsLeastRecentlyUsedFiles) {
  std::vector<uint64_t> main_only = {target_->at("main_work")};
  std::vector<uint64_t> lib_only = {target_->at("lib_compute")};
  ProcessSymbolizer unbounded;
  auto reference = unbounded.Symbolize(target_->pid(), main_only);
  ASSERT_TRUE(reference && !(*reference)[0].reason);
  ASSERT_FALSE((*reference)[0].frames.empty()) << "the fixture has DWARF";
  size_t main_bytes = unbounded.stats().cached_bytes;
  EXPECT_GT(main_bytes, 0u);
  ASSERT_TRUE(unbounded.Symbolize(target_->pid(), lib_only));
  size_t both_bytes = unbounded.stats().cached_bytes;
  EXPECT_GT(both_bytes, main_bytes);
  EXPECT_EQ(unbounded.stats().evicted_for_memory, 0u);

  // Room for one of the two: the library evicts the binary, which is parsed again next.
  ProcessSymbolizerOptions options;
  options.cached_bytes = both_bytes - 1;
  ProcessSymbolizer bounded(options);
  ASSERT_TRUE(bounded.Symbolize(target_->pid(), main_only));
  ASSERT_TRUE(bounded.Symbolize(target_->pid(), lib_only));
  EXPECT_EQ(bounded.stats().evicted_for_memory, 1u);
  EXPECT_LE(bounded.stats().cached_bytes, options.cached_bytes);
  auto again = bounded.Symbolize(target_->pid(), main_only);
  ASSERT_TRUE(again);
  EXPECT_EQ(bounded.stats().files_opened, 3u);
  EXPECT_EQ((*again)[0].symbol, (*reference)[0].symbol);
  ASSERT_EQ((*again)[0].frames.size(), (*reference)[0].frames.size());
  EXPECT_EQ((*again)[0].frames.back().line, (*reference)[0].frames.back().line);

  // No room at all: nothing is kept, every call parses what it needs.
  options.cached_bytes = 0;
  ProcessSymbolizer none(options);
  for (int round = 0; round < 2; ++round) {
    auto r = none.Symbolize(target_->pid(), main_only);
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)[0].symbol, (*reference)[0].symbol);
    EXPECT_EQ(none.stats().cached_bytes, 0u);
  }
  EXPECT_EQ(none.stats().files_opened, 2u);
  EXPECT_EQ(none.stats().file_cache_hits, 0u);
}

// A process in its own mount namespace, running a binary that exists only in its private
// /tmp: map_files reaches the binary, /proc/PID/root reaches the perf map.
TEST(ProcessSymbolizerContainerTest, BinaryAndPerfMapInAnotherMountNamespace) {
  std::string error;
  auto target = TargetProcess::Start(&error, /*private_tmp=*/true);
  if (!target) GTEST_SKIP() << "cannot run in a private mount namespace (unshare -m): " << error;
  struct stat st;
  ASSERT_NE(stat("/tmp/process_target_in_ns", &st), 0) << "the host must not see the binary";
  ASSERT_NE(stat("/tmp/libprocess_lib_in_ns.so", &st), 0);
  std::vector<uint64_t> addrs = {target->at("main_work") + 1, target->at("jit") + 2,
                                 target->at("lib_compute") + 3};
  ProcessSymbolizer symbolizer;
  auto r = symbolizer.Symbolize(target->pid(), addrs);
  ASSERT_TRUE(r);
  ASSERT_FALSE((*r)[0].reason) << ReasonText(*(*r)[0].reason);
  EXPECT_EQ((*r)[0].symbol, "process_target_work");
  EXPECT_EQ((*r)[0].module, "/tmp/process_target_in_ns");
  ASSERT_FALSE((*r)[1].reason) << ReasonText(*(*r)[1].reason);
  EXPECT_EQ((*r)[1].symbol, "jit_function_one");
  EXPECT_EQ((*r)[1].module, "/proc/" + std::to_string(target->pid()) + "/root/tmp/perf-" +
                                std::to_string(target->pid()) + ".map");
}

// The binary is reached through /proc/PID/map_files, whose directory says nothing about
// where its .gnu_debuglink file is: the path the process maps it by does. Both where that
// path is in another mount namespace (only /proc/PID/root reaches it) and where the binary
// was deleted but its debug file was not.
void ExpectDwarfLine(const SymbolizedAddress& a) {
  ASSERT_FALSE(a.reason) << ReasonText(*a.reason);
  EXPECT_EQ(a.symbol, "process_target_work");
  ASSERT_FALSE(a.frames.empty()) << "no DWARF: the debuglink file was not found";
  EXPECT_EQ(a.frames.back().function, "process_target_work");
  EXPECT_NE(a.frames.back().file.find("process_target.c"), std::string::npos)
      << a.frames.back().file;
  EXPECT_GT(a.frames.back().line, 0u);
}

TEST(ProcessSymbolizerDebuglinkTest, DebugFileNextToBinaryInAnotherMountNamespace) {
  std::string error;
  auto target = TargetProcess::Start(&error, /*private_tmp=*/true, /*debuglinked=*/true);
  if (!target) GTEST_SKIP() << "cannot run in a private mount namespace (unshare -m): " << error;
  struct stat st;
  ASSERT_NE(stat("/tmp/process_target.debug", &st), 0) << "the host must not see the file";
  std::vector<uint64_t> addrs = {target->at("main_work") + 1};
  ProcessSymbolizer symbolizer;
  auto r = symbolizer.Symbolize(target->pid(), addrs);
  ASSERT_TRUE(r);
  ExpectDwarfLine((*r)[0]);
}

TEST(ProcessSymbolizerDebuglinkTest, DebugFileNextToDeletedBinary) {
  std::string error;
  auto target = TargetProcess::Start(&error, /*private_tmp=*/false, /*debuglinked=*/true);
  ASSERT_TRUE(target) << error;
  ASSERT_TRUE(target->DeleteBinary());
  std::vector<uint64_t> addrs = {target->at("main_work") + 1};
  ProcessSymbolizer symbolizer;
  auto r = symbolizer.Symbolize(target->pid(), addrs);
  ASSERT_TRUE(r);
  ExpectDwarfLine((*r)[0]);
  // Without its debug file, the same address has only the symbol table.
  ASSERT_EQ(unlink(target->debug_file().c_str()), 0);
  ProcessSymbolizer fresh;
  auto bare = fresh.Symbolize(target->pid(), addrs);
  ASSERT_TRUE(bare);
  ASSERT_FALSE((*bare)[0].reason);
  EXPECT_EQ((*bare)[0].symbol, "process_target_work");
  EXPECT_TRUE((*bare)[0].frames.empty());
}

TEST_F(ProcessSymbolizerTest, EmptyBatch) {
  ProcessSymbolizer symbolizer;
  Result<std::vector<SymbolizedAddress>> r = symbolizer.Symbolize(target_->pid(), {});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->empty());
}

TEST_F(ProcessSymbolizerTest, ProcessGoneBetweenNormalizeAndSymbolize) {
  std::vector<uint64_t> addrs = {target_->at("main_work"), target_->at("lib_compute"),
                                 target_->at("jit")};
  ProcessSymbolizer symbolizer;
  Result<NormalizedBatch> batch = symbolizer.normalizer().Normalize(target_->pid(), addrs);
  ASSERT_TRUE(batch);
  for (const NormalizedAddress& a : batch->addresses) EXPECT_TRUE(a.ok());
  target_->RequestExit();
  target_->Reap();
  std::vector<SymbolizedAddress> out = symbolizer.SymbolizeNormalized(*batch, addrs);
  ASSERT_EQ(out.size(), 3u);
  // Its files are still where it mapped them (the same inodes): they answer; its perf map
  // went with it.
  EXPECT_EQ(out[0].symbol, "process_target_work");
  EXPECT_EQ(out[1].symbol, "process_lib_compute");
  EXPECT_TRUE(out[2].reason);

  // And a fresh call on the pid that is gone.
  Result<std::vector<SymbolizedAddress>> again = symbolizer.Symbolize(target_->pid(), addrs);
  ASSERT_TRUE(again);
  for (const SymbolizedAddress& a : *again) EXPECT_EQ(a.reason, Reason::kProcessGone);
}

TEST_F(ProcessSymbolizerTest, ZombieGivesReasons) {
  target_->RequestExit();
  target_->WaitUntilExited();  // exited, not reaped: /proc/PID exists, its memory does not
  std::vector<uint64_t> addrs = {target_->at("main_work"), target_->at("heap")};
  ProcessSymbolizer symbolizer;
  Result<std::vector<SymbolizedAddress>> r = symbolizer.Symbolize(target_->pid(), addrs);
  ASSERT_TRUE(r);
  for (const SymbolizedAddress& a : *r) {
    ASSERT_TRUE(a.reason);
    EXPECT_TRUE(*a.reason == Reason::kProcessGone || *a.reason == Reason::kUnmapped)
        << ReasonName(*a.reason);
  }
}

TEST(ProcessSymbolizerBadInputTest, BadPids) {
  ProcessSymbolizer symbolizer;
  std::vector<uint64_t> addrs = {0x1000, 0, ~uint64_t{0}};
  EXPECT_FALSE(symbolizer.Symbolize(0, addrs));
  EXPECT_FALSE(symbolizer.Symbolize(-1, addrs));
  Result<std::vector<SymbolizedAddress>> gone = symbolizer.Symbolize(0x3ffffff0, addrs);
  ASSERT_TRUE(gone);
  ASSERT_EQ(gone->size(), 3u);
  EXPECT_EQ((*gone)[0].reason, Reason::kProcessGone);
  for (const SymbolizedAddress& a : *gone) {
    ASSERT_TRUE(a.reason);  // 0 and ~0 may be rejected before the process is looked at
    EXPECT_TRUE(*a.reason == Reason::kProcessGone || *a.reason == Reason::kInvalidAddress);
  }

  int code = -1;
  std::string cli = std::string(STACKSYM_CLI) + " symbolize process ";
  std::string err = RunCommand(cli + "--pid 0 1000 2>&1", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find("invalid pid"), std::string::npos) << err;
  err = RunCommand(cli + "--pid 1073741808 1000 2>&1", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find("no process"), std::string::npos) << err;
  err = RunCommand(cli + "--pid 1 zz 2>&1", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find("invalid address"), std::string::npos) << err;
}

TEST(ProcessSymbolizerBadInputTest, VdsoReadOfBadRanges) {
  EXPECT_FALSE(ReadVdsoImage(getpid(), 0x2000, 0x1000));
  EXPECT_FALSE(ReadVdsoImage(getpid(), 0, uint64_t{1} << 40));
  EXPECT_FALSE(ReadVdsoImage(0x3ffffff0, 0x1000, 0x3000));
}

}  // namespace
}  // namespace stacksym
