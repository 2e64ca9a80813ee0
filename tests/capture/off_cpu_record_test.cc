// --off-cpu: the time threads of an FP-less program spend waiting, recorded with their whole
// stacks. The fixture measures its own time inside each waiting function; the profile must
// attribute the same time to it, under its full caller chain, and nothing to a thread that only
// spins. A context-switch-heavy workload checks that every interval is accounted for and that
// sampled recording scales its totals right. Needs root; skips where the kernel refuses BPF.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "record_test_util.h"
#include "stacksym/capture.h"
#include "stacksym/output.h"
#include "stacksym/profile.h"

namespace stacksym {
namespace {

const std::string kApp = std::string(STACKSYM_FIXTURE_DIR) + "/off_cpu_app";

RecordOptions OffCpu(std::vector<std::string> command) {
  RecordOptions o;
  o.backend = CaptureBackend::kBpf;
  o.off_cpu = true;
  o.command = std::move(command);
  return o;
}

// What the fixture measured itself: "NAME VALUE" lines.
std::map<std::string, uint64_t> ReadFigures(const std::string& path) {
  std::map<std::string, uint64_t> out;
  std::ifstream in(path);
  std::string name;
  uint64_t value;
  while (in >> name >> value) out[name] = value;
  return out;
}

struct OffCpuStack {
  NamedStack named;
  uint64_t ns;
  ThreadState state;
};

std::vector<OffCpuStack> OffCpuStacks(const Profile& p) {
  std::vector<OffCpuStack> out;
  std::vector<NamedStack> named = Named(p);
  for (size_t i = 0; i < named.size(); ++i) {
    uint64_t ns = i < p.off_cpu_ns.size() ? p.off_cpu_ns[i] : 0;
    if (ns > 0) out.push_back({named[i], ns, p.stacks[i].state});
  }
  return out;
}

// What the recorder needs for its default attach (tp_btf): the kernel's BTF describing the
// tracepoint. Empty when it does; else what is missing. Read here on its own, not through
// the recorder, so that a wrong choice of the recorder's fails.
std::string TpBtfMissing() {
  std::ifstream in("/sys/kernel/btf/vmlinux", std::ios::binary);
  if (!in) return "no kernel BTF (/sys/kernel/btf/vmlinux)";
  std::string btf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (btf.find(std::string("\0btf_trace_sched_switch\0", 24)) == std::string::npos) {
    return "the kernel's BTF has no btf_trace_sched_switch";
  }
  return "";
}

// At the start of a test of the default attach.
#define SKIP_WITHOUT_TP_BTF()                                                 \
  if (std::string missing = TpBtfMissing(); !missing.empty()) {               \
    GTEST_SKIP() << "sched_switch cannot be attached as tp_btf: " << missing; \
  }

// Every interval that ended is in exactly one counter, and the profile holds the recorded ones;
// sched_switch was attached as expected (tp_btf unless the raw tracepoint was forced).
void ExpectAccounted(Recorder& rec, OffCpuAttach attach = OffCpuAttach::kTpBtf) {
  EXPECT_STREQ(OffCpuAttachName(rec.stats().startup.off_cpu_attach), OffCpuAttachName(attach));
  const OffCpuCounts& c = rec.stats().off_cpu;
  std::printf(
      "off-CPU: %llu intervals (%.3f s): %llu recorded (%.3f s), %llu filtered, %llu sampled "
      "out, %llu dropped (%.3f s), %llu untracked\n",
      static_cast<unsigned long long>(c.intervals), static_cast<double>(c.ns) * 1e-9,
      static_cast<unsigned long long>(c.recorded), static_cast<double>(c.recorded_ns) * 1e-9,
      static_cast<unsigned long long>(c.filtered), static_cast<unsigned long long>(c.sampled_out),
      static_cast<unsigned long long>(c.dropped), static_cast<double>(c.dropped_ns) * 1e-9,
      static_cast<unsigned long long>(c.untracked));
  EXPECT_EQ(c.intervals, c.filtered + c.sampled_out + c.recorded + c.dropped);
  EXPECT_EQ(c.ns, c.filtered_ns + c.sampled_out_ns + c.recorded_ns + c.dropped_ns);
  EXPECT_EQ(rec.stats().off_cpu_aggregated, c.recorded);
  EXPECT_EQ(rec.stats().off_cpu_aggregated_ns, c.recorded_ns);
  EXPECT_EQ(c.untracked, 0u);
  EXPECT_TRUE(rec.profile().has_off_cpu());
}

// The blocked time per function, with sched_switch attached one way or the other.
void CheckBlockedTimePerFunction(OffCpuAttach attach) {
  const std::string out = ::testing::TempDir() + "off_cpu_figures.txt";
  RecordOptions o = OffCpu({kApp, "2", "blocking", out});
  o.off_cpu_force_raw_tp = attach == OffCpuAttach::kRawTp;
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  ExpectAccounted(*rec, attach);
  Symbolize(*rec);
  std::map<std::string, uint64_t> own = ReadFigures(out);
  std::filesystem::remove(out);
  ASSERT_EQ(own.size(), 4u) << "the fixture did not write its figures";

  // The waiting function, its callers up to the thread's entry, and (part of the name of) a
  // kernel function that says why it waits: pipe_read is anon_pipe_read since Linux 6.15.
  struct Wait {
    std::vector<std::string> chain;
    std::string kernel;
    uint64_t under_chain = 0, with_reason = 0, anywhere = 0;
  };
  std::map<std::string, Wait> waits = {
      {"sleep_here",
       {{"sleep_here", "sleep_loop", "sleeper_main", "start_thread"}, "do_nanosleep"}},
      {"read_here", {{"read_here", "read_loop", "reader_main", "start_thread"}, "pipe_read"}},
      {"lock_here", {{"lock_here", "wait_loop", "waiter_main", "start_thread"}, "futex_wait"}},
  };
  const uint32_t spinner = static_cast<uint32_t>(own["spinner"]);
  uint64_t spinner_waiting = 0, spinner_preempted = 0;
  for (const OffCpuStack& s : OffCpuStacks(rec->profile())) {
    ASSERT_FALSE(s.named.kernel.empty()) << Describe(s.named);
    // The kernel stack starts where the task left the CPU, not in the tracepoint's caller.
    EXPECT_EQ(s.named.kernel.front(), "__schedule") << Describe(s.named);
    if (s.named.tid == spinner) {
      (s.state == ThreadState::kPreempted ? spinner_preempted : spinner_waiting) += s.ns;
    }
    for (auto& [name, w] : waits) {
      if (std::find(s.named.user.begin(), s.named.user.end(), name) == s.named.user.end()) continue;
      w.anywhere += s.ns;
      if (!HasChain(s.named.user, w.chain)) {
        std::printf("  %s elsewhere: %s\n", name.c_str(), Describe(s.named).c_str());
        continue;
      }
      w.under_chain += s.ns;
      // Preempted on the way back to user space, the kernel stack no longer says why. (A
      // named reference: clang does not capture structured bindings in lambdas.)
      const auto& reason = w.kernel;
      if (std::any_of(s.named.kernel.begin(), s.named.kernel.end(),
                      [&](const auto& f) { return f.find(reason) != std::string::npos; })) {
        w.with_reason += s.ns;
      }
    }
  }
  for (const auto& [name, w] : waits) {
    double own_s = static_cast<double>(own[name]) * 1e-9;
    double rec_s = static_cast<double>(w.under_chain) * 1e-9;
    std::printf(
        "%s: measured by the program %.4f s, recorded under its chain %.4f s (%+.2f %%), "
        "%.4f s of it in %s\n",
        name.c_str(), own_s, rec_s, own_s > 0 ? (rec_s / own_s - 1) * 100 : 0.0,
        static_cast<double>(w.with_reason) * 1e-9, w.kernel.c_str());
    ASSERT_GT(own[name], 100'000'000u) << name << ": the fixture waited too little to judge";
    EXPECT_LE(std::fabs(rec_s - own_s), 0.05 * own_s) << name;
    EXPECT_GE(w.under_chain * 100, w.anywhere * 99) << name << ": stacks without the full chain";
    EXPECT_GE(w.with_reason * 10, w.under_chain * 8)
        << name << ": kernel stacks without " << w.kernel;
  }
  // The spinner never blocks; it may be preempted on a busy machine (said, not judged).
  std::printf("spinner (tid %u): %.4f s waiting, %.4f s preempted\n", spinner,
              static_cast<double>(spinner_waiting) * 1e-9,
              static_cast<double>(spinner_preempted) * 1e-9);
  EXPECT_LE(spinner_waiting, 20'000'000u) << "the spinning thread waited";
}

TEST(OffCpuRecordTest, BlockedTimePerFunctionUnderItsCallers) {
  SKIP_WITHOUT_TP_BTF();
  CheckBlockedTimePerFunction(OffCpuAttach::kTpBtf);
}

// The raw tracepoint, where the kernel's BTF does not describe sched_switch: the same figures.
TEST(OffCpuRecordTest, BlockedTimePerFunctionRawTracepoint) {
  CheckBlockedTimePerFunction(OffCpuAttach::kRawTp);
}

// The kernel refuses the tp_btf program (here its attach, through the test hook
// STACKSYM_TEST_REFUSE_TP_BTF): the recorder says so and records with the raw tracepoint.
TEST(OffCpuRecordTest, RefusedTpBtfFallsBackToTheRawTracepoint) {
  SKIP_WITHOUT_TP_BTF();
  setenv("STACKSYM_TEST_REFUSE_TP_BTF", "1", 1);
  auto created = Recorder::Create(OffCpu({kApp, "1", "pingpong"}));
  unsetenv("STACKSYM_TEST_REFUSE_TP_BTF");
  if (!created && Refused(created.error())) GTEST_SKIP() << created.error().ToString();
  ASSERT_TRUE(created) << created.error().ToString();
  Recorder& rec = **created;
  ASSERT_TRUE(rec.Run().ok());
  ExpectAccounted(rec, OffCpuAttach::kRawTp);
  EXPECT_GT(rec.stats().off_cpu.recorded, 100u);
  bool said = false;
  for (const std::string& note : rec.notes())
    said |= note.find("tp_btf failed") != std::string::npos;
  EXPECT_TRUE(said) << "a note says tp_btf was refused";
}

uint64_t TotalOffCpu(const Profile& p) {
  uint64_t total = 0;
  for (uint64_t ns : p.off_cpu_ns) total += ns;
  return total;
}

// Threads bouncing a byte through pipes switch about 100k times a second: every interval is
// in the profile or in a counter, and the kernel adds them up by stack.
TEST(OffCpuRecordTest, PingPongEveryIntervalAccounted) {
  SKIP_WITHOUT_TP_BTF();
  CREATE_RECORDER_OR_SKIP(rec, OffCpu({kApp, "2", "pingpong"}));
  ASSERT_TRUE(rec->Run().ok());
  ExpectAccounted(*rec);
  const OffCpuCounts& c = rec->stats().off_cpu;
  ASSERT_GT(c.intervals, 20000u) << "too few switches to judge";
  EXPECT_EQ(c.filtered + c.sampled_out, 0u);
  EXPECT_EQ(TotalOffCpu(rec->profile()), c.recorded_ns);
  // Nearly all are added up in the kernel: only a process's first intervals, before its tables
  // are loaded, travel as stack copies.
  std::printf("summed in the kernel: %llu of %llu recorded; %llu could not be\n",
              static_cast<unsigned long long>(c.summed),
              static_cast<unsigned long long>(c.recorded),
              static_cast<unsigned long long>(c.unsummed));
  EXPECT_GE(c.summed * 10, c.recorded * 9);
  EXPECT_EQ(c.unsummed, 0u);
  // The command's first load may come while ld.so still maps its libraries: its walks then
  // meet libc as an unknown mapping and go as stack copies until the reload, which must come
  // soon (at 0.2 s, in about half the runs, 12 000 of 70 000 intervals were such copies).
  std::printf("walks that met an unknown mapping: %llu\n",
              static_cast<unsigned long long>(rec->stats().bpf_unknown_mapping));
  EXPECT_LE(rec->stats().bpf_unknown_mapping * 50, c.intervals);
  // Both threads, sleeping in a pipe read under the bouncing loop (main calls run_pingpong as
  // its tail call: its frame is gone).
  Symbolize(*rec);
  uint64_t main_read = 0, peer_read = 0;
  for (const OffCpuStack& s : OffCpuStacks(rec->profile())) {
    if (s.state != ThreadState::kSleeping) continue;
    if (HasChain(s.named.user, {"run_pingpong", "__libc_start_call_main"})) main_read += s.ns;
    if (HasChain(s.named.user, {"bounce_back", "start_thread"})) peer_read += s.ns;
  }
  if (main_read == 0 || peer_read == 0) {
    for (const OffCpuStack& s : OffCpuStacks(rec->profile())) {
      std::printf("  %s %s\n", ThreadStateName(s.state), Describe(s.named).c_str());
    }
  }
  EXPECT_GT(main_read, c.ns / 10);
  EXPECT_GT(peer_read, c.ns / 10);
}

// A process named by pid runs already: its unwind tables reach BPF before the first switch is
// recorded, so that none of its switches goes as a stack copy (at 100 000 switches a second,
// copies sent while the tables load after a first sample filled the ring buffer) and none is
// dropped.
TEST(OffCpuRecordTest, TargetsByPidHaveTheirTablesBeforeTheFirstSwitch) {
  SKIP_WITHOUT_TP_BTF();
  Fixture app(kApp, 2.0, "pingpong");
  RecordOptions o;
  o.backend = CaptureBackend::kBpf;
  o.off_cpu = true;
  o.pids = {app.pid()};
  o.duration_s = 1.0;
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  const RecordStats& st = rec->stats();
  if (st.call_graph != CallGraph::kBpf) GTEST_SKIP() << "no unwinding in BPF here";
  std::printf("%llu intervals recorded, %llu dropped; %llu stacks sent as copies\n",
              static_cast<unsigned long long>(st.off_cpu.recorded),
              static_cast<unsigned long long>(st.off_cpu.dropped),
              static_cast<unsigned long long>(st.bpf_fallback_copies));
  EXPECT_GT(st.off_cpu.recorded, 20000u);
  EXPECT_EQ(st.off_cpu.dropped, 0u);
  EXPECT_EQ(st.bpf_fallback_copies, 0u);
  EXPECT_EQ(st.lost, 0u);
}

// The off-CPU time of the twins fixture under from_left and under from_right.
struct TwinWaits {
  uint64_t left = 0, right = 0;
};
TwinWaits TwinSplit(Recorder& rec) {
  Symbolize(rec);
  TwinWaits w;
  for (const OffCpuStack& s : OffCpuStacks(rec.profile())) {
    if (HasChain(s.named.user, {"wait_twin", "from_left", "call_twice", "twins_loop"}))
      w.left += s.ns;
    if (HasChain(s.named.user, {"wait_twin", "from_right", "call_twice", "twins_loop"}))
      w.right += s.ns;
  }
  std::printf(
      "waits under from_left %.1f ms, under from_right %.1f ms; %llu user stacks "
      "replayed from the thread's last walk of %llu unwound in BPF\n",
      static_cast<double>(w.left) * 1e-6, static_cast<double>(w.right) * 1e-6,
      static_cast<unsigned long long>(rec.stats().bpf_stack_memo_hits),
      static_cast<unsigned long long>(rec.stats().bpf_unwound));
  return w;
}

// A thread that blocks again where it blocked before has its user stack replayed from its last
// walk (stacksym_stack_memo), once the words that walk read are read again. The twins wait from
// the same registers, half of the time after a wait from the other caller, alike but for the
// return address on the stack: each caller keeps its own time (a memo trusting the registers
// alone would give such waits to the other caller), and the other half are replayed. Near: the
// words the walk read are read again in one read; wide (under an 8 KiB frame): one by one.
class OffCpuTwinsTest : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(Twins, OffCpuTwinsTest, ::testing::Values("near", "wide"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

TEST_P(OffCpuTwinsTest, EachCallerKeepsItsWaits) {
  SKIP_WITHOUT_TP_BTF();
  CREATE_RECORDER_OR_SKIP(rec, OffCpu({kApp, "1", "twins", GetParam()}));
  ASSERT_TRUE(rec->Run().ok());
  ExpectAccounted(*rec);
  TwinWaits w = TwinSplit(*rec);
  uint64_t both = w.left + w.right;
  ASSERT_GT(both, 300'000'000u) << "too little waiting recorded to judge";
  EXPECT_GE(w.left * 10, both * 4);
  EXPECT_GE(w.right * 10, both * 4);
  EXPECT_GT(rec->stats().bpf_stack_memo_hits, 1000u);
}

// Verify mode sends every off-CPU stack as a stack copy as well, unwound in user space: the
// replayed stacks agree with their copies as the walked ones do.
TEST_P(OffCpuTwinsTest, ReplayedStacksAgreeWithStackCopies) {
  SKIP_WITHOUT_TP_BTF();
  RecordOptions o = OffCpu({kApp, "1", "twins", GetParam()});
  o.call_graph = CallGraph::kBpf;
  o.bpf_unwind_verify = true;
  o.stack_copy_bytes = 16384;  // past the wide frame
  o.ringbuf_size = 64u << 20;
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  const RecordStats& st = rec->stats();
  std::printf("%llu of %llu chains agree (%llu read too late to compare)\n",
              static_cast<unsigned long long>(st.verify_agreed),
              static_cast<unsigned long long>(st.verify_samples),
              static_cast<unsigned long long>(st.verify_no_reference));
  for (const std::string& d : st.verify_differences) std::printf("  differs: %s\n", d.c_str());
  EXPECT_EQ(st.lost, 0u);
  EXPECT_GT(st.bpf_stack_memo_hits, 1000u);
  EXPECT_GE(st.verify_samples, st.bpf_stack_memo_hits);
  EXPECT_GE(st.verify_agreed * 1000, st.verify_samples * 999);
  TwinWaits w = TwinSplit(*rec);
  ASSERT_GT(w.left + w.right, 300'000'000u) << "too little waiting recorded to judge";
  EXPECT_GE(w.left * 10, (w.left + w.right) * 4);
  EXPECT_GE(w.right * 10, (w.left + w.right) * 4);
}

// --off-cpu-sample P keeps each interval with probability P and counts it 1/P times. Of
// intervals of lengths x, the estimate's relative spread is sqrt((1 - P) / P * sum(x^2)) /
// sum(x): the test needs many intervals, none of which weighs much, and no bias. The ping-pong
// (120 000 intervals in 2 s: a spread of 0.3 % if they were alike) ran +0.5 to +1.4 % idle,
// as its partner waits out a kept interval's stacks, and once -6 % on a machine busy with other
// tests, where its lengths follow the load. Here four threads sleep 100 us at a time at
// real-time priority (about 67 000 waits in 2 s, alike even on a busy machine), woken by a
// timer that a kept interval's stacks do not delay; the program measures its waits to give
// the spread, which must leave 5 % at least four spreads. The reference is the recorder's count
// of every interval, sampled out or not, timed the same way in the same run.
TEST(OffCpuRecordTest, SampledTotalsScale) {
  SKIP_WITHOUT_TP_BTF();
  const std::string out = ::testing::TempDir() + "off_cpu_sleeps.txt";
  RecordOptions o = OffCpu({kApp, "2", "sleeps", out});
  o.off_cpu_sample = 0.25;
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  ExpectAccounted(*rec);
  std::map<std::string, uint64_t> own = ReadFigures(out);
  std::filesystem::remove(out);
  ASSERT_EQ(own.size(), 3u) << "the fixture did not write its figures";
  const OffCpuCounts& c = rec->stats().off_cpu;
  const double p = o.off_cpu_sample;
  double own_ns = static_cast<double>(own["wait_ns"]);
  double spread =
      std::sqrt((1 - p) / p * static_cast<double>(own["wait_squares_us2"]) * 1e6) / own_ns;
  std::printf("the program waited %llu times, %.4f s; the recorder counted %llu intervals\n",
              static_cast<unsigned long long>(own["waits"]), own_ns * 1e-9,
              static_cast<unsigned long long>(c.intervals));
  ASSERT_LE(4 * spread, 0.05) << "too few or too uneven waits to judge 5 %: spread " << spread;
  double kept = static_cast<double>(c.intervals - c.sampled_out) / static_cast<double>(c.intervals);
  // Intervals lost in a full ring (a loaded machine's reader falls behind) were kept by the
  // sampling: each stood for 1/P of its time, which the estimate cannot hold.
  if (c.dropped * 4 > c.intervals) {
    GTEST_SKIP() << "the ring buffer dropped " << c.dropped << " of " << c.intervals
                 << " intervals (the machine is too loaded to judge the scaling)";
  }
  double exact = static_cast<double>(c.ns - c.filtered_ns) - static_cast<double>(c.dropped_ns) / p;
  double estimate = static_cast<double>(TotalOffCpu(rec->profile()));
  std::printf(
      "kept %.4f of the intervals; off CPU %.4f s, estimated %.4f s (%+.2f %%, spread %.2f "
      "%%)\n",
      kept, exact * 1e-9, estimate * 1e-9, (estimate / exact - 1) * 100, spread * 100);
  // Each stack's time is its kept time times 1/P (rounded once per sum).
  EXPECT_NEAR(estimate, static_cast<double>(c.recorded_ns) / p,
              static_cast<double>(rec->profile().stacks.size() + c.recorded));
  EXPECT_NEAR(kept, p, 0.02);
  EXPECT_NEAR(estimate, exact, 0.05 * exact);
}

// When the ring buffer is full, intervals are lost, and every one is counted: stack copies
// (--call-graph dwarf: 16 KiB sent at each switch-out, never summed) of the ping-pong into a
// 64 KiB ring. The profile holds exactly the intervals counted as recorded, none of whose
// opening or closing record was lost.
TEST(OffCpuRecordTest, RingFullLossesCounted) {
  SKIP_WITHOUT_TP_BTF();
  RecordOptions o = OffCpu({kApp, "1", "pingpong"});
  o.call_graph = CallGraph::kDwarf;
  o.ringbuf_size = 64 * 1024;
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  ExpectAccounted(*rec);
  const OffCpuCounts& c = rec->stats().off_cpu;
  ASSERT_GT(c.intervals, 10000u) << "too few switches to judge";
  EXPECT_GT(c.dropped, 0u) << "a 64 KiB ring kept up with 16 KiB records: nothing was judged";
  EXPECT_GT(c.recorded, 0u);
  EXPECT_EQ(c.summed, 0u) << "stack copies are never summed";
  EXPECT_EQ(TotalOffCpu(rec->profile()), c.recorded_ns);
}

// --off-cpu-min-us: shorter intervals are counted, not stacked.
TEST(OffCpuRecordTest, ShortIntervalsCountedNotStacked) {
  SKIP_WITHOUT_TP_BTF();
  RecordOptions o = OffCpu({kApp, "1", "pingpong"});
  o.off_cpu_min_ns = 1'000'000;
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  ExpectAccounted(*rec);
  const OffCpuCounts& c = rec->stats().off_cpu;
  EXPECT_GT(c.filtered, c.intervals / 2);
  EXPECT_GE(c.recorded_ns, c.recorded * o.off_cpu_min_ns);  // each one at least 1 ms
  EXPECT_EQ(TotalOffCpu(rec->profile()), c.recorded_ns);
}

// The command's output and exit status (stderr with it).
struct Cli {
  int status;
  std::string out;
};
Cli Stacksym(const std::string& args) {
  std::string cmd = std::string(STACKSYM_BINARY_DIR) + "/stacksym " + args + " 2>&1";
  Cli r{-1, ""};
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.out.append(buf, n);
  r.status = pclose(pipe);
  return r;
}

// The sum of a folded text's values, and its lines that end in an off-CPU state frame.
struct FoldedSum {
  uint64_t total = 0;
  size_t lines = 0, state_lines = 0;
};
FoldedSum SumFolded(const std::string& text, const std::string& state_frame = "[off-cpu: ") {
  FoldedSum f;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    f.total += std::stoull(line.substr(space + 1));
    ++f.lines;
    if (line.rfind(state_frame, space) != std::string::npos) ++f.state_lines;
  }
  return f;
}

// Through the command line: `record --off-cpu` writes a pprof file with the three sample
// types; convert gives each type (and wall by default), the state filter, pprof again, and
// report reads it. A folded recording defaults to wall time, in nanoseconds.
TEST(OffCpuRecordTest, CliPprofRoundTripsEveryType) {
  SKIP_WITHOUT_TP_BTF();
  {
    CREATE_RECORDER_OR_SKIP(probe, OffCpu({"true"}));  // said here, not as a failed command
  }
  namespace fs = std::filesystem;
  const std::string dir =
      std::string(STACKSYM_BINARY_DIR) + "/off_cpu_cli_" + std::to_string(getpid());
  fs::create_directories(dir);
  const std::string pb = dir + "/rec.pb.gz";
  Cli rec = Stacksym("record -q --off-cpu -F 199 -o " + pb + " -- " + kApp + " 1 blocking " + dir +
                     "/own.txt");
  ASSERT_EQ(rec.status, 0) << rec.out;
  Result<Profile> p = ReadProfile(pb);
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_TRUE(p->off_cpu_recorded);
  ASSERT_GT(p->Total(SampleType::kSamples), 50u) << "the spinner's CPU samples";
  ASSERT_GT(p->Total(SampleType::kOffCpu), 1'000'000'000u) << "five threads waiting for 1 s";

  if (std::system("command -v protoc >/dev/null 2>&1") == 0) {
    std::string decoded = dir + "/decoded.txt";
    ASSERT_EQ(
        std::system(("gunzip -c " + pb +
                     " | protoc --decode perftools.profiles.Profile --proto_path=" +
                     std::string(STACKSYM_SOURCE_DIR) + "/src/output profile.proto > " + decoded)
                        .c_str()),
        0);
    std::ifstream in(decoded);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t types = 0;
    for (size_t pos = 0; (pos = text.find("sample_type {", pos)) != std::string::npos; ++pos) {
      ++types;
    }
    EXPECT_EQ(types, 3u);
    for (const char* name :
         {"samples", "count", "cpu", "nanoseconds", "off_cpu", "thread_state", "sleeping"}) {
      EXPECT_NE(text.find("string_table: \"" + std::string(name) + "\""), std::string::npos)
          << name;
    }
  } else {
    std::printf("protoc not installed: the sample types are checked through the reader only\n");
  }

  // Each type's folded total is the profile's; wall is the default.
  for (SampleType type :
       {SampleType::kSamples, SampleType::kCpu, SampleType::kOffCpu, SampleType::kWall}) {
    Cli folded = Stacksym("convert " + pb + " --to folded --sample-type " +
                          std::string(SampleTypeName(type)));
    ASSERT_EQ(folded.status, 0) << folded.out;
    EXPECT_EQ(SumFolded(folded.out).total, p->Total(type)) << SampleTypeName(type);
  }
  Cli wall = Stacksym("convert " + pb + " --to folded");
  EXPECT_EQ(SumFolded(wall.out).total, p->Total(SampleType::kWall));
  EXPECT_EQ(p->Total(SampleType::kWall),
            p->Total(SampleType::kCpu) + p->Total(SampleType::kOffCpu));

  // The state filter: only the sleeping intervals, every line ending in that state.
  uint64_t sleeping = 0;
  for (size_t i = 0; i < p->stacks.size(); ++i) {
    if (p->stacks[i].state == ThreadState::kSleeping) sleeping += p->Value(i, SampleType::kOffCpu);
  }
  ASSERT_GT(sleeping, 0u);
  Cli asleep =
      Stacksym("convert " + pb + " --to folded --sample-type off_cpu --off-cpu-state sleeping");
  FoldedSum s = SumFolded(asleep.out, "[off-cpu: sleeping]");
  EXPECT_EQ(s.total, sleeping);
  EXPECT_EQ(s.state_lines, s.lines) << asleep.out;

  // pprof to pprof keeps every type.
  const std::string again = dir + "/again.pb.gz";
  ASSERT_EQ(Stacksym("convert " + pb + " --to pprof -o " + again).status, 0);
  Result<Profile> q = ReadProfile(again);
  ASSERT_TRUE(q);
  for (SampleType type : {SampleType::kSamples, SampleType::kCpu, SampleType::kOffCpu}) {
    EXPECT_EQ(q->Total(type), p->Total(type)) << SampleTypeName(type);
  }

  // report: the off-CPU column, the waiting functions by off-CPU time.
  Cli report = Stacksym("report -n 0 --sample-type off_cpu " + pb);
  ASSERT_EQ(report.status, 0) << report.out;
  EXPECT_NE(report.out.find("Off-CPU"), std::string::npos) << report.out;
  for (const char* fn : {"sleep_here", "read_here", "lock_here"}) {
    EXPECT_NE(report.out.find(fn), std::string::npos) << fn << "\n" << report.out;
  }

  // Recording straight to folded: wall time in nanoseconds, off-CPU stacks ending in a state.
  const std::string folded = dir + "/rec.folded";
  rec = Stacksym("record -q --off-cpu -o " + folded + " -- " + kApp + " 0.3 blocking");
  ASSERT_EQ(rec.status, 0) << rec.out;
  std::ifstream in(folded);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  FoldedSum w = SumFolded(text);
  EXPECT_GT(w.total, 1'000'000'000u) << "five threads waiting 0.3 s each, in nanoseconds";
  EXPECT_GT(w.state_lines, 0u);
  EXPECT_LT(w.state_lines, w.lines) << "the spinner's CPU stacks are there too";
  // The off-CPU choices are accepted before recording (they are refused without --off-cpu).
  Cli chosen = Stacksym("record -q --off-cpu --sample-type off_cpu --off-cpu-state sleeping -o " +
                        dir + "/true.folded -- true");
  EXPECT_EQ(chosen.status, 0) << chosen.out;
  EXPECT_NE(Stacksym("record -q --sample-type off_cpu -o " + dir + "/true.folded -- true").status,
            0);
  // The summary says how sched_switch was attached: tp_btf, or the raw tracepoint when forced.
  Cli said = Stacksym("record --off-cpu -o " + dir + "/true.folded -- true");
  EXPECT_NE(said.out.find("off-CPU (sched_switch as tp_btf)"), std::string::npos) << said.out;
  said = Stacksym("record --off-cpu --off-cpu-raw-tp -o " + dir + "/true.folded -- true");
  EXPECT_NE(said.out.find("off-CPU (sched_switch as raw_tp)"), std::string::npos) << said.out;
  fs::remove_all(dir);
}

TEST(OffCpuRecordTest, PerfBackendRefusesOffCpu) {
  RecordOptions o = OffCpu({"true"});
  o.backend = CaptureBackend::kPerf;
  auto rec = Recorder::Create(o);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(rec.error().message.find("--off-cpu needs the BPF backend"), std::string::npos)
      << rec.error().message;
  o.backend = CaptureBackend::kAuto;
  o.off_cpu_sample = 0;
  rec = Recorder::Create(o);
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.error().message.find("--off-cpu-sample"), std::string::npos);
}

}  // namespace
}  // namespace stacksym
