// Records the unwind fixture (no frame pointers anywhere: gcc and clang at -O2
// -fomit-frame-pointer) with --call-graph dwarf and checks each thread's chain against what
// the fixture does: leaf functions keep their callers, an alloca frame (RBP-based CFA), a
// callback through libc's qsort, a call through the PLT, a signal handler above the
// interrupted code, recursion deeper than 127 frames, C++ exceptions in flight, and every
// stack reaching its thread's first frame. Then the same workload under
// `perf record --call-graph dwarf`: stacksym must reach the entry as often, as deep.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "record_test_util.h"
#include "stacksym/capture.h"
#include "stacksym/elf.h"
#include "stacksym/unwind.h"

namespace stacksym {
namespace {

const std::string kFixtureDir = STACKSYM_FIXTURE_DIR;

// What a thread of the fixture does: its expected chain (innermost first, as an ordered
// subsequence: libc frames may come between) for the samples in which chain.front() appears,
// and the outermost frame every stack should reach.
struct ThreadExpectation {
  std::vector<std::string> chain;
  std::string root = "clone3";
  uint64_t min_reach_percent = 95;
};

const std::map<std::string, ThreadExpectation>& Expectations() {
  static const std::map<std::string, ThreadExpectation> e = {
      {"uw_leaf", {{"uw_leaf", "uw_mid", "uw_top", "uw_leaf_thread", "start_thread"}}},
      {"uw_alloca", {{"uw_alloca_leaf", "uw_alloca_frame", "uw_alloca_thread"}}},
      {"uw_qsort", {{"uw_compare", "uw_qsort_thread", "start_thread"}}},
      {"uw_plt", {{"unwind_lib_spin", "uw_plt_thread"}}},
      {"uw_signal", {{"uw_handler_spin", "uw_handler", "uw_sig_work", "uw_signal_thread"}}},
      // While an exception is being caught, _Unwind_RaiseException has already written the
      // handler's context into its own frame (uw_install_context) before it jumps there: a
      // sample in that window holds a stack that is being torn down, for perf too.
      {"uw_throw",
       {{"_Unwind_RaiseException", "__cxa_throw", "uw_throw_thread", "start_thread"},
        "clone3",
        85}},
      {"main", {{"uw_main_spin", "main", "__libc_start_call_main"}, "_start"}},
  };
  return e;
}

bool HasOrdered(const std::vector<std::string>& frames, const std::vector<std::string>& chain) {
  size_t next = 0;
  for (const std::string& f : frames) {
    if (next < chain.size() && f == chain[next]) ++next;
  }
  return next == chain.size();
}

// Per-thread figures of one recording (ours or perf's).
struct ThreadFigures {
  uint64_t samples = 0;
  uint64_t reached_root = 0;
  uint64_t frames = 0;
  uint64_t leaf_samples = 0;  // chain.front() is in the stack
  uint64_t leaf_with_chain = 0;
  uint64_t recurse_depth_limited = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_leaf;  // leaf → (samples, frames)
  std::vector<std::string> bad;  // a few stacks that missed, for the failure message
};

std::string ThreadKey(const std::string& comm, bool main_thread) {
  return main_thread ? "main" : comm;
}

void Account(std::map<std::string, ThreadFigures>* figures, const std::string& key,
             const std::vector<std::string>& user, uint64_t count, const std::string& shown) {
  // The main thread's start-up, sampled when the recorder starts the fixture: the exec itself
  // (the user registers still those of the old image), ld.so before main (its outermost
  // frame, ld.so's _start, has no symbol), and clone3's syscall, which glibc leaves outside
  // any FDE on purpose ("in the child the unwind info will be wrong").
  if (key == "main" && (shown.find("bprm_execve") != std::string::npos ||
                        shown.find("ld-linux") != std::string::npos ||
                        (!user.empty() && user.front() == "clone3"))) {
    return;
  }
  ThreadFigures& f = (*figures)[key];
  f.samples += count;
  f.frames += user.size() * count;
  auto& leaf_figures = f.by_leaf[user.empty() ? "" : user.front()];
  leaf_figures.first += count;
  leaf_figures.second += user.size() * count;
  if (key == "uw_recurse") {
    size_t recursive = 0;
    for (const std::string& n : user) recursive += n == "uw_recurse";
    if (user.size() >= 127 && recursive >= 120) f.recurse_depth_limited += count;
    return;
  }
  auto it = Expectations().find(key);
  if (it == Expectations().end()) return;
  bool root = !user.empty() && user.back() == it->second.root;
  if (root) f.reached_root += count;
  bool leaf = std::find(user.begin(), user.end(), it->second.chain.front()) != user.end();
  if (leaf) {
    f.leaf_samples += count;
    if (HasOrdered(user, it->second.chain)) f.leaf_with_chain += count;
  }
  if ((!root || (leaf && !HasOrdered(user, it->second.chain))) && f.bad.size() < 6) {
    f.bad.push_back(shown);
  }
}

std::map<std::string, ThreadFigures> FiguresOf(const Profile& profile, pid_t pid) {
  std::map<std::string, ThreadFigures> figures;
  for (const NamedStack& s : Named(profile)) {
    // pid < 0: the recording's only process (a command).
    if ((pid >= 0 && static_cast<pid_t>(s.pid) != pid) || s.user.empty()) continue;
    Account(&figures, ThreadKey(s.comm, s.tid == s.pid), s.user, s.count, Describe(s));
  }
  return figures;
}

void ExpectCompleteChains(const std::map<std::string, ThreadFigures>& figures,
                          const std::string& who) {
  for (const auto& [name, exp] : Expectations()) {
    auto it = figures.find(name);
    ASSERT_NE(it, figures.end()) << who << ": no sample of thread " << name;
    const ThreadFigures& f = it->second;
    if (f.samples < 20) continue;  // a starved thread on a busy machine says nothing
    std::string bad;
    for (const std::string& b : f.bad) bad += "\n    " + b;
    EXPECT_GE(f.reached_root * 100, f.samples * exp.min_reach_percent)
        << who << ": " << name << ": " << f.reached_root << " of " << f.samples << " stacks reach "
        << exp.root << "; some that did not:" << bad;
    EXPECT_GT(f.leaf_samples, 0u) << who << ": " << name << ": no sample in " << exp.chain[0];
    // One sample of slack: a leaf with a handful of samples (the signal handler's share of its
    // thread varies) may hold one taken where the chain really is shorter, such as a signal
    // that arrived in the thread's loop between two calls of uw_sig_work.
    EXPECT_GE((f.leaf_with_chain + 1) * 100, f.leaf_samples * exp.min_reach_percent)
        << who << ": " << name << ": " << f.leaf_with_chain << " of " << f.leaf_samples
        << " samples in " << exp.chain.front()
        << " have the whole chain; some that did not:" << bad;
  }
  auto rec = figures.find("uw_recurse");
  ASSERT_NE(rec, figures.end()) << who << ": no sample of uw_recurse";
  EXPECT_GE(rec->second.recurse_depth_limited * 100, rec->second.samples * 80)
      << who << ": recursion 200 deep should fill 127 frames";
}

#ifdef STACKSYM_SANITIZED_BUILD
// A sanitized loader builds unwind tables from CFI 50-100x more slowly than a release one (one
// to two seconds for libc and libstdc++ on a busy machine), which would leave most of a 2.5 s
// recording on stack copies. So the tables are built first, into a cache directory of the
// build tree that the recording then loads them from, as a warm `stacksym record` does.
std::string WarmUnwindCache(const std::string& program) {
  const std::string dir = kFixtureDir + "/unwind-table-cache";
  std::filesystem::create_directories(dir);
  UnwindTableCacheOptions options;
  options.dir = dir;
  UnwindTableCache cache(options);
  Fixture app(program, 1.0);  // its mappings: the program and every library it loads
  std::ifstream maps("/proc/" + std::to_string(app.pid()) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode, path;
    fields >> range >> perms >> offset >> dev >> inode >> path;
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] != '/') continue;
    if (auto elf = ElfFile::Open(path)) cache.Get(**elf);
  }
  return dir;
}
#endif

// Records the fixture for 2.5 s. `skipped` gets why the kernel refused the backend, if it did.
// Unless started by the recorder, the fixture runs for fixture_seconds (by default longer than
// the recording even when a sanitized recorder is slow to start: killed when done).
std::map<std::string, ThreadFigures> RecordFixture(const std::string& fixture,
                                                   CaptureBackend backend, RecordStats* stats,
                                                   std::string* skipped,
                                                   CallGraph call_graph = CallGraph::kDwarf,
                                                   const std::string& unwind_cache_dir = "",
                                                   double fixture_seconds = 8) {
  skipped->clear();
  // Loading the --call-graph bpf program takes the verifier a few hundred ms of CPU, seconds
  // of wall time while the fixture's eight spinning threads share two busy cores: in that
  // mode the recorder starts the fixture itself, after loading.
  const bool bpf = call_graph == CallGraph::kBpf ||
                   (call_graph == CallGraph::kAuto && backend == CaptureBackend::kBpf);
  bool command = bpf;
  std::optional<Fixture> app;
  if (!command) app.emplace(kFixtureDir + "/" + fixture, fixture_seconds);
  RecordOptions o;
  o.backend = backend;
  o.frequency_hz = 499;
  if (command) {
    o.command = {kFixtureDir + "/" + fixture, "2.5"};
  } else {
    o.pids = {app->pid()};
    o.duration_s = 2.5;
  }
  o.call_graph = call_graph;
  o.unwind_cache_dir = unwind_cache_dir;
#ifdef STACKSYM_SANITIZED_BUILD
  if (bpf && unwind_cache_dir.empty()) o.unwind_cache_dir = WarmUnwindCache(o.command[0]);
#endif
  auto rec = Recorder::Create(o);
  if (!rec) {
    // As root on these machines BPF and perf events work: a refusal there is a bug (a
    // verifier rejection reads as EACCES), not a missing capability.
    if (Refused(rec.error()) && geteuid() != 0) {
      *skipped = rec.error().ToString();
    } else {
      ADD_FAILURE() << rec.error().ToString();
      *skipped = "failed";
    }
    return {};
  }
  EXPECT_TRUE((*rec)->Run().ok());
  *stats = (*rec)->stats();
  Symbolize(**rec);
  EXPECT_EQ((*rec)->profile().total_samples(), stats->samples - stats->lost);
  EXPECT_EQ(stats->call_graph, bpf ? CallGraph::kBpf : call_graph);
  if (bpf) {
    // Unwound in the program, or (before the tables were loaded) from a stack copy here.
    EXPECT_EQ(stats->user_stacks_unwound + stats->bpf_unwound + stats->user_context_missing,
              stats->aggregated + stats->lost);
  } else {
    // A sample in kernel entry code (or of an exiting thread) has no user registers: the
    // kernel copies no stack for it. Rare, and counted.
    EXPECT_EQ(stats->user_stacks_unwound + stats->user_context_missing, stats->aggregated);
  }
  EXPECT_LE(stats->user_context_missing * 100, stats->samples)
      << stats->user_context_missing << " of " << stats->samples << " without user registers";
  return FiguresOf((*rec)->profile(), command ? -1 : app->pid());
}

void CheckRecording(const std::string& fixture, CaptureBackend backend,
                    CallGraph call_graph = CallGraph::kDwarf,
                    const std::string& unwind_cache_dir = "", RecordStats* stats = nullptr) {
  RecordStats st;
  std::string skipped;
  auto figures = RecordFixture(fixture, backend, &st, &skipped, call_graph, unwind_cache_dir);
  if (stats != nullptr) *stats = st;
  if (!skipped.empty()) GTEST_SKIP() << "kernel refused the capture backend: " << skipped;
  ASSERT_GT(st.samples, 100u) << "too few samples to judge (a starved fixture?)";
  if (st.call_graph == CallGraph::kBpf) {
    // The tables load within the first samples; most stacks are unwound in the program (a
    // sanitized recorder loads them several times more slowly).
#ifdef STACKSYM_SANITIZED_BUILD
    const uint64_t min_percent = 10;
#else
    const uint64_t min_percent = 70;
#endif
    EXPECT_GT(st.bpf_unwound * 100, st.samples * min_percent)
        << st.bpf_unwound << " of " << st.samples << " unwound in BPF";
    EXPECT_EQ(st.bpf_processes_loaded, 1u);
    EXPECT_EQ(st.bpf_processes_not_loaded, 0u) << st.bpf_first_load_problem;
    EXPECT_GT(st.bpf_unwind_frames, st.bpf_unwound * 5);
  } else {
    EXPECT_GT(st.stack_copy_bytes, 0u);
    // Spinning threads come back to the same registers and stack words: walked once.
    EXPECT_GT(st.unwind_cache_hits, 0u);
  }
  EXPECT_EQ(st.unwind_ends[static_cast<int>(UnwindEnd::kBadCfa)], 0u);
  ExpectCompleteChains(figures, fixture + " (" + CaptureBackendName(backend) + ")");
}

TEST(UnwindRecordTest, GccNoFramePointersBpf) {
  CheckRecording("unwind_app_gcc", CaptureBackend::kBpf);
}
TEST(UnwindRecordTest, GccNoFramePointersPerf) {
  CheckRecording("unwind_app_gcc", CaptureBackend::kPerf);
}
TEST(UnwindRecordTest, ClangNoFramePointersBpf) {
  CheckRecording("unwind_app_clang", CaptureBackend::kBpf);
}
// The fixture exits 1 s into the recording: its threads' last samples, taken past exit_mm,
// have no user registers. They are counted as such (RecordFixture checks that every sample is
// unwound or counted), not passed off as kernel threads'.
TEST(UnwindRecordTest, PerfSamplesOfAnExitingProcessAreCounted) {
  RecordStats st;
  std::string skipped;
  RecordFixture("unwind_app_gcc", CaptureBackend::kPerf, &st, &skipped, CallGraph::kDwarf, "", 1);
  if (!skipped.empty()) GTEST_SKIP() << "kernel refused the capture backend: " << skipped;
  EXPECT_GT(st.user_stacks_unwound, 100u);
}
// --call-graph bpf: the same chains, unwound in the BPF program.
TEST(UnwindRecordTest, GccNoFramePointersBpfUnwind) {
  CheckRecording("unwind_app_gcc", CaptureBackend::kBpf, CallGraph::kBpf);
}
TEST(UnwindRecordTest, ClangNoFramePointersBpfUnwind) {
  CheckRecording("unwind_app_clang", CaptureBackend::kBpf, CallGraph::kBpf);
}
// With a cache directory: the first recording builds the tables and stores them, the second
// loads them from it, and both unwind complete chains.
TEST(UnwindRecordTest, BpfUnwindFromPersistedTables) {
  char dir[] = "/tmp/stacksym-unwind-cache-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  RecordStats first, second;
  CheckRecording("unwind_app_gcc", CaptureBackend::kBpf, CallGraph::kBpf, dir, &first);
  if (!HasFailure() && !IsSkipped()) {
    EXPECT_GT(first.unwind_tables_stored, 0u);
    CheckRecording("unwind_app_gcc", CaptureBackend::kBpf, CallGraph::kBpf, dir, &second);
    // (A binary only the second recording sampled, such as the recorder's own image before
    // the command's exec, may still be built there.)
    EXPECT_GT(second.unwind_tables_loaded, 0u);
    EXPECT_LT(second.unwind_tables_stored, second.unwind_tables_loaded);
  }
  std::filesystem::remove_all(dir);
}

// `perf script` output: a header line per sample ("comm tid ..."), then one "ip sym (dso)"
// line per frame, then an empty line.
std::map<std::string, ThreadFigures> PerfScriptFigures(const std::string& path,
                                                       const std::string& main_comm) {
  std::map<std::string, ThreadFigures> figures;
  std::ifstream in(path);
  std::string line, comm, last_ip;
  pid_t tid = 0;
  bool in_sample = false;
  std::vector<std::string> user;
  auto flush = [&] {
    if (in_sample && !user.empty()) {
      std::string shown = comm + ":";
      for (const std::string& f : user) shown += " " + f;
      Account(&figures, ThreadKey(comm, comm == main_comm), user, 1, shown);
    }
    user.clear();
    last_ip.clear();
    in_sample = false;
  };
  while (std::getline(in, line)) {
    if (line.empty()) {
      flush();
      continue;
    }
    if (line[0] != ' ' && line[0] != '\t') {
      flush();
      // "comm  tid  ..." — comm may hold spaces in general, not in this fixture.
      std::istringstream hs(line);
      hs >> comm >> tid;
      in_sample = true;
      continue;
    }
    std::istringstream fs(line);
    std::string ip, sym;
    fs >> ip >> sym;
    if (sym.empty() || sym.front() == '(') sym = "";
    size_t plus = sym.find("+0x");
    if (plus != std::string::npos) sym.resize(plus);
    // Kernel frames come first in perf script; this fixture's samples count user frames only.
    if (line.find("[kernel.kallsyms]") != std::string::npos) continue;
    // Inlined functions are listed on lines of their own with the pc of the frame they are
    // in: one frame per distinct pc, named by its last (outermost) line.
    if (ip == last_ip && !user.empty()) {
      user.back() = sym;
      continue;
    }
    last_ip = ip;
    user.push_back(sym);
  }
  flush();
  return figures;
}

TEST(UnwindRecordTest, AsCompleteAsPerfDwarf) {
  if (system("perf version >/dev/null 2>&1") != 0) GTEST_SKIP() << "perf is not installed";
  std::string dir = std::filesystem::temp_directory_path() / "stacksym_unwind_perf";
  std::filesystem::create_directories(dir);
  // perf runs the fixture itself (attaching perf to a running process with -p was refused
  // with ESRCH here now and then); its main thread is the one named after the binary.
  std::string data = dir + "/perf.data", script = dir + "/perf.txt";
  std::string cmd = "perf record -q -e cpu-clock --call-graph dwarf -F 499 -o " + data + " -- " +
                    kFixtureDir + "/unwind_app_gcc 2.5 >/dev/null 2>&1 && perf script -i " + data +
                    " -F comm,tid,ip,sym > " + script + " 2>/dev/null";
  if (system(cmd.c_str()) != 0) GTEST_SKIP() << "perf record --call-graph dwarf failed here";
  auto perf = PerfScriptFigures(script, "unwind_app_gcc");

  RecordStats st;
  std::string skipped;
  auto ours = RecordFixture("unwind_app_gcc", CaptureBackend::kBpf, &st, &skipped);
  if (!skipped.empty()) GTEST_SKIP() << "kernel refused the capture backend: " << skipped;
  for (const auto& [name, exp] : Expectations()) {
    const ThreadFigures& p = perf[name];
    const ThreadFigures& s = ours[name];
    if (p.samples < 20 || s.samples < 20) continue;
    double perf_root = static_cast<double>(p.reached_root) / static_cast<double>(p.samples);
    double our_root = static_cast<double>(s.reached_root) / static_cast<double>(s.samples);
    // Depth is compared on the leaf function perf sampled most, so that two runs that spread
    // their samples differently (handler vs interrupted code) compare like with like.
    std::string leaf;
    uint64_t most = 0;
    for (const auto& [name, figs] : p.by_leaf) {
      if (figs.first > most && s.by_leaf.count(name)) leaf = name, most = figs.first;
    }
    ASSERT_FALSE(leaf.empty()) << name << ": no leaf function in common with perf";
    auto depth = [&](const ThreadFigures& t) {
      const auto& figs = t.by_leaf.at(leaf);
      return static_cast<double>(figs.second) / static_cast<double>(figs.first);
    };
    double perf_depth = depth(p), our_depth = depth(s);
    std::printf(
        "%-10s  reach %s: perf %.1f%%, stacksym %.1f%%; frames in %s: perf %.1f, "
        "stacksym %.1f\n",
        name.c_str(), exp.root.c_str(), 100 * perf_root, 100 * our_root, leaf.c_str(), perf_depth,
        our_depth);
    // Three samples of slack: a thread may get only a few dozen samples on a busy machine.
    EXPECT_GE(our_root + 3.0 / static_cast<double>(s.samples), 0.95 * perf_root) << name;
    // The same slack for depth: three samples of that leaf may stop short.
    double leaf_samples = static_cast<double>(s.by_leaf.at(leaf).first);
    EXPECT_GE(our_depth + 3.0 * perf_depth / leaf_samples, 0.9 * perf_depth)
        << name << " (" << leaf_samples << " samples in " << leaf << ")";
    // Where perf sees the known chain, so do we.
    if (p.leaf_samples >= 10 && p.leaf_with_chain * 10 >= p.leaf_samples * 9) {
      EXPECT_GE(s.leaf_with_chain * 100, s.leaf_samples * exp.min_reach_percent) << name;
    }
  }
}

// Without --call-graph: unwound in BPF where the BPF backend runs (with the fixture's known
// chains), stack copies on perf's, frame pointers on the stackmap backend's (its only mode).
TEST(UnwindRecordTest, DefaultCallGraphFollowsTheBackend) {
  EXPECT_EQ(RecordOptions().call_graph, CallGraph::kAuto);
  const std::pair<CaptureBackend, CallGraph> expected[] = {
      {CaptureBackend::kPerf, CallGraph::kDwarf},
      {CaptureBackend::kStackMap, CallGraph::kFramePointers}};
  for (const auto& [backend, call_graph] : expected) {
    SCOPED_TRACE(CaptureBackendName(backend));
    RecordOptions o;
    o.backend = backend;
    o.command = {"/bin/true"};
    CREATE_RECORDER_OR_SKIP(rec, o);
    ASSERT_TRUE(rec->Run().ok());
    EXPECT_EQ(rec->stats().call_graph, call_graph);
  }
  CheckRecording("unwind_app_gcc", CaptureBackend::kBpf, CallGraph::kAuto);
}

// The unwinding program cannot load (here: its rows map would need 32 GiB): by default the BPF
// backend still runs, with stack copies, and says why; asked for explicitly, it is an error.
TEST(UnwindRecordTest, DefaultFallsBackToStackCopiesWhenTheUnwinderCannotLoad) {
  RecordOptions o;
  o.backend = CaptureBackend::kBpf;
  o.frequency_hz = 199;
  o.command = {"/bin/true"};
  o.bpf_unwind_rows = 1u << 31;
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  EXPECT_EQ(rec->stats().backend, CaptureBackend::kBpf);
  EXPECT_EQ(rec->stats().call_graph, CallGraph::kDwarf);
  bool said = false;
  for (const std::string& note : rec->notes()) {
    said |= note.find("unwinding in BPF unavailable") != std::string::npos;
  }
  EXPECT_TRUE(said) << "no note says why the stacks are stack copies";
  o.call_graph = CallGraph::kBpf;
  EXPECT_FALSE(Recorder::Create(o).ok());
}

TEST(UnwindRecordTest, CallGraphSpelling) {
  auto fp = ParseCallGraph("fp");
  ASSERT_TRUE(fp.ok());
  EXPECT_EQ(fp->mode, CallGraph::kFramePointers);
  auto dwarf = ParseCallGraph("dwarf");
  ASSERT_TRUE(dwarf.ok());
  EXPECT_EQ(dwarf->mode, CallGraph::kDwarf);
  EXPECT_EQ(dwarf->stack_copy_bytes, kDefaultStackCopyBytes);
  auto sized = ParseCallGraph("dwarf,65528");
  ASSERT_TRUE(sized.ok());
  EXPECT_EQ(sized->stack_copy_bytes, 65528u);
  auto bpf = ParseCallGraph("bpf");
  ASSERT_TRUE(bpf.ok());
  EXPECT_EQ(bpf->mode, CallGraph::kBpf);
  EXPECT_STREQ(CallGraphName(CallGraph::kBpf), "bpf");
  EXPECT_STREQ(CallGraphName(CallGraph::kAuto), "auto");
  auto k = ParseCallGraph("dwarf,32K");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->stack_copy_bytes, 32768u);
  for (const char* bad : {"lbr", "dwarf,", "dwarf,0", "dwarf,12", "dwarf,65536", "dwarf,x",
                          "fp,8192", "bpf,8192", "dwarf,99999999999"}) {
    EXPECT_FALSE(ParseCallGraph(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace stacksym
