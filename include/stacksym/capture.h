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
//   SymbolizeProfile(profile, {.module_files = (*rec)->module_files()});
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
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/profile.h"
#include "stacksym/result.h"

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

  bool kernel_stacks = true;
  bool user_stacks = true;
  // BPF backend: ask the kernel for user frames as (build ID, file offset)
  // (BPF_F_USER_BUILD_ID); frames where it falls back to a raw IP are normalized here.
  bool kernel_build_ids = false;

  uint64_t ringbuf_size = 8u << 20;  // bytes; rounded up to a power of two of pages
  uint32_t stackmap_size = 16384;    // entries of the stackmap backend's STACK_TRACE map
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
  uint64_t stackmap_counts_full = 0;  // stackmap backend: samples with no room to count
  double elapsed_s = 0;
  double recorder_cpu_s = 0;  // CPU time this process spent (user + system) while recording
};

using RecordStatusCallback = std::function<void(const RecordStats&)>;

class SampleSource;  // backend (src/capture); opaque here
class SampleAggregator;

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
  Result<void> Run(const RecordStatusCallback& status = {});
  void RequestStop() { stop_requested_.store(true, std::memory_order_relaxed); }

  const RecordStats& stats() const { return stats_; }
  Profile& profile();
  // Open ELF files of Profile::modules (same indices; null where none could be opened), kept
  // while the processes lived: symbolization works even for files since deleted or replaced.
  const std::vector<std::shared_ptr<ElfFile>>& module_files() const;
  // Human-readable remarks: fallbacks taken and why.
  const std::vector<std::string>& notes() const { return notes_; }
  // The command's pid and, after Run, its wait status.
  pid_t command_pid() const { return command_pid_; }
  std::optional<int> command_status() const { return command_status_; }

 private:
  Recorder() = default;
  void RefreshStats();

  RecordOptions options_;
  std::unique_ptr<SampleSource> source_;
  std::unique_ptr<SampleAggregator> aggregator_;
  RecordStats stats_;
  std::vector<std::string> notes_;
  std::atomic<bool> stop_requested_{false};
  pid_t command_pid_ = 0;
  int command_release_fd_ = -1;
  std::optional<int> command_status_;
};

}  // namespace stacksym
