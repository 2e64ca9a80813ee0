// `symbolize build-id`: normalize a live process, then symbolize (build ID, file offset) from
// a .build-id directory tree — the answer must equal `symbolize process`. Also the debug-file
// only case (rest.debug), a file at the right path with the wrong build ID, and bad input.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "process_test_target.h"
#include "stacksym/build_id.h"
#include "stacksym/elf.h"
#include "stacksym/normalize.h"
#include "stacksym/process.h"
#include "test_util.h"

namespace stacksym {
namespace {

using testing::FixturePath;
using testing::Hex;
using testing::RunCommand;
using testing::TargetProcess;

// A fresh debug directory under the test temp dir.
std::string MakeDebugDir(const std::string& tag) {
  std::string dir = ::testing::TempDir();
  if (!dir.empty() && dir.back() == '/') dir.pop_back();
  dir += "/buildid_test_" + tag + "_" + std::to_string(getpid());
  RunCommand("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  return dir;
}

// Places `file` at <dir>/.build-id/xx/rest<suffix> (a copy, or objcopy's debug-only file).
void Install(const std::string& dir, std::span<const uint8_t> build_id, const std::string& file,
             const std::string& suffix, bool only_keep_debug) {
  std::vector<std::string> paths = BuildIdPaths(dir, build_id);
  std::string target = paths[0] + suffix;
  std::string parent = target.substr(0, target.rfind('/'));
  std::string cmd = "mkdir -p '" + parent + "' && ";
  cmd += only_keep_debug ? "objcopy --only-keep-debug '" + file + "' '" + target + "'"
                         : "cp '" + file + "' '" + target + "'";
  int code = -1;
  RunCommand(cmd, &code);
  ASSERT_EQ(code, 0) << cmd;
}

void ExpectSame(const SymbolizedAddress& a, const SymbolizedAddress& b) {
  ASSERT_FALSE(a.reason);
  ASSERT_FALSE(b.reason);
  EXPECT_EQ(a.symbol, b.symbol);
  EXPECT_EQ(a.offset, b.offset);
  EXPECT_EQ(a.vaddr, b.vaddr);
  ASSERT_EQ(a.frames.size(), b.frames.size());
  for (size_t i = 0; i < a.frames.size(); ++i) {
    EXPECT_EQ(a.frames[i].function, b.frames[i].function);
    EXPECT_EQ(a.frames[i].file, b.frames[i].file);
    EXPECT_EQ(a.frames[i].line, b.frames[i].line);
  }
}

TEST(BuildIdSymbolizerTest, NormalizedOutputSymbolizesLikeTheLiveProcess) {
  std::string error;
  auto target = TargetProcess::Start(&error);
  ASSERT_TRUE(target) << error;
  ASSERT_TRUE(target->DeleteBinary());
  std::vector<uint64_t> addrs = {target->at("main_work") + 1, target->at("thread") + 2,
                                 target->at("lib_compute") + 3};
  Normalizer normalizer;
  Result<NormalizedBatch> batch = normalizer.Normalize(target->pid(), addrs);
  ASSERT_TRUE(batch);
  ProcessSymbolizer process;
  Result<std::vector<SymbolizedAddress>> live = process.Symbolize(target->pid(), addrs);
  ASSERT_TRUE(live);

  // The "remote" machine has the binaries only in a .build-id tree.
  std::string dir = MakeDebugDir("remote");
  for (const NormalizedAddress& a : batch->addresses) {
    ASSERT_TRUE(a.ok());
    const Module& m = batch->modules[a.module];
    ASSERT_FALSE(m.build_id.empty()) << m.path;
    bool is_lib = m.path.find("libprocess_lib") != std::string::npos;
    std::string file = FixturePath(is_lib ? "libprocess_lib.so" : "process_target");
    if (!BuildIdSymbolizer().PathFor(m.build_id).empty()) continue;
    struct stat st;
    if (stat(BuildIdPaths(dir, m.build_id)[0].c_str(), &st) != 0) {
      Install(dir, m.build_id, file, "", false);
    }
  }
  SymbolizeOptions options;
  options.debug_dirs = {dir};
  BuildIdSymbolizer remote(options);
  for (size_t i = 0; i < addrs.size(); ++i) {
    const NormalizedAddress& a = batch->addresses[i];
    const Module& m = batch->modules[a.module];
    SymbolizedAddress r = remote.Symbolize(m.build_id, a.file_offset);
    ExpectSame(r, (*live)[i]);
    EXPECT_EQ(r.input, a.file_offset);
    EXPECT_EQ(remote.PathFor(m.build_id), BuildIdPaths(dir, m.build_id)[0]);

    // End to end through the commands: `normalize --json` gives (build ID, offset), and
    // `symbolize build-id` on those prints what `symbolize process` prints.
    std::string cli = std::string(STACKSYM_CLI);
    std::string normalized = RunCommand(cli + " normalize --json --pid " +
                                        std::to_string(target->pid()) + " " + Hex(addrs[i]));
    auto field = [&](const std::string& key) {
      size_t p = normalized.find("\"" + key + "\":\"");
      if (p == std::string::npos) return std::string();
      p += key.size() + 4;
      return normalized.substr(p, normalized.find('"', p) - p);
    };
    EXPECT_EQ(field("build_id"), ToHex(m.build_id)) << normalized;
    EXPECT_EQ(field("file_offset"), Hex(a.file_offset)) << normalized;
    int code = -1;
    std::string by_id =
        RunCommand(cli + " symbolize build-id --output-style=llvm --debug-dir '" + dir +
                       "' --build-id " + field("build_id") + " " + field("file_offset"),
                   &code);
    EXPECT_EQ(code, 0);
    std::string by_pid = RunCommand(cli + " symbolize process --output-style=llvm --pid " +
                                    std::to_string(target->pid()) + " " + Hex(addrs[i]));
    EXPECT_EQ(by_id, by_pid);
    EXPECT_NE(by_id.find(r.symbol), std::string::npos) << by_id;
  }
}

struct WorkOffset {
  std::vector<uint8_t> build_id;
  uint64_t offset = 0;  // of process_target_work + 4
};

WorkOffset ProcessTargetWork() {
  WorkOffset w;
  auto elf = ElfFile::Open(FixturePath("process_target"));
  EXPECT_TRUE(elf);
  w.build_id.assign((*elf)->build_id().begin(), (*elf)->build_id().end());
  const ElfSymbol* work = (*elf)->symbols().FindByName("process_target_work");
  EXPECT_NE(work, nullptr);
  w.offset = (*elf)->VaddrToFileOffset(work->address + 4).value_or(0);
  return w;
}

// objcopy --only-keep-debug zeroes p_offset/p_filesz: a file offset cannot be placed in such
// a file, and the lookup says so instead of guessing.
TEST(BuildIdSymbolizerTest, DebugFileAloneCannotPlaceFileOffsets) {
  WorkOffset w = ProcessTargetWork();
  ASSERT_FALSE(w.build_id.empty());
  std::string dir = MakeDebugDir("debugonly");
  Install(dir, w.build_id, FixturePath("process_target"), ".debug", true);
  Result<std::string> any = FindFileByBuildId(w.build_id, {dir});
  ASSERT_TRUE(any) << any.error().ToString();
  EXPECT_EQ(*any, BuildIdPaths(dir, w.build_id)[1]);
  auto debug_elf = ElfFile::Open(*any);
  ASSERT_TRUE(debug_elf);
  EXPECT_FALSE(HasFileBackedCode(**debug_elf));

  Result<std::string> binary = FindBinaryByBuildId(w.build_id, {dir});
  ASSERT_FALSE(binary);
  EXPECT_NE(binary.error().message.find("only a separate debug file"), std::string::npos)
      << binary.error().message;
  SymbolizeOptions options;
  options.debug_dirs = {dir};
  BuildIdSymbolizer symbolizer(options);
  EXPECT_EQ(symbolizer.Symbolize(w.build_id, w.offset).reason, Reason::kNotFound);
}

// The usual remote layout: a stripped binary in one tree, its debug file in another. The
// binary places the offset; DWARF comes from the debug file.
TEST(BuildIdSymbolizerTest, StrippedBinaryPlusDebugFile) {
  WorkOffset w = ProcessTargetWork();
  ASSERT_FALSE(w.build_id.empty());
  std::string debug_dir = MakeDebugDir("split_debug");
  std::string bin_dir = MakeDebugDir("split_bin");
  Install(debug_dir, w.build_id, FixturePath("process_target"), ".debug", true);
  std::string stripped = bin_dir + "/stripped";
  int code = -1;
  RunCommand("strip --strip-debug -o '" + stripped + "' '" + FixturePath("process_target") + "'",
             &code);
  ASSERT_EQ(code, 0);
  Install(bin_dir, w.build_id, stripped, "", false);

  SymbolizeOptions options;
  options.debug_dirs = {debug_dir, bin_dir};  // the debug file's dir first: binary still wins
  BuildIdSymbolizer symbolizer(options);
  SymbolizedAddress r = symbolizer.Symbolize(w.build_id, w.offset);
  EXPECT_EQ(symbolizer.PathFor(w.build_id), BuildIdPaths(bin_dir, w.build_id)[0]);
  auto full = ElfSymbolizer::Open(FixturePath("process_target"));
  ASSERT_TRUE(full);
  SymbolizedAddress want = (*full)->Symbolize(w.offset, AddressKind::kFileOffset);
  ExpectSame(r, want);
  EXPECT_EQ(r.symbol, "process_target_work");
  EXPECT_EQ(r.offset, 4u);
  EXPECT_FALSE(r.frames.empty()) << "DWARF should come from the separate debug file";
}

TEST(BuildIdSymbolizerTest, WrongBuildIdAtThePathIsNotUsed) {
  auto lib = ElfFile::Open(FixturePath("libprocess_lib.so"));
  ASSERT_TRUE(lib);
  std::vector<uint8_t> wanted((*lib)->build_id().begin(), (*lib)->build_id().end());
  ASSERT_FALSE(wanted.empty());
  wanted[0] ^= 0xff;  // an ID nobody has; install the real library under it
  std::string dir = MakeDebugDir("wrong");
  Install(dir, wanted, FixturePath("libprocess_lib.so"), "", false);
  Result<std::string> found = FindFileByBuildId(wanted, {dir});
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().code, ErrorCode::kNotFound);
  EXPECT_NE(found.error().message.find("has build ID " + (*lib)->build_id_hex()), std::string::npos)
      << found.error().message;
  SymbolizeOptions options;
  options.debug_dirs = {dir};
  BuildIdSymbolizer symbolizer(options);
  EXPECT_EQ(symbolizer.Symbolize(wanted, 0x1000).reason, Reason::kNotFound);
}

TEST(BuildIdSymbolizerTest, BadInput) {
  EXPECT_EQ(FindFileByBuildId({}, {"/usr/lib/debug"}).error().code, ErrorCode::kInvalidArgument);
  std::vector<uint8_t> one = {0xab};
  EXPECT_FALSE(FindFileByBuildId(one, {"/usr/lib/debug"}));
  BuildIdSymbolizer symbolizer;
  EXPECT_EQ(symbolizer.Symbolize({}, 0).reason, Reason::kNoBuildId);
  std::vector<uint8_t> absent(20, 0x5a);
  EXPECT_EQ(symbolizer.Symbolize(absent, 0).reason, Reason::kNotFound);
  EXPECT_TRUE(BuildIdPaths("/x", one).empty());
  EXPECT_EQ(BuildIdPaths("/x/", std::vector<uint8_t>{0xab, 0xcd, 0xef})[1],
            "/x/.build-id/ab/cdef.debug");

  std::string cli = std::string(STACKSYM_CLI) + " symbolize build-id ";
  int code = -1;
  std::string out = RunCommand(cli + "--build-id xyz 10 2>&1", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("invalid build ID"), std::string::npos) << out;
  out = RunCommand(
      cli + "--debug-dir /nonexistent --build-id " + ToHex(absent) + " 10 20 --json 2>&1", &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("no binary with build ID"), std::string::npos) << out;
  // Each offset is still answered, with the Reason.
  size_t first = out.find("\"reason\":\"not_found\"");
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_NE(out.find("\"reason\":\"not_found\"", first + 1), std::string::npos) << out;
}

}  // namespace
}  // namespace stacksym
