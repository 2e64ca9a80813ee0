// Internal interface between the Recorder and its backends (BPF ring buffer, BPF stack map,
// perf_event_open ring). A backend delivers RawSamples; views in a RawSample are valid only
// during the callback.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "stacksym/capture.h"
#include "stacksym/result.h"

namespace stacksym {
class UnwindTableCache;
}  // namespace stacksym

namespace stacksym::capture {
class PythonProcesses;

// Same layout as struct stacksym_build_id_frame / the kernel's struct bpf_stack_build_id.
struct BuildIdFrame {
  int32_t status;  // 0 empty, 1 valid, 2 fallback to IP
  uint8_t build_id[20];
  uint64_t offset_or_ip;
};
static_assert(sizeof(BuildIdFrame) == 32);

inline constexpr int32_t kBuildIdFrameValid = 1;
inline constexpr int32_t kBuildIdFrameIp = 2;
inline constexpr size_t kMaxStackFrames = 127;

// --call-graph dwarf: the user registers at the sample and a copy of the user stack.
struct RawUserStack {
  uint64_t ip = 0, sp = 0, bp = 0;
  std::span<const uint8_t> bytes;  // from sp upward
  bool cut_at_unreadable_page = false;
};

// A Python frame as the BPF program sends it (struct stacksym_py_frame): the code object, the
// code unit it stands at (-1: not started) and flags (kRawPythonEntry: the outermost frame of
// its evaluator call; the frame's owner in bits 8-15; with kRawPythonChecked, the code
// object's fingerprint at sample time in bits 16-31: CheckOf).
struct RawPythonFrame {
  uint64_t code;
  int32_t instruction;
  uint32_t flags;
};
static_assert(sizeof(RawPythonFrame) == 16);
inline constexpr uint32_t kRawPythonEntry = 1;
inline constexpr uint32_t kRawPythonChecked = 2;
inline std::optional<uint16_t> CheckOf(const RawPythonFrame& f) {
  if (!(f.flags & kRawPythonChecked)) return std::nullopt;
  return static_cast<uint16_t>(f.flags >> 16);
}

enum class OffCpuPart : uint8_t {
  kNone,      // a CPU sample
  kInterval,  // an interval off CPU with its stacks and length
  kOpen,      // the stacks of an interval that began at time_ns (too large to wait in BPF)
  kClose,     // the end of the interval of tid that began at time_ns, and its length
  kDiscard,   // the same, not to be kept (too short): its stacks are dropped
};

struct RawSample {
  uint32_t pid = 0;  // thread group
  uint32_t tid = 0;
  uint32_t cpu = 0;
  uint64_t time_ns = 0;
  uint64_t count = 1;  // > 1 only for pre-aggregated backends (stackmap)
  // Not a sample: the process exec'd. Mappings remembered for pid must be checked again
  // before they answer for its next samples.
  bool exec = false;
  std::string_view comm;
  bool kernel_thread = false;       // no user stack expected
  bool user_stack_dropped = false;  // stackmap backend: the stack was lost to a collision
  // A stack copy was asked for, but the kernel had no user registers for this user task: the
  // sample hit kernel entry code before the registers were saved, or a task past exit_mm.
  bool user_context_missing = false;
  std::span<const uint64_t> kernel_ips;                // innermost first
  std::span<const uint64_t> user_ips;                  // innermost first (raw virtual addresses)
  std::span<const BuildIdFrame> user_build_id_frames;  // instead of user_ips (BPF build IDs)
  const RawUserStack* user_stack = nullptr;            // instead of user_ips (stack copies)
  bool bpf_unwound = false;                            // user_ips were unwound in the BPF program
  int bpf_unwind_end = -1;  // why the BPF walk ended (an UnwindEnd), -1 when none ran
  // Verify mode: the BPF-unwound IPs, while user_stack holds the copy of the same sample.
  bool verify = false;
  std::span<const uint64_t> verify_bpf_ips;
  // --off-cpu: not a CPU sample but an interval off CPU (its length, the state the task left
  // the CPU in), or its stacks sent when it began (time_ns: the start, which its close names).
  OffCpuPart off_cpu = OffCpuPart::kNone;
  uint64_t off_cpu_ns = 0;
  ThreadState state = ThreadState::kRunning;
  // A process the Python walk is registered for: its Python frames (innermost first) and why
  // their walk ended (STACKSYM_PY_END_*).
  bool python = false;
  std::span<const RawPythonFrame> python_frames;
  int python_end = -1;
};

using SampleCallback = std::function<void(const RawSample&)>;

struct SourceCounters {
  uint64_t samples = 0;
  uint64_t lost = 0;
  std::vector<uint64_t> lost_per_cpu;
  uint64_t kstack_errors = 0;
  uint64_t ustack_errors = 0;
  uint64_t stackmap_collisions = 0;
  uint64_t stackmap_errors = 0;
  uint64_t stackmap_counts_full = 0;
  uint64_t stack_copy_bytes = 0;  // user stack bytes copied (--call-graph dwarf)
  uint64_t stack_copy_cut = 0;    // copies cut short at an unreadable page
  uint64_t ringbuf_bytes = 0;     // BPF backend: bytes of samples sent through the ring buffer
  uint64_t bpf_unwound = 0;
  uint64_t bpf_unwind_frames = 0;
  uint64_t bpf_fallback_copies = 0;
  uint64_t bpf_unknown_mapping = 0;
  uint64_t bpf_walk_memo_hits = 0;   // frames whose unwind row the walk remembered
  uint64_t bpf_stack_memo_hits = 0;  // off-CPU user stacks replayed from the task's last walk
  uint64_t bpf_processes_loaded = 0;
  uint64_t bpf_processes_not_loaded = 0;
  uint64_t bpf_processes_evicted = 0;
  uint64_t bpf_tables_loaded = 0;
  uint64_t bpf_tables_evicted = 0;
  uint64_t bpf_rows_loaded = 0;
  uint64_t bpf_rows_in_use = 0;
  uint64_t bpf_rows_map_bytes = 0;  // the rows map's segments created, in bytes
  std::string bpf_first_load_problem;
  OffCpuCounts off_cpu;
  uint64_t py_samples = 0;  // samples of registered Python processes (kernel side)
  uint64_t py_frames = 0;
  uint64_t py_thread_searches = 0;
};

// What a backend needs to know, with targets already resolved and checked.
struct SourceConfig {
  RecordOptions options;
  std::vector<pid_t> tgids;  // thread groups to sample (includes the command's pid)
  std::vector<pid_t> tids;
  bool follow_forks = false;  // children of tgids become targets (command mode)
  pid_t command_pid = 0;      // command mode: the command, started paused before its exec
  bool filter_cgroup = false;
  uint64_t cgroup_id = 0;  // cgroup v2 id (inode of the directory)
  int cgroup_fd = -1;      // open cgroup directory (perf backend)
  CaptureEvent event = CaptureEvent::kCpuClock;
  // Unwind tables by build ID, shared by the BPF loader and the stack-copy unwinder.
  std::shared_ptr<UnwindTableCache> unwind_tables;
  // Processes running CPython (null with --no-python), shared with the aggregator.
  std::shared_ptr<PythonProcesses> python;
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual CaptureBackend backend() const = 0;
  virtual CaptureEvent event() const = 0;
  // Waits up to timeout_ms for data, delivers what is there.
  virtual Result<void> Poll(int timeout_ms, const SampleCallback& callback) = 0;
  // Stops sampling and delivers everything still buffered.
  virtual Result<void> StopAndDrain(const SampleCallback& callback) = 0;
  virtual SourceCounters Counters() = 0;
  // The backend's part of the start-up (total_s is the recorder's).
  virtual RecordStartup Startup() const { return {}; }
};

// Both fail with a clear Error (kPermission, kUnsupported, ...) when the kernel refuses.
Result<std::unique_ptr<SampleSource>> OpenBpfSource(const SourceConfig& config, bool stackmap,
                                                    std::vector<std::string>* notes);
Result<std::unique_ptr<SampleSource>> OpenPerfSource(const SourceConfig& config,
                                                     std::vector<std::string>* notes);
// Whether the BPF backend was compiled in (clang, bpftool and libbpf found at build time).
bool BpfBackendCompiled();

// RecordOptions::ringbuf_size when none is given: about a second of the run's largest samples
// from every CPU, a power of two from 1 to 32 MiB.
uint64_t DefaultRingbufSize(const RecordOptions& options);

// Online CPU ids (from /sys/devices/system/cpu/online).
Result<std::vector<int>> OnlineCpus();

}  // namespace stacksym::capture
