// Finding CPython in a file, and its layout from each source: the built-in 3.11 table against
// the DWARF of Debian's python3.11, its debug build and libpython3.11 (python3.11-dbg,
// libpython3.11-dbg); the 3.12 and 3.13 tables against the DWARF of builds of them where one is
// installed (pyenv's, under /root/.pyenv; skipped elsewhere), and 3.13's debug offsets read from
// the file; _Py_DebugOffsets that are damaged or of another arrangement refused.
#include "interp/python/layout.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "dwarf/debug_file_finder.h"
#include "dwarf/debug_files.h"
#include "interp/python/interpreter.h"

namespace stacksym::interp::python {
namespace {

bool Readable(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

// The layout with its source set aside, for comparing tables made different ways.
Layout Sourceless(Layout l) {
  l.source = LayoutSource::kBuiltin;
  l.version.micro = 0;
  l.version.hex = 0;
  return l;
}

struct Loaded {
  Interpreter interpreter;
  Layout layout;
  std::string notes;
};

Loaded Load(const std::string& path, const dwarf::DebugFileSearch& search = {}) {
  Loaded out;
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf) << path;
  if (!elf) return out;
  auto found = FindInterpreter(**elf);
  EXPECT_TRUE(found && *found) << path;
  if (!found || !*found) return out;
  out.interpreter = **found;
  auto layout = LoadLayout(*elf, out.interpreter, search, &out.notes);
  EXPECT_TRUE(layout) << (layout ? "" : layout.error().ToString());
  if (layout) out.layout = *layout;
  return out;
}

TEST(InterpreterTest, FindsPython311) {
  if (!Readable("/usr/bin/python3.11")) GTEST_SKIP();
  auto elf = ElfFile::Open("/usr/bin/python3.11");
  ASSERT_TRUE(elf);
  auto found = FindInterpreter(**elf);
  ASSERT_TRUE(found);
  ASSERT_TRUE(*found);
  const Interpreter& i = **found;
  EXPECT_EQ(i.version.major, 3);
  EXPECT_EQ(i.version.minor, 11);
  EXPECT_EQ(i.version.hex >> 16, 0x030bu);
  EXPECT_NE(i.runtime, 0u);
  EXPECT_GT(i.runtime_size, 1000u);
  ASSERT_EQ(i.eval_frames.size(), 1u);  // stripped: the .cold part is in the debug file
  EXPECT_GT(i.eval_frames[0].end - i.eval_frames[0].start, 1000u);
  EXPECT_NE(i.code_type, 0u);
  EXPECT_NE(i.unicode_type, 0u);
  EXPECT_NE(i.bytes_type, 0u);
  EXPECT_TRUE(SupportedVersion(i.version));
  EXPECT_EQ(i.version.ToString().substr(0, 5), "3.11.");
}

// The separate debug file names the part gcc split off the evaluator.
TEST(InterpreterTest, EvaluatorColdPartFromTheDebugFile) {
  if (!Readable("/usr/bin/python3.11")) GTEST_SKIP();
  auto binary = ElfFile::Open("/usr/bin/python3.11");
  ASSERT_TRUE(binary);
  dwarf::DebugFileFinder finder;
  auto debug = finder.FindSeparateDebugFile(**binary);
  if (!debug || *debug == nullptr) GTEST_SKIP() << "python3.11-dbg is not installed";
  std::vector<CodeRange> ranges = EvaluatorRanges(**debug);
  ASSERT_EQ(ranges.size(), 2u);  // _PyEval_EvalFrameDefault and _PyEval_EvalFrameDefault.cold
  EXPECT_TRUE(std::find(ranges.begin(), ranges.end(), EvaluatorRanges(**binary)[0]) !=
              ranges.end());
}

TEST(InterpreterTest, NotPython) {
  auto elf = ElfFile::Open("/proc/self/exe");
  ASSERT_TRUE(elf);
  const size_t heap_before = (*elf)->heap_bytes();
  auto found = FindInterpreter(**elf);
  ASSERT_TRUE(found);
  EXPECT_FALSE(*found);
  // Told from the string tables alone: the recorder asks this of every program a host runs,
  // and building each one's symbol table (kept with the file) cost an agent megabytes.
  EXPECT_EQ((*elf)->heap_bytes(), heap_before) << "the symbol table was built";
  EXPECT_FALSE(SupportedVersion({3, 10, 0, 0}));
  EXPECT_FALSE(SupportedVersion({2, 7, 0, 0}));
  EXPECT_TRUE(SupportedVersion({3, 14, 0, 0}));
}

// The 3.11 table is what Debian's python3.11-dbg DWARF says, for the executable, the debug build
// and the shared library.
TEST(LayoutTest, Builtin311MatchesDwarf) {
  std::optional<Layout> builtin = BuiltinLayout({3, 11, 0, 0});
  ASSERT_TRUE(builtin);
  ASSERT_TRUE(CheckLayout(*builtin));
  int compared = 0;
  for (const char* path : {"/usr/bin/python3.11", "/usr/bin/python3.11d",
                           "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"}) {
    if (!Readable(path)) continue;
    SCOPED_TRACE(path);
    Loaded l = Load(path);
    if (l.layout.source != LayoutSource::kDwarf) {
      ADD_FAILURE() << "no DWARF layout: " << l.notes << " (install python3.11-dbg)";
      continue;
    }
    EXPECT_EQ(Sourceless(l.layout), Sourceless(*builtin));
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "no python3.11 installed";
}

TEST(LayoutTest, WithoutDebugInfoTheTable) {
  if (!Readable("/usr/bin/python3.11")) GTEST_SKIP();
  dwarf::DebugFileSearch none;
  none.debug_dirs.clear();
  Loaded l = Load("/usr/bin/python3.11", none);
  EXPECT_EQ(l.layout.source, LayoutSource::kBuiltin);
  EXPECT_NE(l.notes.find("no debug info"), std::string::npos) << l.notes;
}

// The recorder's two parts: the quick layout at once, the DWARF's on a thread; SameOffsets tells
// whether the second corrects the first.
TEST(LayoutTest, QuickAndDwarfParts) {
  if (!Readable("/usr/bin/python3.11")) GTEST_SKIP();
  auto elf = ElfFile::Open("/usr/bin/python3.11");
  ASSERT_TRUE(elf);
  auto interpreter = FindInterpreter(**elf);
  ASSERT_TRUE(interpreter && *interpreter);
  Result<Layout> quick = LoadQuickLayout(**elf, **interpreter);
  ASSERT_TRUE(quick);
  EXPECT_EQ(quick->source, LayoutSource::kBuiltin);
  dwarf::DebugFileSearch none;
  none.debug_dirs.clear();
  std::string notes;
  EXPECT_FALSE(LoadDwarfLayout(*elf, **interpreter, none, &notes));
  EXPECT_NE(notes.find("no debug info"), std::string::npos) << notes;
  Result<Layout> dwarf = LoadDwarfLayout(*elf, **interpreter, {});
  if (!dwarf) GTEST_SKIP() << "python3.11-dbg is not installed";
  EXPECT_EQ(dwarf->source, LayoutSource::kDwarf);
  EXPECT_TRUE(SameOffsets(*quick, *dwarf));
  Layout moved = *quick;
  moved.frame_previous += 8;
  EXPECT_FALSE(SameOffsets(moved, *dwarf));
  Version v = (*interpreter)->version;
  v.minor = 10;
  Interpreter old = **interpreter;
  old.version = v;
  EXPECT_FALSE(LoadQuickLayout(**elf, old));
}

// Other versions' tables against DWARF of builds of them, where installed.
TEST(LayoutTest, Builtin312And313MatchDwarf) {
  int compared = 0;
  for (const auto& [path, minor] :
       {std::pair<std::string, int>{"/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", 12},
        {"/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0", 13}}) {
    if (!Readable(path)) continue;
    SCOPED_TRACE(path);
    Loaded l = Load(path);
    EXPECT_EQ(l.interpreter.version.minor, minor);
    ASSERT_EQ(l.layout.source, LayoutSource::kDwarf) << l.notes;
    std::optional<Layout> builtin = BuiltinLayout(l.interpreter.version);
    ASSERT_TRUE(builtin);
    EXPECT_EQ(Sourceless(l.layout), Sourceless(*builtin));
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "no CPython 3.12 or 3.13 build with DWARF installed";
}

// 3.13's _Py_DebugOffsets, read from the initialised _PyRuntime in the file, say the same.
TEST(LayoutTest, DebugOffsets313FromTheFile) {
  std::string path = "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0";
  if (!Readable(path)) GTEST_SKIP() << "no CPython 3.13 installed";
  dwarf::DebugFileSearch none;
  none.debug_dirs.clear();
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf);
  auto found = FindInterpreter(**elf);
  ASSERT_TRUE(found && *found);
  std::optional<uint64_t> at = (*elf)->VaddrToFileOffset((*found)->runtime);
  ASSERT_TRUE(at);
  auto from_offsets = LayoutFromDebugOffsets((*elf)->bytes().subspan(*at, 1024), (*found)->version);
  ASSERT_TRUE(from_offsets) << from_offsets.error().ToString();
  EXPECT_EQ(from_offsets->source, LayoutSource::kDebugOffsets);
  EXPECT_EQ(Sourceless(*from_offsets), Sourceless(*BuiltinLayout((*found)->version)));
}

// _Py_DebugOffsets as 3.13 lays them out, made from a layout.
std::vector<uint8_t> DebugOffsets313(const Layout& l) {
  std::vector<uint8_t> b(1024);
  auto put = [&](size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); };
  std::memcpy(b.data(), "xdebugpy", 8);
  put(8, 0x030d00f0);
  put(16, 0);
  put(40, l.runtime_interpreters_head);
  put(48 + 16, l.interp_next);
  put(48 + 24, l.interp_threads_head);
  put(152, 304);  // sizeof(PyThreadState)
  put(152 + 16, l.tstate_next);
  put(152 + 32, l.current_frame);
  put(152 + 48, l.tstate_native_thread_id);
  put(224, 80);
  put(224 + 8, l.frame_previous);
  put(224 + 16, l.frame_code);
  put(224 + 24, l.frame_instr);
  put(224 + 40, l.frame_owner);
  put(272, 208);
  put(272 + 8, l.code_filename);
  put(272 + 16, l.code_name);
  put(272 + 24, l.code_qualname);
  put(272 + 32, l.code_linetable);
  put(272 + 40, l.code_firstlineno);
  put(272 + 72, l.code_adaptive);
  put(352, 16);
  put(352 + 8, l.ob_type);
  put(512, 40);
  put(512 + 8, l.bytes_size);
  put(512 + 16, l.bytes_data);
  put(536, 56);
  put(536 + 8, l.unicode_state);
  put(536 + 16, l.unicode_length);
  put(536 + 24, l.unicode_ascii_data);
  return b;
}

TEST(LayoutTest, DebugOffsetsParsedAndDistrusted) {
  Version v313{3, 13, 0, 0x030d00f0};
  Layout want = *BuiltinLayout(v313);
  std::vector<uint8_t> good = DebugOffsets313(want);
  auto parsed = LayoutFromDebugOffsets(good, v313);
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_EQ(Sourceless(*parsed), Sourceless(want));

  auto refused = [&](std::vector<uint8_t> b, const Version& v = {3, 13, 0, 0}) {
    return !LayoutFromDebugOffsets(b, v).ok();
  };
  std::vector<uint8_t> b = good;
  b[0] = 'X';
  EXPECT_TRUE(refused(b));                    // cookie
  EXPECT_TRUE(refused(good, {3, 14, 0, 0}));  // another version's arrangement
  EXPECT_TRUE(refused(good, {3, 12, 0, 0}));  // no debug offsets before 3.13
  b = good;
  b[16] = 1;
  EXPECT_TRUE(refused(b));  // free-threaded
  b = good;
  b[352] = 24;
  EXPECT_TRUE(refused(b));  // PyObject is not 24 bytes: not arranged as 3.13's
  b = good;
  std::memset(b.data() + 272 + 8, 0xff, 8);
  EXPECT_TRUE(refused(b));  // an offset out of range
  EXPECT_TRUE(refused(std::vector<uint8_t>(good.begin(), good.begin() + 300)));  // cut short
  b = good;
  uint64_t tiny = 8;
  std::memcpy(b.data() + 272 + 72, &tiny, 8);  // co_code_adaptive before the fields
  EXPECT_TRUE(refused(b));
}

TEST(LayoutTest, TablesAreSane) {
  for (int minor : {11, 12, 13}) {
    std::optional<Layout> l = BuiltinLayout({3, static_cast<uint8_t>(minor), 0, 0});
    ASSERT_TRUE(l) << minor;
    EXPECT_TRUE(CheckLayout(*l)) << minor;
    EXPECT_GE(l->FrameBytes(), l->frame_owner + 1);
    EXPECT_LE(l->FrameBytes(), 80u);
    EXPECT_LE(l->CodeBytes(), l->code_adaptive + 8);
  }
  EXPECT_FALSE(BuiltinLayout({3, 10, 0, 0}));
  EXPECT_FALSE(BuiltinLayout({3, 14, 0, 0}));  // 3.14 always carries its debug offsets
  Layout bad = *BuiltinLayout({3, 11, 0, 0});
  bad.code_qualname = 1 << 20;
  EXPECT_FALSE(CheckLayout(bad));
}

}  // namespace
}  // namespace stacksym::interp::python
