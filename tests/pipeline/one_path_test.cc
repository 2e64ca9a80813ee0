// One way through (issue 30): the same program, its debug info laid out eight ways, recorded
// without symbols, then symbolized by every path a user has — `symbolize-profile` with local
// files, `symbolize-profile --server` against a symbolization server given the same files, and
// `record` symbolizing itself. Every path must give the same answer: byte-identical folded and
// pprof files between the local and the server paths, every function of the program named
// (_start included, which only a symbol table names), kernel frames named, and `record` naming
// the same functions.
//
// Layouts: (a) unstripped; (b) stripped, binary and .debug in a --debug-dir .build-id tree;
// (c) stripped with a .gnu_debuglink file beside it; (d) only on a debuginfod server (Debian's,
// on a private loopback); (e) dwz with a supplementary file; (f) split DWARF (.dwo); (g) stripped
// by elfutils' eu-strip -f as rpm's find-debuginfo does (Fedora, RHEL), the binary and its
// .debug — whose program headers still describe the original — in a --debug-dir .build-id
// tree; (h) stripped with MiniDebugInfo only (.gnu_debugdata, made as Fedora makes it): the
// program's functions named from the xz-compressed .symtab, with no debug file anywhere;
// (i) a Go program stripped as Go services ship (-ldflags='-s -w'), named from its .gopclntab
// alone (built at test time with golang-go, with a GNU build ID note so the server finds it);
// (j) JIT code: the unstripped program also runs code it wrote into anonymous memory, named
// only by the perf map it writes (/tmp/perf-PID.map), read by record as the recording ends and
// by symbolize-profile --perf-map-dir on both its paths.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../remote/debuginfod_server.h"
#include "../symbolize/go_builds.h"
#include "../symbolize/test_util.h"
#include "stacksym/elf.h"
#include "stacksym/remote.h"

namespace stacksym {
namespace {

namespace fs = std::filesystem;
using testing::FixturePath;
using testing::RunCommand;

const std::string kCli = STACKSYM_CLI;
// The program's own functions: every one must be named in every profile.
const std::vector<std::string> kProgramFunctions = {"_start", "main", "outer",
                                                    "middle", "leaf", "read_zero"};
// The Go program's (tests/elf/fixtures/go_prog), square inlined into leafHot and middle.
const std::vector<std::string> kGoProgramFunctions = {
    "runtime.main", "main.main", "main.outer", "main.middle", "main.leafHot", "main.readZero"};

enum class Layout {
  kPlain,
  kBuildIdDir,
  kDebuglink,
  kDebuginfod,
  kDwz,
  kSplit,
  kEuStrip,
  kMiniDebugInfo,
  kGoStripped,
  kPerfMap
};

struct Case {
  Layout layout;
  const char* name;
  const char* fixture;
};

void PrintTo(const Case& c, std::ostream* out) { *out << c.name; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Shell(const std::string& command) {
  int code = -1;
  std::string out = RunCommand(command + " 2>&1", &code);
  ASSERT_EQ(code, 0) << command << "\n" << out;
}

std::string BuildIdHex(const std::string& path) {
  Result<std::shared_ptr<ElfFile>> elf = ElfFile::Open(path);
  return elf ? (*elf)->build_id_hex() : std::string();
}

// The frames of a folded file (each line "comm;outer;...;leaf COUNT").
std::set<std::string> FoldedFrames(const std::string& folded) {
  std::set<std::string> frames;
  std::istringstream lines(folded);
  for (std::string line; std::getline(lines, line);) {
    line = line.substr(0, line.rfind(' '));
    std::istringstream parts(line);
    for (std::string frame; std::getline(parts, frame, ';');) frames.insert(frame);
  }
  return frames;
}

class OnePathTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    work_ = ::testing::TempDir() + "/one-path-" + GetParam().name + "-" + std::to_string(getpid());
    fs::remove_all(work_);
    fs::create_directories(work_);
    binary_ = work_ + "/prog";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(work_);
  }

  // Lays the fixture out as the case says: the program to run at binary_, the local flags
  // symbolize-profile and record need, and the server's debug dir.
  void LayOut() {
    std::string fixture = GetParam().layout == Layout::kGoStripped
                              ? BuildGoProgram()
                              : FixturePath(GetParam().fixture);
    ASSERT_FALSE(fixture.empty()) << testing::GoBuilds::Get().error();
    std::string id = BuildIdHex(fixture);
    ASSERT_GT(id.size(), 2u) << fixture;
    std::string tree = "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2);
    server_dir_ = work_ + "/server-debug";
    switch (GetParam().layout) {
      case Layout::kPlain:
      case Layout::kDwz:
      case Layout::kSplit:
      case Layout::kGoStripped:
      case Layout::kPerfMap:
        Shell("cp " + fixture + " " + binary_);
        break;
      case Layout::kBuildIdDir:
        server_dir_ = work_ + "/dbg";
        Shell("mkdir -p " + server_dir_ + "/.build-id/" + id.substr(0, 2) + " && cp " + fixture +
              " " + server_dir_ + tree + " && objcopy --only-keep-debug " + fixture + " " +
              server_dir_ + tree + ".debug && strip -s -o " + binary_ + " " + fixture);
        local_flags_ = " --debug-dir " + server_dir_;
        return;
      case Layout::kEuStrip:
        server_dir_ = work_ + "/dbg";
        Shell("mkdir -p " + server_dir_ + "/.build-id/" + id.substr(0, 2) + " && eu-strip -f " +
              server_dir_ + tree + ".debug -o " + binary_ + " " + fixture + " && cp " + binary_ +
              " " + server_dir_ + tree);
        local_flags_ = " --debug-dir " + server_dir_;
        return;
      case Layout::kMiniDebugInfo:
        Shell(std::string("sh ") + STACKSYM_MINIDEBUGINFO_SCRIPT + " " + fixture + " " + binary_);
        break;
      case Layout::kDebuglink:
        Shell("cd " + work_ + " && objcopy --only-keep-debug " + fixture +
              " prog.debug && strip -s -o prog " + fixture +
              " && objcopy --add-gnu-debuglink=prog.debug prog");
        break;
      case Layout::kDebuginfod:
        Shell("mkdir -p " + work_ + "/served && objcopy --only-keep-debug " + fixture + " " +
              work_ + "/served/prog.debug && strip -s -o " + work_ + "/served/prog " + fixture +
              " && cp " + work_ + "/served/prog " + binary_);
        return;
    }
    // The server finds files by build ID only: its debug dir links to the program where it is.
    Shell("mkdir -p " + server_dir_ + "/.build-id/" + id.substr(0, 2) + " && ln -s " + binary_ +
          " " + server_dir_ + tree);
  }

  // The C runtime the program maps, linked into the server's debug dir by build ID, as the
  // program is: the local path finds them where they are installed, and a server given only
  // /usr/lib/debug's debug files could not place their file offsets. Without this the paths
  // differed whenever a sample fell in libc or ld.so (the server had less to go on).
  void LinkRuntimeLibraries() {
    for (const char* lib : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}) {
      std::error_code ec;
      std::string path = fs::canonical(lib, ec).string();
      if (ec) continue;
      std::string id = BuildIdHex(path);
      if (id.size() <= 2) continue;
      Shell("mkdir -p " + server_dir_ + "/.build-id/" + id.substr(0, 2) + " && ln -sf " + path +
            " " + server_dir_ + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2));
    }
  }

  // `go build -ldflags='-s -w'`, with a GNU build ID note (Go writes none of its own: the
  // profile and the server know a file by that note).
  static std::string BuildGoProgram() {
    return testing::GoBuilds::Get().Build(
        "one_path_stripped", "CGO_ENABLED=0",
        "-ldflags='-s -w -B 0x6f6e652d706174682d676f2d7374726970706564'");
  }

  // Runs a stacksym command (with the case's environment); its output when it fails.
  std::string Stacksym(const std::string& args, int* code) {
    return RunCommand(env_ + kCli + " " + args + " 2>&1", code);
  }

  std::string work_, binary_, server_dir_, local_flags_, env_;
};

TEST_P(OnePathTest, EveryPathNamesEveryFunctionAlike) {
  if (GetParam().layout == Layout::kEuStrip && RunCommand("command -v eu-strip").empty()) {
    GTEST_SKIP() << "needs elfutils' eu-strip (package elfutils)";
  }
  if (GetParam().layout == Layout::kMiniDebugInfo && RunCommand("command -v xz").empty()) {
    GTEST_SKIP() << "needs xz (package xz-utils)";
  }
  const bool go = GetParam().layout == Layout::kGoStripped;
  const bool jit = GetParam().layout == Layout::kPerfMap;
#if !defined(__x86_64__)
  if (jit) GTEST_SKIP() << "the JIT program writes x86-64 code";
#endif
  // The program's perf maps are removed at the end of its row (only its own: other tests
  // write theirs, and the other rows run beside it).
  struct PerfMapsRemoved {
    bool active;
    ~PerfMapsRemoved() {
      if (!active) return;
      for (const auto& entry : fs::directory_iterator("/tmp")) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with("perf-") && name.ends_with(".map") &&
            ReadFile(entry.path().string()).find("jit_spin_loop") != std::string::npos) {
          std::error_code ec;
          fs::remove(entry.path(), ec);
        }
      }
    }
  } perf_maps_removed{jit};
  if (go && !testing::GoBuilds::Get().have_go()) {
    GTEST_SKIP() << "needs Go (Debian package golang-go)";
  }
  ASSERT_NO_FATAL_FAILURE(LayOut());
  const bool debuginfod = GetParam().layout == Layout::kDebuginfod;
  std::unique_ptr<testing::DebuginfodServer> debuginfod_server;
  if (debuginfod) {
    if (!testing::HaveDebuginfod())
      GTEST_SKIP() << "needs Debian's debuginfod (package debuginfod)";
    std::string why;
    if (!testing::EnterPrivateNetwork(&why)) GTEST_SKIP() << "needs a network namespace: " << why;
    debuginfod_server = std::make_unique<testing::DebuginfodServer>();
    ASSERT_TRUE(debuginfod_server->Start(work_ + "/served", work_, BuildIdHex(binary_)))
        << ReadFile(work_ + "/debuginfod.log");
    ::setenv("DEBUGINFOD_URLS", debuginfod_server->url().c_str(), 1);
    env_ = "DEBUGINFOD_CACHE_PATH=" + work_ + "/client-cache ";
  } else {
    ::unsetenv("DEBUGINFOD_URLS");
  }

  // Recorded without symbols (FP-less code: unwound in BPF from .eh_frame).
  int code = -1;
  std::string out = Stacksym(
      "record --no-symbolize -F 999 -o " + work_ + "/raw.pb.gz -- " + binary_ + " 0.8", &code);
  if (code != 0 && (out.find("Operation not permitted") != std::string::npos ||
                    out.find("permission") != std::string::npos)) {
    GTEST_SKIP() << "recording needs BPF or perf events (root): " << out;
  }
  ASSERT_EQ(code, 0) << out;
  // And with symbols, by record itself (the program's files are still in place).
  std::string recorded =
      Stacksym("record -F 999 --cache-dir " + work_ + "/record-cache" + local_flags_ + " -o " +
                   work_ + "/record.folded -- " + binary_ + " 0.8",
               &code);
  ASSERT_EQ(code, 0) << recorded;
  if (debuginfod) fs::remove(binary_);  // from now on only the debuginfod server has it

  // The server, given the same files (and the same debuginfod).
  LinkRuntimeLibraries();
  SymbolServerOptions server_options;
  server_options.debug_dirs = {server_dir_, "/usr/lib/debug"};
  server_options.fetcher = debuginfod ? MakeDebuginfodFetcher({}) : nullptr;
  Result<std::unique_ptr<SymbolServer>> server =
      SymbolServer::Start("127.0.0.1", 0, server_options);
  ASSERT_TRUE(server) << server.error().ToString();
  std::string url = "http://127.0.0.1:" + std::to_string((*server)->port());

  // One copy of kallsyms for both paths: BPF programs (other tests' recorders, running beside
  // this one) come and go from /proc/kallsyms between the two runs.
  Shell("cp /proc/kallsyms " + work_ + "/kallsyms");
  std::string common = "symbolize-profile --kallsyms " + work_ + "/kallsyms " +
                       std::string(debuginfod ? "" : "--no-debuginfod ") + work_ + "/raw.pb.gz ";
  // (After the positional arguments: the option takes several values.)
  const std::string jit_flags = jit ? " --perf-map-dir /tmp" : "";
  for (const char* ext : {".folded", ".pb.gz"}) {
    SCOPED_TRACE(ext);
    std::string local = work_ + "/local" + ext;
    std::string remote = work_ + "/remote" + ext;
    std::string local_out = Stacksym(
        common + local + " --cache-dir " + work_ + "/local-cache" + local_flags_ + jit_flags,
        &code);
    ASSERT_EQ(code, 0) << local_out;
    std::string remote_out =
        Stacksym(common + remote + " --no-cache --server " + url + jit_flags, &code);
    ASSERT_EQ(code, 0) << remote_out;
    // Not vacuous: the server named the program's frames.
    EXPECT_NE(remote_out.find("frames named by the server"), std::string::npos) << remote_out;
    EXPECT_EQ(remote_out.find(" 0 frames named by the server"), std::string::npos) << remote_out;
    std::string expected = ReadFile(local);
    ASSERT_FALSE(expected.empty());
    EXPECT_TRUE(ReadFile(remote) == expected) << "local and server answers differ\n"
                                              << local_out << remote_out;
  }
  (*server)->Stop();

  // Every function of the program named, on both paths and by record; kernel frames named.
  std::set<std::string> frames = FoldedFrames(ReadFile(work_ + "/local.folded"));
  std::set<std::string> by_record = FoldedFrames(ReadFile(work_ + "/record.folded"));
  std::vector<std::string> functions = go ? kGoProgramFunctions : kProgramFunctions;
  if (jit) functions.push_back("jit_spin_loop");
  for (const std::string& function : functions) {
    EXPECT_TRUE(frames.count(function)) << function << " not named by symbolize-profile";
    EXPECT_TRUE(by_record.count(function)) << function << " not named by record\n" << recorded;
  }
  bool kernel_named = false;
  for (const std::string& frame : frames) {
    EXPECT_EQ(frame.find("prog+0x"), std::string::npos) << "unnamed program frame " << frame;
    if (frame.size() > 4 && frame.ends_with("_[k]")) {
      EXPECT_EQ(frame.find("+0x"), std::string::npos) << "unnamed kernel frame " << frame;
      kernel_named = kernel_named || frame.find("read") != std::string::npos;
    }
  }
  EXPECT_TRUE(kernel_named) << "no named kernel frame of read(2)";
  if (debuginfod) ::unsetenv("DEBUGINFOD_URLS");
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, OnePathTest,
    ::testing::Values(Case{Layout::kPlain, "unstripped", "matrix_plain"},
                      Case{Layout::kBuildIdDir, "build_id_dir", "matrix_buildid"},
                      Case{Layout::kDebuglink, "debuglink", "matrix_debuglink"},
                      Case{Layout::kDebuginfod, "debuginfod", "matrix_debuginfod"},
                      Case{Layout::kDwz, "dwz", "matrix_dwz"},
                      Case{Layout::kSplit, "split_dwarf", "matrix_split"},
                      Case{Layout::kEuStrip, "eu_strip", "matrix_eustrip"},
                      Case{Layout::kMiniDebugInfo, "minidebuginfo", "matrix_minidebuginfo"},
                      Case{Layout::kGoStripped, "go_stripped", ""},
                      Case{Layout::kPerfMap, "perf_map", "matrix_perfmap"}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace stacksym
