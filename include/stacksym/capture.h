// stacksym/capture.h — sample stacks of running processes into a Profile.
//
// A Recorder attaches a sampling event (cpu-clock at `frequency_hz`, or hardware cycles) on
// every online CPU and collects, per sample, the kernel and user stack of the interrupted
// thread. The default backend is a BPF program that copies each stack into a ring buffer
// (no stack-map hash buckets, so distinct stacks never collide); user space normalizes user
// addresses to (module, file offset) while the process is alive and aggregates identical
// stacks per (pid, tid, comm). Without BPF it falls back to perf_event_open's own ring.
//
//   RecordOptions opts;
//   opts.pids = {1234};
//   opts.duration_s = 3;
//   auto rec = Recorder::Create(opts);          // validates targets, loads, attaches
//   if (!rec) return rec.error();
//   if (auto r = (*rec)->Run(); !r) return r.error();  // until duration, Stop() or exit
//   Profile& profile = (*rec)->profile();
//   SymbolizeProfile(profile);   // profile.files: the ELF files kept while the processes lived
//
// Thread-safety: one thread drives a Recorder; RequestStop() may be called from any thread
// or a signal handler.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/profile.h"
#include "stacksym/result.h"
#include "stacksym/stack_unwind.h"

namespace stacksym {

enum class CaptureBackend : uint8_t {
  kAuto,      // BPF ring buffer; perf_event_open when the BPF program cannot load
  kBpf,       // BPF ring buffer only
  kPerf,      // perf_event_open + its mmap ring (PERF_SAMPLE_CALLCHAIN)
  kStackMap,  // diagnostic: bpf_get_stackid into a STACK_TRACE map (collisions counted)
};
const char* CaptureBackendName(CaptureBackend backend);  // "auto", "bpf", "perf", "stackmap"
std::optional<CaptureBackend> ParseCaptureBackend(std::string_view name);

enum class CaptureEvent : uint8_t {
  kCpuClock,  // software timer: works everywhere
  kCycles,    // hardware CPU cycles (needs a PMU; falls back to cpu-clock with a note)
};
const char* CaptureEventName(CaptureEvent event);  // "cpu-clock", "cycles"
std::optional<CaptureEvent> ParseCaptureEvent(std::string_view name);

// How user stacks are obtained (perf's --call-graph).
enum class CallGraph : uint8_t {
  kFramePointers,  // the kernel walks frame pointers: cheap, wrong on code without them
  kDwarf,          // copy registers + the top of the user stack, unwind here with .eh_frame
  kBpf,            // unwind in the BPF program from .eh_frame tables loaded into maps (stack copies
                   // until a process's tables are loaded)
  kAuto,           // the default: kBpf on the BPF backend, kDwarf on perf's, kFramePointers on
                   // the stackmap backend's
};
const char* CallGraphName(CallGraph mode);  // "fp", "dwarf", "bpf", "auto"
inline constexpr uint32_t kDefaultStackCopyBytes = 16384;
inline constexpr uint32_t kMaxStackCopyBytes = 65528;  // a perf sample's size is 16 bits
struct CallGraphSpec {
  CallGraph mode = CallGraph::kDwarf;
  uint32_t stack_copy_bytes = kDefaultStackCopyBytes;
};
// "fp", "bpf", "dwarf" or "dwarf,SIZE" (SIZE in bytes, a multiple of 8 up to 65528; K suffix ok).
Result<CallGraphSpec> ParseCallGraph(std::string_view text);

struct RecordOptions {
  CaptureBackend backend = CaptureBackend::kAuto;
  CaptureEvent event = CaptureEvent::kCpuClock;
  uint32_t frequency_hz = 99;  // samples per second per CPU; 1..100000

  // Targets. With none given every process is sampled (like -a). pids are thread groups;
  // tids single threads; a sample matches when it matches any pid or tid. cgroup_path (a
  // cgroup v2 directory) further restricts to tasks in exactly that cgroup.
  std::vector<pid_t> pids;
  std::vector<pid_t> tids;
  std::string cgroup_path;
  // Start this command (argv) stopped before exec, sample it and its descendants, stop when
  // it exits.
  std::vector<std::string> command;
  bool include_idle = false;  // also sample the idle task (pid 0)

  double duration_s = 0;  // 0: until RequestStop() or the command exits
  // Continuous recording (`stacksym agent`): > 0 cuts the recording into windows of this many
  // seconds, each handed to Run's WindowCallback as its own Profile while sampling goes on.
  // Windows tile time (each starts where the last ended) and every sample is in exactly one,
  // by the time it was taken; each sample keeps its own time (Profile::keep_times).
  double window_s = 0;

  bool kernel_stacks = true;
  bool user_stacks = true;
  // BPF backend: ask the kernel for user frames as (build ID, file offset)
  // (BPF_F_USER_BUILD_ID); frames where it falls back to a raw IP are normalized here.
  bool kernel_build_ids = false;
  // How user stacks are completed: unwound in the BPF program (the default where BPF runs), from
  // stack copies and CFI, or by frame pointers.
  CallGraph call_graph = CallGraph::kAuto;
  uint32_t stack_copy_bytes = kDefaultStackCopyBytes;  // kDwarf: bytes copied per sample
  // kBpf: rows of unwind tables the BPF maps hold (16 bytes each), and a test mode in which
  // every BPF-unwound sample also carries a stack copy that is unwound here and compared.
  // 1 Mi rows = 16 MiB of kernel memory, the tables of about ten python3-sized processes; past
  // it, tables no loaded process uses are evicted first, then least recently sampled processes.
  uint32_t bpf_unwind_rows = 1u << 20;
  bool bpf_unwind_verify = false;
  // kDwarf and kBpf: where unwind tables are persisted between recordings (the symbol cache
  // directory; see UnwindTableCacheOptions::dir), and its size bound. Empty: built each time.
  std::string unwind_cache_dir;
  uint64_t unwind_cache_max_bytes = uint64_t{1} << 30;
  // Tables kept in memory (UnwindTableCacheOptions::max_bytes), least recently used dropped
  // past it: they are read again from unwind_cache_dir (or built) when a process needs them.
  uint64_t unwind_tables_memory_bytes = uint64_t{256} << 20;

  // Bytes, rounded up to a power of two of pages (perf backend: shared among the CPUs).
  // 0: room for a second of the largest samples the call graph sends (dwarf copies the stack
  // into every sample, bpf into a process's first ones) at frequency_hz on every online CPU,
  // a power of two from 1 to 32 MiB (at 99 Hz on 2 CPUs: 4 MiB with bpf and dwarf, 1 MiB
  // with fp). Its pages are allocated and mapped at start: 32 MiB cost about 10 ms of CPU.
  uint64_t ringbuf_size = 0;
  uint32_t stackmap_size = 16384;  // entries of the stackmap backend's STACK_TRACE map
  // BPF backend: the Python frames of processes running a CPython interpreter (3.11-3.14), named
  // from their code objects and placed where the interpreter's evaluator frames stand
  // (FrameKind::kPython). Off: --no-python.
  bool python = true;

  // Also record where the targets wait: every interval a target task spends off CPU (blocked
  // or preempted) ends in the profile with its stacks, its state and its length
  // (Profile::AddOffCpu), or in a counter (OffCpuCounts). BPF backend only.
  bool off_cpu = false;
  uint64_t off_cpu_min_ns = 0;  // shorter intervals are counted, not stacked
  // Each interval (at least off_cpu_min_ns long) is kept with this probability, 0 < p <= 1;
  // kept intervals count 1/p times their length, so that totals stay right on average.
  double off_cpu_sample = 1.0;
  // How sched_switch is attached: as tp_btf where the kernel's BTF describes it, else as a raw
  // tracepoint (OffCpuAttach). True: the raw tracepoint anyway (tests of the fallback).
  bool off_cpu_force_raw_tp = false;
};

// --off-cpu: the program on sched_switch, as a BTF-typed tracepoint or a raw one.
enum class OffCpuAttach { kNone, kTpBtf, kRawTp };
const char* OffCpuAttachName(OffCpuAttach attach);  // "none", "tp_btf", "raw_tp"

// --off-cpu: the intervals target tasks spent off CPU that ended while recording (closed when
// the task ran again), and their nanoseconds, by fate. Every one is in exactly one of
// filtered, sampled out, recorded and dropped.
struct OffCpuCounts {
  uint64_t intervals = 0, ns = 0;
  uint64_t filtered = 0, filtered_ns = 0;        // shorter than off_cpu_min_ns: counted only
  uint64_t sampled_out = 0, sampled_out_ns = 0;  // not kept (off_cpu_sample)
  uint64_t recorded = 0, recorded_ns = 0;        // sent with their stacks
  uint64_t dropped = 0, dropped_ns = 0;          // lost on the way (ring buffer full)
  uint64_t untracked = 0;  // switch-outs that found no room to note their start: no interval
  // Of the recorded: intervals added up in the kernel by stack (not sent one by one), and
  // those that could have been but were sent one by one (no room, or a fingerprint collision).
  uint64_t summed = 0, summed_ns = 0;
  uint64_t unsummed = 0;
};

// Where Recorder::Create's CPU time went (user + system, seconds). The backend's steps are
// zero where it has none (the perf backend opens and maps per CPU, under attach and ring).
struct RecordStartup {
  double total_s = 0;           // all of Recorder::Create: checks, the command's fork, the backend
  double open_s = 0;            // BPF object opened (its ELF and BTF parsed)
  double load_s = 0;            // maps created, kernel types read, programs verified and loaded
  double attach_s = 0;          // targets written, tracepoints, one perf event and link per CPU
  double ring_s = 0;            // the ring buffer's reader created (its pages mapped)
  uint64_t verified_insns = 0;  // instructions the kernel's verifier processed
  uint64_t kernel_types_bytes = 0;  // BTF read for CO-RE: the build's cut, or the kernel's
  uint64_t ring_bytes = 0;
  uint32_t cpus = 0;  // CPUs with a perf event
  OffCpuAttach off_cpu_attach = OffCpuAttach::kNone;
};

// Everything the recorder counted. Nothing is dropped silently: every sample taken is either
// in the profile or in one of the lost counters.
struct RecordStats {
  CaptureBackend backend = CaptureBackend::kAuto;  // the backend that ran
  CaptureEvent event = CaptureEvent::kCpuClock;    // the event that ran
  uint64_t samples = 0;                            // samples taken for targets (kernel side)
  uint64_t lost = 0;                   // samples dropped before user space saw them (ring full)
  std::vector<uint64_t> lost_per_cpu;  // BPF backend: ring reservation failures per CPU
  uint64_t aggregated = 0;             // samples added to the profile
  uint64_t distinct_stacks = 0;
  uint64_t user_stacks_empty = 0;      // user thread sampled, but no user frame obtained
  uint64_t user_stacks_truncated = 0;  // user stack hit the depth limit (127 frames)
  uint64_t kernel_stack_errors = 0;
  uint64_t user_stack_errors = 0;
  uint64_t build_id_frames = 0;        // --kernel-build-ids: frames the kernel normalized
  uint64_t build_id_fallbacks = 0;     // --kernel-build-ids: frames left as raw IPs by it
  uint64_t frames_not_normalized = 0;  // user frames kept as raw addresses (process gone...)
  uint64_t stackmap_collisions = 0;    // stackmap backend: stacks dropped (-EEXIST)
  uint64_t stackmap_errors = 0;
  uint64_t stackmap_counts_full = 0;         // stackmap backend: samples with no room to count
  CallGraph call_graph = CallGraph::kDwarf;  // the mode that ran (never kAuto)
  // --call-graph dwarf: user stacks unwound from stack copies, how each walk ended, and how
  // many were answered by an earlier walk over the same registers and stack words.
  uint64_t user_stacks_unwound = 0;
  // Samples of user tasks for which the kernel had no user registers to copy a stack from
  // (sampled in kernel entry code, or while exiting): kernel frames only.
  uint64_t user_context_missing = 0;
  uint64_t unwind_cache_hits = 0;
  uint64_t unwind_ends[kUnwindEndCount] = {};  // indexed by UnwindEnd
  uint64_t unwind_fp_frames = 0;               // frames found by the frame-pointer fallback
  uint64_t unwind_tables_loaded = 0;  // unwind tables read from RecordOptions::unwind_cache_dir
  uint64_t unwind_tables_stored = 0;  // built from CFI and written there
  uint64_t stack_copy_bytes = 0;      // user stack bytes the kernel side copied
  uint64_t stack_copy_cut = 0;        // copies cut at an unreadable page
  // --call-graph bpf: samples unwound in the program and the frames they gave; samples sent
  // as stack copies because their process's tables were not loaded (yet, or not at all);
  // what was loaded into the maps and what could not be.
  uint64_t ringbuf_bytes = 0;  // BPF backend: bytes of samples sent through the ring buffer
  uint64_t bpf_unwound = 0;
  uint64_t bpf_unwind_frames = 0;
  uint64_t bpf_fallback_copies = 0;
  uint64_t bpf_unknown_mapping = 0;  // walks that met code mapped after the tables were loaded
  uint64_t bpf_walk_memo_hits = 0;   // frames whose unwind row the walk remembered (walk_memo)
  uint64_t bpf_stack_memo_hits = 0;  // off-CPU user stacks replayed from the task's last walk
  uint64_t bpf_unwind_ends[kUnwindEndCount] = {};  // why each walk in the program ended
  uint64_t bpf_processes_loaded = 0;
  uint64_t bpf_processes_not_loaded = 0;  // no room (rows, mappings, processes) or unreadable
  uint64_t bpf_processes_evicted = 0;     // unloaded to make room (their samples load them again)
  uint64_t bpf_tables_loaded = 0;         // tables written into the rows map (again after eviction)
  uint64_t bpf_tables_evicted = 0;        // tables whose rows were given to another table
  uint64_t bpf_rows_loaded = 0;           // rows written, in all
  uint64_t bpf_rows_in_use = 0;           // rows holding a table at the end
  uint64_t bpf_rows_map_bytes = 0;        // kernel memory of the rows map: its segments created
  std::string bpf_first_load_problem;
  // bpf_unwind_verify: samples compared, samples whose chains agreed, and the differences.
  uint64_t verify_samples = 0;
  uint64_t verify_agreed = 0;
  // Samples with no full reference: unwinding the copy could not place the sampled pc, or a
  // return address the BPF walk went on from after the same frames (a reader that fell behind
  // the process's exit or exec). Not compared.
  uint64_t verify_no_reference = 0;
  std::vector<std::string> verify_differences;  // the first 1000
  OffCpuCounts off_cpu;                         // --off-cpu, as the kernel side counted them
  uint64_t off_cpu_aggregated = 0;              // --off-cpu: intervals added to the profile
  uint64_t off_cpu_aggregated_ns = 0;           // ... and their nanoseconds (before scaling by 1/p)
  // Windows (RecordOptions::window_s): closed so far, and samples read after their window had
  // closed (kept in the next one, at its start).
  uint64_t windows = 0;
  uint64_t late_samples = 0;
  // Python (RecordOptions::python): processes found running CPython (and found but unusable:
  // python_first_problem says why), their samples and the Python frames those carried; samples
  // whose native stack holds the interpreter's evaluator and, of those, the ones whose every
  // evaluator frame became named Python frames; code objects read from the processes' memory;
  // every failure by reason (code objects that could not be read; walks cut at the depth limit,
  // by unreadable memory, or of threads without a thread state); calls whose frames had no
  // evaluator frame to stand in for (the native stack was cut), placed outermost.
  uint64_t python_processes = 0;
  uint64_t python_processes_unsupported = 0;
  uint64_t python_samples = 0;
  uint64_t python_frames = 0;
  uint64_t python_samples_in_interpreter = 0;
  uint64_t python_samples_named = 0;
  uint64_t python_frames_unnamed = 0;
  uint64_t python_calls_unplaced = 0;
  uint64_t python_code_objects_read = 0;
  uint64_t python_thread_searches = 0;  // thread-state lists walked in BPF
  std::vector<std::pair<std::string, uint64_t>> python_failures;  // reason → count (nonzero)
  std::string python_versions;  // "3.11.2 (dwarf)": each interpreter and its layout's source
  // Layouts from the built-in table or debug offsets, used until the interpreter's DWARF was
  // read (on a thread of its own), that the DWARF's disagreed with.
  uint64_t python_layouts_corrected = 0;
  std::string python_first_problem;
  double elapsed_s = 0;
  double recorder_cpu_s = 0;  // CPU time this process spent (user + system) while recording
  RecordStartup startup;
};

using RecordStatusCallback = std::function<void(const RecordStats&)>;

// A closed window (RecordOptions::window_s): its profile (start_time_ns and duration_ns are the
// window's; lost_samples those lost in it) and the recording's stats so far. Called on the
// recording thread: hand the profile over and return, since sampling waits meanwhile.
using WindowCallback = std::function<void(Profile&& window, const RecordStats& stats)>;

namespace capture {
class SampleSource;  // backend (src/capture); opaque here
class SampleAggregator;
class PythonProcesses;
}  // namespace capture
class UnwindTableCache;

class Recorder {
 public:
  // Checks the options (frequency range, pids and tids exist, cgroup exists, the command can
  // be found), starts the command stopped, loads and attaches the backend. Nothing stays
  // attached when it fails.
  static Result<std::unique_ptr<Recorder>> Create(const RecordOptions& options);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Releases the command (if any) and collects until duration_s passes, RequestStop() is
  // called or the command exits; then drains what is still buffered. `status` is called about
  // four times a second.
  // With RecordOptions::window_s, each window is handed to `window` as it closes, the last one
  // when the recording stops, and profile() is left empty.
  Result<void> Run(const RecordStatusCallback& status = {}, const WindowCallback& window = {});
  void RequestStop() { stop_requested_.store(true, std::memory_order_relaxed); }

  const RecordStats& stats() const { return stats_; }
  Profile& profile();
  // Human-readable remarks: fallbacks taken and why.
  const std::vector<std::string>& notes() const { return notes_; }
  // The command's pid and, after Run, its wait status.
  pid_t command_pid() const { return command_pid_; }
  std::optional<int> command_status() const { return command_status_; }

 private:
  Recorder() = default;
  void RefreshStats();
  struct Windows;
  void CloseWindow(Windows& windows, const WindowCallback& callback);

  RecordOptions options_;
  std::unique_ptr<capture::SampleSource> source_;
  std::unique_ptr<capture::SampleAggregator> aggregator_;
  std::shared_ptr<UnwindTableCache> unwind_tables_;
  std::shared_ptr<capture::PythonProcesses> python_;
  RecordStats stats_;
  std::vector<std::string> notes_;
  std::atomic<bool> stop_requested_{false};
  pid_t command_pid_ = 0;
  int command_release_fd_ = -1;
  std::optional<int> command_status_;
};

}  // namespace stacksym
