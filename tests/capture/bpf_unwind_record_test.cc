// --call-graph bpf against the user-space unwinder: in verify mode every sample unwound in the
// BPF program also carries a stack copy of the same moment, which the recorder unwinds with
// UnwindStack (the reference) and compares. On the FP-less fixtures (gcc, clang) and on
// python3, at least 99.9 % of the chains must be the same; every difference is printed.
#include <gtest/gtest.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "record_test_util.h"
#include "stacksym/capture.h"

namespace stacksym {
namespace {

const std::string kFixtureDir = STACKSYM_FIXTURE_DIR;

// Records `command` in verify mode, checks the agreement, and returns the recorder (its profile
// not yet symbolized) for further checks; nullptr when the kernel refused the backend.
std::unique_ptr<Recorder> RecordVerified(const std::vector<std::string>& command,
                                         const std::string& who, uint64_t min_verified = 200,
                                         uint32_t bpf_unwind_rows = 0,
                                         bool judge_late_reads = true) {
  RecordOptions o;
  if (bpf_unwind_rows != 0) o.bpf_unwind_rows = bpf_unwind_rows;
  o.backend = CaptureBackend::kBpf;
  o.frequency_hz = 499;
  o.command = command;
  o.call_graph = CallGraph::kBpf;
  o.bpf_unwind_verify = true;
  o.stack_copy_bytes = kMaxStackCopyBytes;  // so that the reference sees as deep as it can
  o.ringbuf_size = 64u << 20;
  auto created = Recorder::Create(o);
  if (!created) {
    if (!Refused(created.error())) ADD_FAILURE() << created.error().ToString();
    return nullptr;
  }
  std::unique_ptr<Recorder> rec = std::move(*created);
  EXPECT_TRUE(rec->Run().ok());
  const RecordStats& st = rec->stats();
  std::printf(
      "%s: %llu samples, %llu unwound in BPF (%.1f frames each), %llu stack copies "
      "before the tables were loaded; %llu of %llu chains agree (%llu read too late to "
      "compare)\n",
      who.c_str(), static_cast<unsigned long long>(st.samples),
      static_cast<unsigned long long>(st.bpf_unwound),
      st.bpf_unwound
          ? static_cast<double>(st.bpf_unwind_frames) / static_cast<double>(st.bpf_unwound)
          : 0.0,
      static_cast<unsigned long long>(st.bpf_fallback_copies),
      static_cast<unsigned long long>(st.verify_agreed),
      static_cast<unsigned long long>(st.verify_samples),
      static_cast<unsigned long long>(st.verify_no_reference));
  for (const std::string& d : st.verify_differences) std::printf("  differs: %s\n", d.c_str());
  std::printf("  rows the walk remembered: %llu of %llu frames\n",
              static_cast<unsigned long long>(st.bpf_walk_memo_hits),
              static_cast<unsigned long long>(st.bpf_unwind_frames));
  // Every walk in the program says why it ended; most reach the outermost frame.
  uint64_t ends = 0;
  std::printf("  walks in BPF ended:");
  for (int i = 0; i < kUnwindEndCount; ++i) {
    ends += st.bpf_unwind_ends[i];
    if (st.bpf_unwind_ends[i] != 0) {
      std::printf(" %s=%llu", UnwindEndName(static_cast<UnwindEnd>(i)),
                  static_cast<unsigned long long>(st.bpf_unwind_ends[i]));
    }
  }
  std::printf("\n");
  EXPECT_EQ(ends, st.verify_samples + st.verify_no_reference);
  EXPECT_GE(st.bpf_unwind_ends[static_cast<int>(UnwindEnd::kOutermost)] * 2, ends)
      << who << ": fewer than half the walks in BPF reached the outermost frame";
  EXPECT_EQ(st.lost, 0u);
  EXPECT_EQ(st.bpf_processes_not_loaded, 0u) << st.bpf_first_load_problem;
  EXPECT_GE(st.verify_samples, min_verified) << who << ": too few samples unwound in BPF to judge";
  // Every BPF-unwound sample was compared, unless the reader came too late to place its
  // sampled pc at all (no reference: the process had exited or exec'd); those are few.
  EXPECT_EQ(st.verify_samples + st.verify_no_reference, st.bpf_unwound - st.lost);
  if (judge_late_reads) {
    EXPECT_LE(st.verify_no_reference * 2, st.verify_samples)
        << who << ": " << st.verify_no_reference << " samples had no reference";
  }
  EXPECT_GE(st.verify_agreed * 1000, st.verify_samples * 999)
      << who << ": " << st.verify_samples - st.verify_agreed << " of " << st.verify_samples
      << " chains differ (printed above)";
  return rec;
}

#define RECORD_VERIFIED_OR_SKIP(var, command, ...)                                 \
  std::unique_ptr<Recorder> var = RecordVerified(command, __VA_ARGS__);            \
  if (::testing::Test::HasFailure()) return;                                       \
  if (var == nullptr) {                                                            \
    GTEST_SKIP() << "kernel refused the capture backend (needs root with CAP_BPF/" \
                    "CAP_PERFMON)";                                                \
  }

// Callers' return addresses repeat from sample to sample: some rows come from the walk's memo,
// and those chains agree as well as the searched ones.
void CheckAgreement(const std::vector<std::string>& command, const std::string& who) {
  RECORD_VERIFIED_OR_SKIP(rec, command, who);
  EXPECT_GT(rec->stats().bpf_walk_memo_hits, 0u);
}

// Samples whose user stack passes through a module whose path contains `module` (any sample
// when empty), and how many of them have `root` among their frames.
struct Reach {
  uint64_t samples = 0;
  uint64_t reached = 0;
};
Reach ReachThrough(const Profile& p, const std::string& module, const std::string& root) {
  Reach r;
  for (const NamedStack& s : Named(p)) {
    bool through = module.empty();
    for (const std::string& m : s.user_modules) through |= m.find(module) != std::string::npos;
    if (!through || s.user.empty()) continue;
    r.samples += s.count;
    if (std::find(s.user.begin(), s.user.end(), root) != s.user.end()) r.reached += s.count;
  }
  return r;
}

void PrintReach(const char* what, const Reach& r, const char* root) {
  std::printf("%s: %llu samples, %llu reach %s\n", what, static_cast<unsigned long long>(r.samples),
              static_cast<unsigned long long>(r.reached), root);
}

const char* const kPython = "/usr/bin/python3";
const char* const kDecimal =
    "/usr/lib/python3.11/lib-dynload/_decimal.cpython-311-x86_64-linux-gnu.so";

// A library loaded with dlopen while the process is sampled: its code is in no table loaded so
// far, so the walk meets an unknown mapping, sends a stack copy instead, and the tables are
// loaded again.
TEST(BpfUnwindRecordTest, LibraryLoadedMidRun) {
  if (access(kPython, X_OK) != 0 || access(kDecimal, R_OK) != 0) {
    GTEST_SKIP() << "needs python3.11 with its _decimal extension module";
  }
  std::vector<std::string> command = {kPython, "-c",
                                      "import time\n"
                                      "def f(n):\n"
                                      "    return f(n - 1) + 1 if n else 0\n"
                                      "end = time.time() + 1.0\n"
                                      "while time.time() < end:\n"
                                      "    f(20)\n"
                                      "import _decimal\n"  // the dlopen
                                      "c = _decimal.Context(prec=300)\n"
                                      "end = time.time() + 1.5\n"
                                      "while time.time() < end:\n"
                                      "    _decimal.Decimal(2).sqrt(c)\n"};
  RECORD_VERIFIED_OR_SKIP(rec, command, "python3 + dlopen");
  EXPECT_GT(rec->stats().bpf_unknown_mapping, 0u) << "no walk met the library loaded mid-run";
  Symbolize(*rec);
  Reach r = ReachThrough(rec->profile(), "_decimal", "Py_BytesMain");
  PrintReach("in _decimal", r, "Py_BytesMain");
  ASSERT_GT(r.samples, 100u) << "too few samples in the library loaded mid-run";
  EXPECT_GE(r.reached * 100, r.samples * 95);
}

// exec replaces every mapping of a pid whose tables are loaded: the stale ones must not be
// used on the new image's stacks.
TEST(BpfUnwindRecordTest, ProcessThatExecs) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << "no " << kPython;
  std::vector<std::string> command = {
      kPython, "-c",
      "import os, sys, time\n"
      "def f(n):\n"
      "    return f(n - 1) + 1 if n else 0\n"
      "end = time.time() + 1.0\n"
      "while time.time() < end:\n"
      "    f(20)\n"
      "os.execv(sys.executable, [sys.executable, '-S', '-c', 'import time\\n'\n"
      "    'def g(n):\\n    return g(n - 1) * 1 if n else 1\\n'\n"
      "    'end = time.time() + 1.5\\nwhile time.time() < end:\\n    g(25)\\n'])\n"};
  RECORD_VERIFIED_OR_SKIP(rec, command, "python3 exec python3");
  Symbolize(*rec);
  Reach all = ReachThrough(rec->profile(), "", "Py_BytesMain");
  PrintReach("all", all, "Py_BytesMain");
  // 2.5 s of CPU gives ~600 samples on an idle machine; a loaded one gives the program less
  // CPU, and 200 samples still measure the shares below.
  ASSERT_GT(all.samples, 200u);
  EXPECT_GE(all.reached * 100, all.samples * 95);
  // The exec'd image was unwound in BPF too: its mappings were loaded after the exec (a
  // sanitized recorder loads more slowly, so more samples are stack copies there).
#ifdef STACKSYM_SANITIZED_BUILD
  const uint64_t min_percent = 50;
#else
  const uint64_t min_percent = 70;
#endif
  EXPECT_GE(rec->stats().bpf_unwound * 100, all.samples * min_percent);
}

// Many short-lived processes, each needing its tables loaded: every process is loaded or
// counted, nothing is lost, and the chains agree.
TEST(BpfUnwindRecordTest, ManyShortLivedProcesses) {
#ifdef STACKSYM_SANITIZED_BUILD
  // The sanitized recorder drains samples about a second late, when most of these processes
  // have exited: their samples stay stack copies (right, but not unwound in BPF), and those
  // unwound in BPF may be read after their process exited (no reference to compare with).
  const uint64_t min_verified = 50, min_loaded = 2;
  const bool judge_late_reads = false;
#else
  const uint64_t min_verified = 200, min_loaded = 6;
  const bool judge_late_reads = true;
#endif
  std::string app = kFixtureDir + "/unwind_app_gcc";
  std::vector<std::string> command = {
      "/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do " + app + " 0.25; done"};
  RECORD_VERIFIED_OR_SKIP(rec, command, "12 x unwind_app_gcc 0.25 s", min_verified, 0,
                          judge_late_reads);
  EXPECT_GE(rec->stats().bpf_processes_loaded, min_loaded);
}

// Unwind rows bounded below what libc needs: nothing fits, which is counted and said, and the
// samples take the stack-copy path with complete chains.
TEST(BpfUnwindRecordTest, TablesThatDoNotFitFallBackToStackCopies) {
  RecordOptions o;
  o.backend = CaptureBackend::kBpf;
  o.frequency_hz = 499;
  o.command = {kFixtureDir + "/unwind_app_gcc", "1.5"};
  o.call_graph = CallGraph::kBpf;
  o.bpf_unwind_rows = 1000;  // libc alone has about 24k rows
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  const RecordStats& st = rec->stats();
  EXPECT_EQ(st.lost, 0u);
  EXPECT_EQ(st.bpf_unwound, 0u);
  EXPECT_GE(st.bpf_processes_not_loaded, 1u);
  EXPECT_NE(st.bpf_first_load_problem.find("unwind rows full"), std::string::npos)
      << st.bpf_first_load_problem;
  EXPECT_EQ(st.bpf_fallback_copies, st.samples);
  uint64_t complete = st.unwind_ends[static_cast<int>(UnwindEnd::kOutermost)] +
                      st.unwind_ends[static_cast<int>(UnwindEnd::kDepthLimit)];
  EXPECT_GE(complete * 100, st.user_stacks_unwound * 95)
      << complete << " of " << st.user_stacks_unwound << " stack copies unwound completely";
}

// Rows for python3's tables or the gcc fixture's (about 105k and 73k rows, libc and ld.so
// shared), never both: while both run, loading one evicts the other (the process, then its
// tables); afterwards the clang fixture's tables take the rows of the dead processes' tables.
// Chains agree, every process loads, nothing is lost.
TEST(BpfUnwindRecordTest, TablesEvictedUnderASmallBound) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << "no " << kPython;
#ifdef STACKSYM_SANITIZED_BUILD
  // The sanitized loader builds each table in about a second and falls far behind: the
  // processes run longer so that both are loaded and evict each other, and only eviction and
  // the agreement of whatever was unwound in BPF (1 to 560 samples in runs here) are judged.
  // Not how late the reader was: on a loaded CI machine it read 1258 of 2120 samples after
  // their process had exited (no reference to compare with).
  const bool sanitized = true;
  const std::string both = "4.0", after = "2.0";
#else
  const bool sanitized = false;
  const std::string both = "2.0", after = "1.0";
#endif
  std::string python = std::string(kPython) +
                       " -c 'import time\n"
                       "def f(n):\n"
                       "    return f(n - 1) + 1 if n else 0\n"
                       "end = time.time() + " +
                       both +
                       "\n"
                       "while time.time() < end:\n"
                       "    f(20)\n'";
  std::vector<std::string> command = {"/bin/sh", "-c",
                                      python + " & " + kFixtureDir + "/unwind_app_gcc " + both +
                                          "; wait; " + kFixtureDir + "/unwind_app_clang " + after};
  RECORD_VERIFIED_OR_SKIP(rec, command, "python3 + gcc fixture, then clang fixture, 120k rows",
                          sanitized ? 0 : 200, 120000, /*judge_late_reads=*/!sanitized);
  const RecordStats& st = rec->stats();
  std::printf("evicted: %llu tables, %llu processes; %llu tables and %llu rows loaded\n",
              static_cast<unsigned long long>(st.bpf_tables_evicted),
              static_cast<unsigned long long>(st.bpf_processes_evicted),
              static_cast<unsigned long long>(st.bpf_tables_loaded),
              static_cast<unsigned long long>(st.bpf_rows_loaded));
  EXPECT_GT(st.bpf_tables_evicted, 0u);
  EXPECT_GT(st.bpf_processes_evicted, 0u);
  EXPECT_LE(st.bpf_rows_in_use, 120000u);
  if (sanitized) {
    std::printf("sanitizer build: python3's chains are not judged (the reader falls behind)\n");
    return;
  }
  Symbolize(*rec);
  Reach py = ReachThrough(rec->profile(), "python3", "Py_BytesMain");
  PrintReach("python3", py, "Py_BytesMain");
  ASSERT_GT(py.samples, 100u);
  EXPECT_GE(py.reached * 100, py.samples * 95);
}

TEST(BpfUnwindRecordTest, AgreesWithStackCopiesGcc) {
  CheckAgreement({kFixtureDir + "/unwind_app_gcc", "2.5"}, "unwind_app_gcc");
}

TEST(BpfUnwindRecordTest, AgreesWithStackCopiesClang) {
  CheckAgreement({kFixtureDir + "/unwind_app_clang", "2.5"}, "unwind_app_clang");
}

TEST(BpfUnwindRecordTest, AgreesWithStackCopiesPython) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  // Deep recursion through the interpreter's C frames, and some library calls.
  CheckAgreement({"/usr/bin/python3", "-c",
                  "import time, json\n"
                  "def f(n):\n"
                  "    return f(n - 1) + 1 if n else len(json.dumps(list(range(200))))\n"
                  "end = time.time() + 2.5\n"
                  "while time.time() < end:\n"
                  "    f(30)\n"},
                 "python3");
}

// The default start pays for what the run uses: the walk's program verified once per step
// function (the verifier processed 54k instructions when it checked the walk in every state
// of its loop), the first 1 MiB segment of rows and no more, the ring buffer sized to the
// rate, and the phases accounted.
TEST(BpfUnwindRecordTest, StartsWithWhatTheRunNeeds) {
  RecordOptions o;
  o.command = {"/bin/true"};
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  const RecordStats& st = rec->stats();
  if (st.call_graph != CallGraph::kBpf) GTEST_SKIP() << "no unwinding in BPF here";
  const RecordStartup& s = st.startup;
  std::printf(
      "start-up: %.1f ms (open %.1f, load %.1f, attach %.1f, ring %.1f); %llu "
      "instructions verified, %llu bytes of kernel types, %llu KiB ring buffer\n",
      s.total_s * 1e3, s.open_s * 1e3, s.load_s * 1e3, s.attach_s * 1e3, s.ring_s * 1e3,
      static_cast<unsigned long long>(s.verified_insns),
      static_cast<unsigned long long>(s.kernel_types_bytes),
      static_cast<unsigned long long>(s.ring_bytes >> 10));
  EXPECT_GT(s.load_s, 0);
  EXPECT_GE(s.total_s, s.open_s + s.load_s + s.attach_s + s.ring_s);
  EXPECT_GT(s.verified_insns, 0u);
  EXPECT_LT(s.verified_insns, 20000u);
  EXPECT_EQ(s.cpus, static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_LE(s.ring_bytes, 32u << 20);
  EXPECT_EQ(st.bpf_rows_map_bytes, 1u << 20);
}

// A rows bound of 4 GiB costs nothing until tables fill it: segments are created as rows
// are written, so the map holds about what was loaded.
TEST(BpfUnwindRecordTest, RowsMapGrowsWithTheTables) {
  struct sysinfo si;
  ASSERT_EQ(sysinfo(&si), 0);
  constexpr uint64_t kBound = uint64_t{4} << 30;
  if (uint64_t{si.totalram} * si.mem_unit < kBound) GTEST_SKIP() << "less than 4 GiB of memory";
  RecordOptions o;
  o.frequency_hz = 499;
  o.call_graph = CallGraph::kBpf;
  o.bpf_unwind_rows = static_cast<uint32_t>(kBound / 16);
#ifdef STACKSYM_SANITIZED_BUILD
  o.command = {kFixtureDir + "/unwind_app_gcc", "4.0"};  // its loader takes about a second
#else
  o.command = {kFixtureDir + "/unwind_app_gcc", "1.0"};
#endif
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  const RecordStats& st = rec->stats();
  std::printf("%llu rows loaded, %llu in use, rows map %llu KiB\n",
              static_cast<unsigned long long>(st.bpf_rows_loaded),
              static_cast<unsigned long long>(st.bpf_rows_in_use),
              static_cast<unsigned long long>(st.bpf_rows_map_bytes >> 10));
  ASSERT_GT(st.bpf_rows_loaded, 0u) << st.bpf_first_load_problem;
  // First fit from row 0, nothing evicted: the rows in use, rounded up to a segment.
  EXPECT_EQ(st.bpf_tables_evicted, 0u);
  EXPECT_EQ(st.bpf_rows_map_bytes, (st.bpf_rows_in_use * 16 + (1u << 20) - 1) / (1u << 20) << 20);
}

}  // namespace
}  // namespace stacksym
