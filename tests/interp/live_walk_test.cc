// The frame walk against live python3.11 processes: programs of known structure
// (scripts/stacks.py) print their stacks as Python itself sees them and wait; the test finds the
// interpreter in the process, lists its thread states, walks each thread's frames from the
// process's memory as the BPF program does, reads the code objects, and compares every frame:
// code object address, qualified name, name, file, first line and current line, in order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "interp/python/code_cache.h"
#include "interp/python/frame_walk.h"
#include "python_test_util.h"

namespace stacksym::interp::python {
namespace {

bool Exists(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// Walks `tid`'s frames and checks them against what the program saw; `frames_out` gets them.
void ExpectWalkMatches(ProcessMemory& memory, const LiveInterpreter& live, uint64_t tid,
                       const std::vector<SeenFrame>& seen, FrameWalk* walk_out = nullptr) {
  std::vector<ThreadState> threads = ListThreadStates(memory, live.layout, live.runtime());
  const ThreadState* thread = nullptr;
  for (const ThreadState& t : threads) {
    if (t.native_thread_id == tid) thread = &t;
  }
  ASSERT_NE(thread, nullptr) << "no thread state for tid " << tid << " among " << threads.size();
  CodeCache cache;
  auto line_of = [&](const PythonFrame& f) {
    const CodeCache::Entry& e = cache.Get(static_cast<uint32_t>(memory.pid()), f.code, memory,
                                          live.layout, live.types(), f.instruction);
    return e.code ? e.code->Line(f.instruction) : -1;
  };
  // The program printed its stacks just before it blocks: until it gets there (a few
  // instructions on, or a slow machine later), its innermost frame is on the printing line.
  FrameWalk walk;
  for (int tries = 0; tries < 300; ++tries) {
    walk = WalkFrames(memory, live.layout, thread->address);
    if (walk.frames.size() == seen.size() && line_of(walk.frames[0]) == seen[0].line) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(walk.end, WalkEnd::kOutermost);
  ASSERT_EQ(walk.frames.size(), seen.size()) << "tid " << tid;
  for (size_t i = 0; i < seen.size(); ++i) {
    const PythonFrame& f = walk.frames[i];
    const SeenFrame& s = seen[i];
    SCOPED_TRACE("frame " + std::to_string(i) + " " + s.qualname);
    EXPECT_EQ(f.code, s.code);
    const CodeCache::Entry& e = cache.Get(static_cast<uint32_t>(memory.pid()), f.code, memory,
                                          live.layout, live.types(), f.instruction);
    ASSERT_TRUE(e.code) << CodeErrorName(e.error);
    EXPECT_EQ(e.code->qualname, s.qualname);
    EXPECT_EQ(e.code->name, s.name);
    EXPECT_EQ(e.code->filename, s.file);
    EXPECT_EQ(e.code->first_line, s.first_line);
    EXPECT_EQ(e.code->Line(f.instruction), s.line) << "instruction " << f.instruction;
  }
  // The thread's first frame ends the walk, and is its evaluator call's outermost.
  EXPECT_TRUE(walk.frames.back().entry);
  if (walk_out != nullptr) *walk_out = walk;
}

struct Case {
  const char* scenario;
  const char* binary;   // python3.11, its debug build, or a program embedding libpython3.11.so
  bool builtin_layout;  // the built-in table instead of the DWARF
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string binary = info.param.binary;
  std::string tag = binary.find("embed") != std::string::npos ? "embed"
                    : binary.back() == 'd'                    ? "debug"
                                                              : "python";
  return std::string(info.param.scenario) + "_" + tag +
         (info.param.builtin_layout ? "_builtin" : "");
}

class LiveWalkTest : public ::testing::TestWithParam<Case> {};

TEST_P(LiveWalkTest, StacksAsPythonSeesThem) {
  const Case& c = GetParam();
  if (!Exists(c.binary)) GTEST_SKIP() << c.binary << " is not installed";
  auto program = Program::Start({c.binary, ScriptPath("stacks.py"), c.scenario});
  ASSERT_TRUE(program);
  std::optional<std::string> line = program->ReadLine();
  ASSERT_TRUE(line) << "the program printed nothing";
  auto seen = ParseSeenStacks(*line);
  ASSERT_TRUE(seen) << seen.error().ToString();

  dwarf::DebugFileSearch search;
  if (c.builtin_layout) search.debug_dirs.clear();
  auto live = FindLiveInterpreter(program->pid(), search);
  ASSERT_TRUE(live) << live.error().ToString();
  EXPECT_EQ(live->interpreter.version.minor, 11);
  EXPECT_EQ(live->layout.source, c.builtin_layout ? LayoutSource::kBuiltin : LayoutSource::kDwarf)
      << live->notes;
  auto memory = ProcessMemory::Open(static_cast<uint32_t>(program->pid()));
  ASSERT_TRUE(memory) << memory.error().ToString();

  const std::vector<SeenFrame>* waiting = seen->Find(seen->tid);
  ASSERT_NE(waiting, nullptr);
  FrameWalk walk;
  ExpectWalkMatches(**memory, *live, seen->tid, *waiting, &walk);

  std::string scenario = c.scenario;
  if (scenario == "c_call") {
    // key_function was called by sorted() (C): it begins an evaluator call of its own.
    ASSERT_GE(walk.frames.size(), 3u);
    EXPECT_EQ((*waiting)[1].qualname, "key_function");
    EXPECT_TRUE(walk.frames[1].entry);
    EXPECT_FALSE(walk.frames[0].entry);
    EXPECT_FALSE(walk.frames[2].entry);
  } else if (scenario == "nested" || scenario == "recursion") {
    // Python calling Python: one evaluator call runs them all.
    for (size_t i = 0; i + 1 < walk.frames.size(); ++i) EXPECT_FALSE(walk.frames[i].entry) << i;
  } else if (scenario == "generator") {
    EXPECT_EQ(walk.frames[1].owner, 1);  // FRAME_OWNED_BY_GENERATOR
  } else if (scenario == "threads") {
    ASSERT_EQ(seen->threads.size(), 3u);
    int blocked = 0;
    for (const auto& [tid, frames] : seen->threads) {
      if (tid != seen->tid && frames.front().qualname == "Condition.wait") {
        // Blocked in a lock (Event.wait → Condition.wait → a C lock): its frames hold still.
        ExpectWalkMatches(**memory, *live, tid, frames);
        ++blocked;
      }
    }
    EXPECT_EQ(blocked, 1);
  }
  program->Release();
  EXPECT_EQ(program->Wait(), 0);
}

// A thread that runs while it is read (here zlib.compress in a loop) changes its innermost
// frames, never its outer ones: every walk of it ends with the frames it was started with.
TEST(LiveWalkRunningThreadTest, OuterFramesHoldStill) {
  if (!Exists(kPython311)) GTEST_SKIP() << kPython311 << " is not installed";
  auto program = Program::Start({kPython311, ScriptPath("stacks.py"), "threads"});
  ASSERT_TRUE(program);
  std::optional<std::string> line = program->ReadLine();
  ASSERT_TRUE(line);
  auto seen = ParseSeenStacks(*line);
  ASSERT_TRUE(seen) << seen.error().ToString();
  auto live = FindLiveInterpreter(program->pid());
  ASSERT_TRUE(live) << live.error().ToString();
  auto memory = ProcessMemory::Open(static_cast<uint32_t>(program->pid()));
  ASSERT_TRUE(memory);
  const std::vector<SeenFrame>* running = nullptr;
  uint64_t running_tid = 0;
  for (const auto& [tid, frames] : seen->threads) {
    for (const SeenFrame& f : frames) {
      if (f.qualname == "compressing_worker") running = &frames, running_tid = tid;
    }
  }
  ASSERT_NE(running, nullptr);
  // The frames from compressing_worker out.
  size_t from = 0;
  while ((*running)[from].qualname != "compressing_worker") ++from;
  std::vector<SeenFrame> outer(running->begin() + static_cast<std::ptrdiff_t>(from),
                               running->end());
  const ThreadState* thread = nullptr;
  std::vector<ThreadState> threads = ListThreadStates(**memory, live->layout, live->runtime());
  for (const ThreadState& t : threads) {
    if (t.native_thread_id == running_tid) thread = &t;
  }
  ASSERT_NE(thread, nullptr);
  CodeCache cache;
  int consistent = 0;
  for (int i = 0; i < 50; ++i) {
    FrameWalk walk = WalkFrames(**memory, live->layout, thread->address);
    // Read from outside while the thread runs, a walk may catch a frame being pushed: count the
    // walks that read whole, and require most of them.
    if (walk.end != WalkEnd::kOutermost || walk.frames.size() < outer.size()) continue;
    size_t skip = walk.frames.size() - outer.size();
    bool same = true;
    for (size_t k = 0; k < outer.size(); ++k)
      same = same && walk.frames[skip + k].code == outer[k].code;
    if (!same) continue;
    ++consistent;
    const CodeCache::Entry& e =
        cache.Get(static_cast<uint32_t>(program->pid()), walk.frames[0].code, **memory,
                  live->layout, live->types());
    ASSERT_TRUE(e.code) << CodeErrorName(e.error);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_GE(consistent, 40);
  program->Release();
  EXPECT_EQ(program->Wait(), 0);
}

std::string Embed() { return std::string(STACKSYM_FIXTURE_DIR) + "/python_embed"; }
const std::string kEmbed = Embed();

INSTANTIATE_TEST_SUITE_P(
    Scenarios, LiveWalkTest,
    ::testing::Values(Case{"nested", kPython311, false}, Case{"methods", kPython311, false},
                      Case{"closure", kPython311, false}, Case{"generator", kPython311, false},
                      Case{"coroutine", kPython311, false}, Case{"recursion", kPython311, false},
                      Case{"c_call", kPython311, false}, Case{"threads", kPython311, false},
                      Case{"nested", kPython311, true}, Case{"coroutine", kPython311, true},
                      Case{"threads", kPython311, true},
                      Case{"nested", "/usr/bin/python3.11d", false},
                      Case{"c_call", "/usr/bin/python3.11d", false},
                      Case{"nested", kEmbed.c_str(), false}, Case{"threads", kEmbed.c_str(), true}),
    CaseName);

}  // namespace
}  // namespace stacksym::interp::python
