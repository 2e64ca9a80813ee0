// Python frames in recordings (issue 32): python3.11 running scripts/known_stacks.py, recorded
// with --call-graph bpf and dwarf. The Python chain of the main thread's samples in its
// generator reads <module> → main → Outer.Inner.method → nested → nested.<locals>.inner →
// recurse ×6 → gen, each at the line the script marks; the C frames of zlib.compress stand
// innermost of burn_zlib, and builtin sum() between recurse and the generator it runs; no
// evaluator frame is left where its Python frames were named; the profile's share of each
// function's samples agrees with the CPU time the program measured. A process that exits at
// once still gets named frames or counted reasons; a process without Python is unaffected, and
// --no-python leaves the evaluator frames as they are. With --off-cpu the intervals off CPU
// carry their Python frames too. A 3.11 sub-interpreter's frames stand innermost of the Python
// caller of run_string, on CPU and waiting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "record_test_util.h"
#include "remote/json.h"
#include "stacksym/capture.h"

namespace stacksym {
namespace {

const char* const kPython311 = "/usr/bin/python3.11";
// Under ASan the recorder reads samples seconds late (loading unwind tables takes about a
// second each): processes are registered late and short ones are gone before their code
// objects are read. There the checks of timing (shares of samples, a short process's named
// frames) are left out; those of what was recorded (chains, counts, reasons) stay.
#ifdef STACKSYM_SANITIZED_BUILD
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
const std::string kScript =
    std::string(STACKSYM_SOURCE_DIR) + "/tests/capture/scripts/known_stacks.py";

// Line numbers of the script's "# @name" markers.
std::map<std::string, uint32_t> Markers(const std::string& path) {
  std::map<std::string, uint32_t> out;
  std::ifstream in(path);
  std::string line;
  for (uint32_t n = 1; std::getline(in, line); ++n) {
    size_t at = line.find("# @");
    size_t code = line.find_first_not_of(' ');  // a line of code, not a comment
    if (at != std::string::npos && line[code] != '#') out[line.substr(at + 3)] = n;
  }
  return out;
}

// One frame of a stack as the test reads it, innermost first.
struct Frame {
  bool python = false;
  std::string name;  // Python: the qualified name; native: the out-of-line function
  std::string file;
  uint32_t line = 0;
  uint32_t start_line = 0;
};
struct Stack {
  uint32_t pid = 0, tid = 0;
  uint64_t count = 0;
  std::vector<Frame> user;  // innermost first
  std::vector<Frame> Python() const {
    std::vector<Frame> out;
    for (const Frame& f : user) {
      if (f.python) out.push_back(f);
    }
    return out;
  }
  int Index(const std::string& name) const {
    for (size_t i = 0; i < user.size(); ++i) {
      if (user[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }
  std::string Describe() const {
    std::string out;
    for (const Frame& f : user) {
      out += " " + (f.name.empty() ? "?" : f.name);
      if (f.python) out += "[py:" + std::to_string(f.line) + "]";
    }
    return out;
  }
};

std::vector<Stack> Stacks(const Profile& p) {
  std::vector<Stack> out;
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    Stack s{p.stacks[i].pid, p.stacks[i].tid, p.counts[i], {}};
    for (uint32_t f : p.stacks[i].frames) {
      const ProfileFrame& frame = p.frames[f];
      if (frame.kind == FrameKind::kKernel) continue;
      Frame out_frame;
      out_frame.python = frame.kind == FrameKind::kPython;
      if (f < p.symbols.size() && p.symbols[f] && !p.symbols[f]->lines.empty()) {
        const SourceFrame& sf = p.symbols[f]->lines.back();
        out_frame.name = sf.function;
        out_frame.file = sf.file;
        out_frame.line = sf.line;
        out_frame.start_line = sf.start_line;
      }
      s.user.push_back(out_frame);
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool HasEvaluator(const Stack& s) {
  for (const Frame& f : s.user) {
    if (!f.python && f.name == "_PyEval_EvalFrameDefault") return true;
  }
  return false;
}

struct Recording {
  std::unique_ptr<Recorder> rec;
  std::vector<Stack> stacks;
};

// Records `command`; nullptr recorder when the kernel refused the backend.
Recording Record(const std::vector<std::string>& command, CallGraph call_graph, bool python = true,
                 uint32_t hz = 499, bool off_cpu = false) {
  RecordOptions o;
  o.backend = CaptureBackend::kBpf;
  o.frequency_hz = hz;
  o.command = command;
  o.call_graph = call_graph;
  o.python = python;
  o.off_cpu = off_cpu;
  Recording r;
  auto created = Recorder::Create(o);
  if (!created) {
    if (!Refused(created.error())) ADD_FAILURE() << created.error().ToString();
    return r;
  }
  r.rec = std::move(*created);
  EXPECT_TRUE(r.rec->Run().ok());
  Symbolize(*r.rec);
  r.stacks = Stacks(r.rec->profile());
  return r;
}

#define RECORD_OR_SKIP(var, ...)                                                   \
  Recording var = Record(__VA_ARGS__);                                             \
  if (::testing::Test::HasFailure()) return;                                       \
  if (var.rec == nullptr) {                                                        \
    GTEST_SKIP() << "kernel refused the capture backend (needs root with CAP_BPF/" \
                    "CAP_PERFMON)";                                                \
  }

void PrintPythonStats(const RecordStats& st) {
  std::printf(
      "python: %llu processes (%s), %llu samples, %llu Python frames, %llu in the interpreter, "
      "%llu named, %llu code objects read, %llu frames unnamed, %llu calls unplaced\n",
      static_cast<unsigned long long>(st.python_processes), st.python_versions.c_str(),
      static_cast<unsigned long long>(st.python_samples),
      static_cast<unsigned long long>(st.python_frames),
      static_cast<unsigned long long>(st.python_samples_in_interpreter),
      static_cast<unsigned long long>(st.python_samples_named),
      static_cast<unsigned long long>(st.python_code_objects_read),
      static_cast<unsigned long long>(st.python_frames_unnamed),
      static_cast<unsigned long long>(st.python_calls_unplaced));
  for (const auto& [reason, count] : st.python_failures) {
    std::printf("  %s: %llu\n", reason.c_str(), static_cast<unsigned long long>(count));
  }
}

struct Case {
  CallGraph call_graph;
  bool embed;  // a program embedding libpython3.11.so (tests/interp/fixtures) for python3.11
  // Another interpreter (pyenv's builds of 3.12 and 3.13, where installed) and its version.
  const char* other = nullptr;
  const char* version = "3.11.";
};
class PythonRecordTest : public ::testing::TestWithParam<Case> {};

TEST_P(PythonRecordTest, KnownStacks) {
  if (access(kPython311, X_OK) != 0) GTEST_SKIP() << "needs " << kPython311;
  const std::string binary = GetParam().other ? std::string(GetParam().other)
                             : GetParam().embed
                                 ? std::string(STACKSYM_FIXTURE_DIR) + "/python_embed"
                                 : kPython311;
  if (access(binary.c_str(), X_OK) != 0) GTEST_SKIP() << "needs " << binary;
  std::map<std::string, uint32_t> line = Markers(kScript);
  ASSERT_EQ(line.size(), 10u) << "markers of " << kScript;
  char spent_path[] = "/tmp/stacksym_python_spent_XXXXXX";
  int fd = mkstemp(spent_path);
  ASSERT_GE(fd, 0);
  close(fd);
  // 999 Hz over 2 × 0.5 s of CPU: about 1000 samples, so that sampling's own spread of a
  // share (±1.6 points, one standard deviation) stays well inside the 5 points allowed.
  // Under ASan the interpreter is registered a second or more after the process's first samples
  // (its layout is read from DWARF): the program waits that long first, or the main thread's
  // half second in gen passes unnamed (CI: 7 samples in gen, 253 in zlib).
  RECORD_OR_SKIP(r, {binary, kScript, spent_path, "0.5", kSanitized ? "2" : "0"},
                 GetParam().call_graph, true, 999);
  std::ifstream spent_in(spent_path);
  std::stringstream spent_text;
  spent_text << spent_in.rdbuf();
  unlink(spent_path);
  Result<remote::JsonValue> spent = remote::ParseJson(spent_text.str());
  ASSERT_TRUE(spent) << "the program's measurement: '" << spent_text.str() << "'";

  const RecordStats& st = r.rec->stats();
  PrintPythonStats(st);
  EXPECT_EQ(st.python_processes, 1u);
  EXPECT_NE(st.python_versions.find(GetParam().version), std::string::npos) << st.python_versions;
  EXPECT_GT(st.python_code_objects_read, 6u);
  ASSERT_GT(st.python_samples_in_interpreter, 100u);
  // Goal of issue 32: 95 % of the samples in the interpreter with a named Python chain.
  EXPECT_GE(st.python_samples_named * 100, st.python_samples_in_interpreter * 95);

  // The main thread in the generator: the whole chain, with file and lines.
  struct Expected {
    std::string name;
    uint32_t line;
  };
  std::vector<Expected> chain = {{"gen", 0}};
  chain.push_back({"recurse", line["recurse_base"]});
  for (int i = 0; i < 5; ++i) chain.push_back({"recurse", line["recurse"]});
  chain.push_back({"nested.<locals>.inner", line["inner"]});
  chain.push_back({"nested", line["nested"]});
  chain.push_back({"Outer.Inner.method", line["method"]});
  chain.push_back({"main", line["main"]});
  chain.push_back({"<module>", line["module"]});
  uint64_t total = 0, in_gen = 0, gen_matched = 0, in_zlib = 0, zlib_matched = 0, evaluators = 0;
  uint64_t gen_samples = 0, zlib_samples = 0;  // for the CPU shares: the function anywhere
  for (const Stack& s : r.stacks) {
    total += s.count;
    std::vector<Frame> py = s.Python();
    bool named = !py.empty();
    for (const Frame& f : py) named = named && f.name.find("[python:") != 0;
    if (named && HasEvaluator(s)) {
      evaluators += s.count;
      ADD_FAILURE() << "an evaluator frame left in a named stack:" << s.Describe();
    }
    for (const Frame& f : py) {
      gen_samples += f.name == "gen" ? s.count : 0;
      zlib_samples += f.name == "burn_zlib" ? s.count : 0;
    }
    if (!py.empty() && py[0].name == "gen") {
      in_gen += s.count;
      bool ok = py.size() == chain.size();
      for (size_t i = 0; ok && i < chain.size(); ++i) {
        ok = py[i].name == chain[i].name && py[i].file == kScript &&
             (i == 0 ? py[i].line == line["gen_while"] || py[i].line == line["gen_loop"]
                     : py[i].line == chain[i].line);
      }
      // sum() (C) runs the generator: its frame stands between gen and recurse.
      int sum = s.Index("builtin_sum");
      ok = ok && sum > s.Index("gen") && sum < s.Index("recurse");
      if (ok) {
        gen_matched += s.count;
      } else if (in_gen - gen_matched <= 5 * s.count) {
        std::printf("gen chain differs:%s\n", s.Describe().c_str());
      }
    }
    // zlib.compress: its C frames innermost of burn_zlib, at the marked line.
    int compress = s.Index("zlib_compress");
    if (compress >= 0 && !py.empty()) {
      in_zlib += s.count;
      int caller = s.Index("burn_zlib");
      bool ok = caller > compress && py[0].name == "burn_zlib" && py[0].line == line["zlib"] &&
                py.size() >= 4 && py[1].name == "Thread.run" &&
                py.back().name == "Thread._bootstrap";
      if (ok) {
        zlib_matched += s.count;
      } else if (in_zlib - zlib_matched <= 5 * s.count) {
        std::printf("zlib chain differs:%s\n", s.Describe().c_str());
      }
    }
  }
  std::printf(
      "%llu samples: %llu with gen innermost (%llu as expected), %llu in zlib_compress "
      "(%llu as expected)\n",
      static_cast<unsigned long long>(total), static_cast<unsigned long long>(in_gen),
      static_cast<unsigned long long>(gen_matched), static_cast<unsigned long long>(in_zlib),
      static_cast<unsigned long long>(zlib_matched));
  EXPECT_GT(in_gen, 30u);
  EXPECT_GT(in_zlib, 30u);
  EXPECT_GE(gen_matched * 100, in_gen * 95);
  EXPECT_GE(zlib_matched * 100, in_zlib * 95);
  EXPECT_EQ(evaluators, 0u);
  // The profile's CPU shares against the program's own measurement (thread CPU time of each
  // part over the process's CPU time), within 5 percentage points.
  const remote::JsonValue* gen_s = spent->Find("gen");
  const remote::JsonValue* zlib_s = spent->Find("burn_zlib");
  const remote::JsonValue* process_s = spent->Find("process");
  ASSERT_TRUE(gen_s && zlib_s && process_s && process_s->number() > 0);
  double gen_share = gen_s->number() / process_s->number();
  double zlib_share = zlib_s->number() / process_s->number();
  double gen_profile = static_cast<double>(gen_samples) / static_cast<double>(total);
  double zlib_profile = static_cast<double>(zlib_samples) / static_cast<double>(total);
  std::printf("CPU shares, measured / profile: gen %.3f / %.3f, burn_zlib %.3f / %.3f\n", gen_share,
              gen_profile, zlib_share, zlib_profile);
  if (kSanitized) {
    std::printf("sanitizer build: the CPU shares are not judged\n");
    return;
  }
  EXPECT_NEAR(gen_profile, gen_share, 0.05);
  EXPECT_NEAR(zlib_profile, zlib_share, 0.05);
}

INSTANTIATE_TEST_SUITE_P(
    CallGraphs, PythonRecordTest,
    ::testing::Values(
        Case{CallGraph::kBpf, false}, Case{CallGraph::kDwarf, false}, Case{CallGraph::kBpf, true},
        Case{CallGraph::kBpf, false, "/root/.pyenv/versions/3.12.1/bin/python3.12", "3.12."},
        Case{CallGraph::kBpf, false, "/root/.pyenv/versions/3.13.0/bin/python3.13", "3.13."}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return std::string(info.param.call_graph == CallGraph::kBpf ? "bpf" : "dwarf") +
             (info.param.embed ? "_libpython" : "") +
             (info.param.other
                  ? std::string("_python3") + info.param.version[2] + info.param.version[3]
                  : "");
    });

// A process that exits right after its samples: every Python frame is named, or named by the
// reason its code object could not be read, and those are counted. It sleeps first: the
// interpreter is registered at its exec, which an ASan build on a slow machine took longer
// than the whole 0.2-s life of the process (CI: no Python process at all).
TEST(PythonRecordExitTest, ShortLivedProcessNamedOrCounted) {
  if (access(kPython311, X_OK) != 0) GTEST_SKIP() << "needs " << kPython311;
  RECORD_OR_SKIP(r,
                 {kPython311, "-c",
                  "import time\n"
                  "time.sleep(1.0)\n"
                  "def short_burn():\n"
                  "    t = time.thread_time()\n"
                  "    while time.thread_time() - t < 0.15: pass\n"
                  "short_burn()\n"},
                 CallGraph::kBpf);
  const RecordStats& st = r.rec->stats();
  PrintPythonStats(st);
  EXPECT_EQ(st.python_processes, 1u);
  uint64_t frames = 0, unnamed = 0, burn = 0;
  for (const Stack& s : r.stacks) {
    for (const Frame& f : s.Python()) {
      frames += s.count;
      ASSERT_FALSE(f.name.empty());
      if (f.name.find("[python: ") == 0) unnamed += s.count;
    }
    std::vector<Frame> py = s.Python();
    if (py.size() == 2 && py[0].name == "short_burn" && py[1].name == "<module>") burn += s.count;
  }
  EXPECT_EQ(frames, st.python_frames);
  EXPECT_EQ(unnamed, st.python_frames_unnamed);
  if (!kSanitized) {
    EXPECT_GT(burn, 20u);
  }
}

// Code objects freed while their samples wait to be aggregated, their addresses taken by new
// ones (scripts/code_churn.py): a frame is named by the code object the sample saw, or by why
// it could not be ("[python: replaced]", "[python: freed]"), never by the newcomer. leaf_N runs
// under N % 3 + 1 frames of hop(), and <module> is only the outermost frame: a newcomer's name
// breaks one of the two (for a leaf that took a leaf's address, two times in three).
class PythonRecordChurnTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PythonRecordChurnTest, FreedCodeObjectsNotNamedByTheirSuccessors) {
  const char* python = GetParam();
  if (access(python, X_OK) != 0) GTEST_SKIP() << "needs " << python;
  const std::string script =
      std::string(STACKSYM_SOURCE_DIR) + "/tests/capture/scripts/code_churn.py";
  char out_path[] = "/tmp/stacksym_python_churn_XXXXXX";
  int fd = mkstemp(out_path);
  ASSERT_GE(fd, 0);
  close(fd);
  RECORD_OR_SKIP(r, {python, script, out_path, "1.0"}, CallGraph::kBpf, true, 999);
  std::ifstream in(out_path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(out_path);
  Result<remote::JsonValue> churn = remote::ParseJson(text.str());
  ASSERT_TRUE(churn && churn->Find("reused")) << "the program's count: '" << text.str() << "'";
  // Not vacuous: addresses were taken again while the program ran.
  EXPECT_GT(churn->Find("reused")->number(), 10) << text.str();
  const RecordStats& st = r.rec->stats();
  PrintPythonStats(st);
  uint64_t leaves = 0, named = 0, unnamed = 0, wrong = 0;
  for (const Stack& s : r.stacks) {
    std::vector<Frame> py = s.Python();  // innermost first
    size_t driver = 0;
    while (driver < py.size() && py[driver].name != "driver") ++driver;
    if (driver == py.size() || driver == 0) continue;  // not in a round
    const Frame& leaf = py[driver - 1];
    // The round's module body (defining its leaf) calls no Python function.
    bool ok = leaf.name != "<module>" || (leaf.file.rfind("<churn ", 0) == 0 && driver == 1);
    for (size_t i = driver; i + 1 < py.size(); ++i) ok = ok && py[i].name != "<module>";
    if (leaf.name.rfind("leaf_", 0) == 0 || leaf.name.rfind("[python: ", 0) == 0) {
      leaves += s.count;
      size_t hops = 0;
      while (hops + 1 < driver && py[driver - 2 - hops].name == "hop") ++hops;
      bool whole = hops + 1 < driver && py[driver - 2 - hops].name == "spin";
      if (leaf.name.rfind("[python: ", 0) == 0) {
        unnamed += s.count;
      } else {
        named += s.count;
        long n = std::stol(leaf.name.substr(5));
        ok = ok && leaf.file == "<churn " + std::to_string(n) + ">" &&
             (!whole || hops == static_cast<size_t>(n % 3 + 1));
      }
    }
    if (!ok) {
      wrong += s.count;
      if (wrong <= 5 * s.count) std::printf("misnamed:%s\n", s.Describe().c_str());
    }
  }
  std::printf("%llu samples in a leaf: %llu named, %llu unnamed, %llu misnamed\n",
              static_cast<unsigned long long>(leaves), static_cast<unsigned long long>(named),
              static_cast<unsigned long long>(unnamed), static_cast<unsigned long long>(wrong));
  EXPECT_GT(leaves, 200u);
  EXPECT_EQ(wrong, 0u);
  if (!kSanitized) {
    EXPECT_GT(named, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonRecordChurnTest,
                         ::testing::Values(kPython311,
                                           "/root/.pyenv/versions/3.12.1/bin/python3.12",
                                           "/root/.pyenv/versions/3.13.0/bin/python3.13"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = std::string(info.param);
                           return "python3" + name.substr(name.size() - 2);
                         });

// A program without Python: nothing registered, no Python frame; python3.11 with --no-python:
// its evaluator frames as they were.
TEST(PythonRecordOffTest, NoPythonUnaffected) {
  RECORD_OR_SKIP(r, {"/bin/sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"},
                 CallGraph::kBpf);
  const RecordStats& st = r.rec->stats();
  EXPECT_GT(st.samples, 10u);
  EXPECT_EQ(st.python_processes, 0u);
  EXPECT_EQ(st.python_samples, 0u);
  for (const ProfileFrame& f : r.rec->profile().frames) EXPECT_NE(f.kind, FrameKind::kPython);
  for (const Module& m : r.rec->profile().modules) EXPECT_NE(m.path, kPythonModulePath);
}

TEST(PythonRecordOffTest, NoPythonOption) {
  if (access(kPython311, X_OK) != 0) GTEST_SKIP() << "needs " << kPython311;
  RECORD_OR_SKIP(r,
                 {kPython311, "-c",
                  "import time\n"
                  "t = time.thread_time()\n"
                  "while time.thread_time() - t < 0.15: pass\n"},
                 CallGraph::kBpf, /*python=*/false);
  const RecordStats& st = r.rec->stats();
  EXPECT_EQ(st.python_processes, 0u);
  uint64_t evaluator = 0, total = 0;
  for (const Stack& s : r.stacks) {
    total += s.count;
    EXPECT_TRUE(s.Python().empty());
    if (HasEvaluator(s)) evaluator += s.count;
  }
  if (!kSanitized) {
    EXPECT_GE(evaluator * 2, total) << "most samples are in the evaluator's loop";
  }
}

// Sub-interpreters (3.11's _xxsubinterpreters): run_string runs its code on a thread state of
// the sub-interpreter, swapped in on the calling thread, once from the main thread and once from
// another thread (on the thread state made on the main thread: its native id is the main
// thread's). Both show the function inside the sub-interpreter, with its line, innermost of
// the Python frames that called run_string; afterwards the main thread is named again.
TEST(PythonRecordSubinterpreterTest, SubinterpreterFramesNamed) {
  if (access(kPython311, X_OK) != 0) GTEST_SKIP() << "needs " << kPython311;
  const std::string script =
      "import _xxsubinterpreters as interpreters\n"
      "import threading, time\n"
      "code = \'\'\'\n"
      "import time\n"
      "class Sub:\n"
      "    def spin_in_subinterpreter(self, seconds):\n"
      "        end = time.thread_time() + seconds\n"
      "        n = 0\n"
      "        while time.thread_time() < end:\n"
      "            for i in range(2000): n += i\n"  // line 8 of the code (line 1 is empty)
      "Sub().spin_in_subinterpreter(0.3)\n"
      "\'\'\'\n"
      "def run_in_main_thread(interp):\n"
      "    interpreters.run_string(interp, code)\n"
      "def run_in_other_thread(interp):\n"
      "    interpreters.run_string(interp, code)\n"
      "def spin_after():\n"
      "    end = time.thread_time() + 0.2\n"
      "    while time.thread_time() < end: pass\n"
      "a = interpreters.create()\n"
      "run_in_main_thread(a)\n"
      "b = interpreters.create()\n"
      "t = threading.Thread(target=run_in_other_thread, args=(b,))\n"
      "t.start()\n"
      "t.join()\n"
      "spin_after()\n";
  RECORD_OR_SKIP(r, {kPython311, "-c", script}, CallGraph::kBpf);
  const RecordStats& st = r.rec->stats();
  PrintPythonStats(st);
  EXPECT_EQ(st.python_processes, 1u);
  // A stack whose innermost frame only bears the name is counted apart: a code object freed
  // before it was read (a class body run in the sub-interpreter's start-up) may have its
  // address taken by Sub.spin_in_subinterpreter's by then.
  uint64_t in_main = 0, in_other = 0, after = 0, total = 0, spin = 0, spin_elsewhere = 0;
  for (const Stack& s : r.stacks) {
    std::vector<Frame> py = s.Python();
    total += s.count;
    if (py.empty()) continue;
    if (py[0].name == "spin_after" && py.size() == 2) after += s.count;
    if (py[0].name != "Sub.spin_in_subinterpreter") continue;
    spin += s.count;
    bool in_code = py.size() >= 3 && py[0].file == "<string>" &&
                   (py[0].line == 7 || py[0].line == 8) && py[1].name == "<module>" &&
                   py[1].line == 9;
    if (in_code && py[2].name == "run_in_main_thread") {
      EXPECT_EQ(s.pid, s.tid);
      if (py.size() == 4 && py[3].name == "<module>") in_main += s.count;
    } else if (in_code && py[2].name == "run_in_other_thread") {
      EXPECT_NE(s.pid, s.tid);
      if (py.back().name == "Thread._bootstrap") in_other += s.count;
    } else {
      spin_elsewhere += s.count;
      std::printf("elsewhere: %s\n", s.Describe().c_str());
    }
  }
  EXPECT_LE(spin_elsewhere * 20, spin) << "at most 5 % of the samples of the function";
  std::printf(
      "sub-interpreter samples: %llu from the main thread, %llu from another, %llu after, "
      "%llu in all\n",
      static_cast<unsigned long long>(in_main), static_cast<unsigned long long>(in_other),
      static_cast<unsigned long long>(after), static_cast<unsigned long long>(total));
  if (!kSanitized) {
    EXPECT_GT(in_main, 50u);
    EXPECT_GT(in_other, 50u);
    EXPECT_GT(after, 30u) << "the main thread is named again after the sub-interpreters";
  }
}

// Off-CPU time by Python caller: the share of a thread's off-CPU nanoseconds whose stacks have
// `chain` (innermost first; "*": any name) as their innermost Python frames, and that thread's
// total.
struct ThreadWait {
  uint64_t chain_ns = 0;
  uint64_t total_ns = 0;
};
ThreadWait WaitUnder(const Profile& p, const std::vector<Stack>& stacks,
                     const std::vector<std::string>& chain) {
  std::map<uint32_t, ThreadWait> by_tid;
  uint32_t tid = 0;
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    if (p.stacks[i].state == ThreadState::kRunning || i >= p.off_cpu_ns.size()) continue;
    std::vector<Frame> py = stacks[i].Python();
    bool match = py.size() >= chain.size();
    for (size_t k = 0; match && k < chain.size(); ++k) {
      match = chain[k] == "*" || py[k].name == chain[k];
    }
    by_tid[stacks[i].tid].total_ns += p.off_cpu_ns[i];
    if (match) {
      by_tid[stacks[i].tid].chain_ns += p.off_cpu_ns[i];
      tid = stacks[i].tid;
    }
  }
  return tid == 0 ? ThreadWait{} : by_tid[tid];
}

// --off-cpu and a sub-interpreter that waits (3.11): at the switch-out in time.sleep its
// thread state has just dropped the GIL, and is found as the GIL's last holder; the waits stand
// under the function in the sub-interpreter and the Python caller of run_string, from the main
// thread and from another one.
TEST(PythonRecordSubinterpreterTest, OffCpuWaitsInSubinterpreterNamed) {
  if (access(kPython311, X_OK) != 0) GTEST_SKIP() << "needs " << kPython311;
  const std::string script =
      "import _xxsubinterpreters as interpreters\n"
      "import threading, time\n"
      "code = \'\'\'\n"
      "import time\n"
      "def sleeps_in_subinterpreter():\n"
      "    for _ in range(40): time.sleep(0.005)\n"
      "sleeps_in_subinterpreter()\n"
      "\'\'\'\n"
      "def run_in_main_thread(interp):\n"
      "    interpreters.run_string(interp, code)\n"
      "def run_in_other_thread(interp):\n"
      "    interpreters.run_string(interp, code)\n"
      // The recorder registers the interpreter when it sees the process's first samples.
      "t = time.thread_time()\n"
      "while time.thread_time() - t < 0.3: pass\n"
      "a = interpreters.create()\n"
      "run_in_main_thread(a)\n"
      "b = interpreters.create()\n"
      "t = threading.Thread(target=run_in_other_thread, args=(b,))\n"
      "t.start()\n"
      "t.join()\n"
      // Alive past a drain of the kernel's sums (0.5 s), as in the test below.
      "time.sleep(0.6)\n";
  RECORD_OR_SKIP(r, {kPython311, "-c", script}, CallGraph::kBpf, /*python=*/true, /*hz=*/499,
                 /*off_cpu=*/true);
  PrintPythonStats(r.rec->stats());
  const Profile& p = r.rec->profile();
  ASSERT_EQ(r.stacks.size(), p.stacks.size());
  // The sub-interpreter's module code is freed when run_string returns, possibly before the
  // kernel's sums that hold its frames are read: its name is not checked.
  ThreadWait in_main =
      WaitUnder(p, r.stacks, {"sleeps_in_subinterpreter", "*", "run_in_main_thread"});
  ThreadWait in_other =
      WaitUnder(p, r.stacks, {"sleeps_in_subinterpreter", "*", "run_in_other_thread"});
  std::printf(
      "sub-interpreter waits: %.3f s under run_in_main_thread, %.3f s of its thread's "
      "%.3f s under run_in_other_thread\n",
      in_main.chain_ns / 1e9, in_other.chain_ns / 1e9, in_other.total_ns / 1e9);
  if (!kSanitized) {
    EXPECT_GT(in_main.chain_ns, 150000000u) << "40 sleeps of 5 ms";
    EXPECT_GT(in_other.chain_ns * 10, in_other.total_ns * 7) << "most of the thread's wait";
  }
}

// --off-cpu with Python frames on: the CPU samples have their Python frames, and the off-CPU
// intervals theirs too, walked at the switch-out: a thread waiting in time.sleep, and one
// waiting for a lock, spend most of their time off CPU under the Python function that waits,
// called from Thread.run.
TEST(PythonRecordOffCpuTest, OffCpuStacksNameTheWaitingFunction) {
  if (access(kPython311, X_OK) != 0) GTEST_SKIP() << "needs " << kPython311;
  RECORD_OR_SKIP(r,
                 {kPython311, "-c",
                  "import threading, time\n"
                  "def waits_in_sleep():\n"
                  "    for _ in range(40): time.sleep(0.005)\n"
                  // It runs a moment first: a thread's state is found by the BPF program
                  // when one of its samples looks, so a wait it begins before any sample of
                  // it has no Python frames (one wait here: the whole of the thread's).
                  "def waits_on_lock(lock):\n"
                  "    busy_here(0.05)\n"
                  "    with lock: pass\n"
                  "def busy_here(seconds):\n"
                  "    t = time.thread_time()\n"
                  "    while time.thread_time() - t < seconds: pass\n"
                  "lock = threading.Lock()\n"
                  "lock.acquire()\n"
                  "w = threading.Thread(target=waits_in_sleep)\n"
                  "l = threading.Thread(target=waits_on_lock, args=(lock,))\n"
                  // The recorder registers the interpreter when it sees the process's first
                  // samples: the waits begin once it has.
                  "busy_here(0.3)\n"
                  "w.start()\n"
                  "l.start()\n"
                  "busy_here(0.5)\n"
                  "lock.release()\n"
                  "w.join()\n"
                  "l.join()\n"
                  // Alive past a drain of the kernel's sums (0.5 s): the code objects only
                  // waits have are read while the process lives.
                  "time.sleep(0.6)\n"},
                 CallGraph::kBpf, /*python=*/true, /*hz=*/499, /*off_cpu=*/true);
  const RecordStats& st = r.rec->stats();
  PrintPythonStats(st);
  EXPECT_EQ(st.python_processes, 1u);
  EXPECT_GT(st.off_cpu.recorded, 0u);
  EXPECT_GT(st.off_cpu_aggregated, 0u);
  const Profile& p = r.rec->profile();
  ASSERT_EQ(r.stacks.size(), p.stacks.size());
  uint64_t busy = 0, off_ns = 0, off_ns_python = 0, off_ns_unnamed_evaluator = 0;
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    const Stack& s = r.stacks[i];
    if (p.stacks[i].state == ThreadState::kRunning) {
      std::vector<Frame> py = s.Python();
      if (!py.empty() && py[0].name == "busy_here") busy += s.count;
      continue;
    }
    uint64_t ns = i < p.off_cpu_ns.size() ? p.off_cpu_ns[i] : 0;
    off_ns += ns;
    if (!s.Python().empty()) off_ns_python += ns;
    // Start-up's waits may come before the interpreter is registered.
    if (HasEvaluator(s) && s.Python().empty()) off_ns_unnamed_evaluator += ns;
  }
  EXPECT_GT(off_ns, 0u);
  const std::vector<std::string> bootstrap = {"Thread.run", "Thread._bootstrap_inner",
                                              "Thread._bootstrap"};
  std::vector<std::string> sleep_chain = {"waits_in_sleep"}, lock_chain = {"waits_on_lock"};
  sleep_chain.insert(sleep_chain.end(), bootstrap.begin(), bootstrap.end());
  lock_chain.insert(lock_chain.end(), bootstrap.begin(), bootstrap.end());
  ThreadWait sleeps = WaitUnder(p, r.stacks, sleep_chain);
  ThreadWait locks = WaitUnder(p, r.stacks, lock_chain);
  std::printf(
      "off CPU: %.3f s, %.3f s with Python frames; waits_in_sleep %.3f of its thread's "
      "%.3f s, waits_on_lock %.3f of %.3f s\n",
      off_ns / 1e9, off_ns_python / 1e9, sleeps.chain_ns / 1e9, sleeps.total_ns / 1e9,
      locks.chain_ns / 1e9, locks.total_ns / 1e9);
  if (!kSanitized) {
    EXPECT_GT(busy, 20u);
    EXPECT_GT(off_ns_python, 0u);
    EXPECT_GT(sleeps.chain_ns * 10, sleeps.total_ns * 7) << "most of the thread's wait";
    EXPECT_GT(locks.chain_ns * 10, locks.total_ns * 7) << "most of the thread's wait";
    EXPECT_LT(off_ns_unnamed_evaluator * 10, off_ns) << "waits in the evaluator are named";
  }
}

// Through the command line: record without symbolizing, then symbolize-profile. The Python
// frames were named when recorded and stay as they are; the native ones get their names only in
// the second step; the folded output marks the Python ones; --no-python records none. The
// program stays 0.5 s after its work, so that a slow recorder (a sanitized build) still reads
// its code objects while it lives (else they are named "[python: process_gone]", as designed).
TEST(PythonRecordCliTest, RecordThenSymbolizeProfile) {
  if (access(kPython311, X_OK) != 0) GTEST_SKIP() << "needs " << kPython311;
  const std::string bin = std::string(STACKSYM_BINARY_DIR) + "/stacksym";
  const std::string dir =
      std::string(STACKSYM_BINARY_DIR) + "/python_record_test_" + std::to_string(getpid());
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  const std::string program =
      " -c 'import time\ndef busy_here():\n    t = time.thread_time()\n    while "
      "time.thread_time() - t < 0.2: pass\nbusy_here()\ntime.sleep(0.5)\n'";
  auto run = [&](const std::string& args) {
    return system((bin + " " + args + " 2>" + dir + "/stderr").c_str());
  };
  int rc =
      run("record -q -F 499 --no-symbolize -o " + dir + "/raw.pb.gz -- " + kPython311 + program);
  if (rc != 0 && run("record -q -d 0.1 -o /dev/null --format folded -a") != 0) {
    GTEST_SKIP() << "the kernel refused the capture backend (needs root with CAP_BPF/CAP_PERFMON)";
  }
  ASSERT_EQ(rc, 0);
  ASSERT_EQ(run("symbolize-profile -q " + dir + "/raw.pb.gz " + dir + "/named.pb.gz"), 0);
  ASSERT_EQ(run("convert " + dir + "/raw.pb.gz --to folded -o " + dir + "/raw.folded"), 0);
  ASSERT_EQ(run("convert " + dir + "/named.pb.gz --to folded -o " + dir + "/named.folded"), 0);
  ASSERT_EQ(
      run("record -q -F 499 --no-python -o " + dir + "/off.folded -- " + kPython311 + program), 0);
  auto read = [&](const std::string& name) {
    std::ifstream in(dir + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  std::string raw = read("raw.folded"), named = read("named.folded"), off = read("off.folded");
  system(("rm -rf " + dir).c_str());
  const std::string chain = ";<module>_[py];busy_here_[py]";
  EXPECT_NE(raw.find(chain), std::string::npos) << raw.substr(0, 2000);
  EXPECT_NE(named.find(chain), std::string::npos) << named.substr(0, 2000);
  // Native names only after symbolize-profile.
  EXPECT_EQ(raw.find(";Py_BytesMain;"), std::string::npos);
  EXPECT_NE(named.find(";Py_BytesMain;"), std::string::npos) << named.substr(0, 2000);
  EXPECT_EQ(off.find("_[py]"), std::string::npos);
  EXPECT_NE(off.find("_PyEval_EvalFrameDefault"), std::string::npos) << off.substr(0, 2000);
}

}  // namespace
}  // namespace stacksym
