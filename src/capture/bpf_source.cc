// The BPF backends: the ring-buffer program (default) and the stack-map diagnostic, both from
// one skeleton (profile.skel.h, generated at build time from bpf/profile.bpf.c).
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>
#include <signal.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "capture/aggregator.h"
#include "capture/bpf_unwind_loader.h"
#include "capture/kernel_btf.h"
#include "capture/off_cpu_sums.h"
#include "capture/perf_event_util.h"
#include "capture/python_processes.h"
#include "capture/sample_source.h"
#include "capture/switch_frames.h"
#include "stacksym/elf.h"
#include "stacksym/unwind.h"

// clang-format off
#include "bpf/sample_event.h"
#include "profile.skel.h"
// clang-format on

namespace stacksym::capture {

bool BpfBackendCompiled() { return true; }

namespace {

int LibbpfQuiet(enum libbpf_print_level level, const char* format, va_list args) {
  // libbpf's warnings (verifier logs) only matter when debugging the BPF program itself.
  if (level == LIBBPF_WARN && getenv("STACKSYM_BPF_DEBUG") != nullptr) {
    return vfprintf(stderr, format, args);
  }
  return 0;
}

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

uint64_t RoundRingbufSize(uint64_t bytes) {
  uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t size = page;
  while (size < bytes && size < (1ull << 32)) size <<= 1;
  return size;
}

static_assert(sizeof(stacksym_unwind_row) == sizeof(UnwindRow));
static_assert(sizeof(stacksym_sample) % 8 == 0);
static_assert(sizeof(stacksym_py_frame) == sizeof(RawPythonFrame));
static_assert(kRawPythonEntry == STACKSYM_PY_ENTRY && kRawPythonChecked == STACKSYM_PY_CHECKED &&
              STACKSYM_PY_CHECK_SHIFT == 16);
// The program's walk ends are UnwindEnd's values, so that both walks are counted alike.
static_assert(STACKSYM_END_OUTERMOST == static_cast<int>(UnwindEnd::kOutermost));
static_assert(STACKSYM_END_DEPTH == static_cast<int>(UnwindEnd::kDepthLimit));
static_assert(STACKSYM_END_READ_FAILED == static_cast<int>(UnwindEnd::kPageNotReadable));
static_assert(STACKSYM_END_NO_CFI == static_cast<int>(UnwindEnd::kNoCfi));
static_assert(STACKSYM_END_UNMAPPED == static_cast<int>(UnwindEnd::kUnmappedPc));
static_assert(STACKSYM_END_BAD_CFA == static_cast<int>(UnwindEnd::kBadCfa));
static_assert(STACKSYM_END_UNSUPPORTED == static_cast<int>(UnwindEnd::kUnsupportedRule));
static_assert(STACKSYM_STATE_SLEEPING == static_cast<int>(ThreadState::kSleeping));
static_assert(STACKSYM_STATE_UNINTERRUPTIBLE == static_cast<int>(ThreadState::kUninterruptible));
static_assert(STACKSYM_STATE_PREEMPTED == static_cast<int>(ThreadState::kPreempted));
static_assert(STACKSYM_STATE_OTHER == static_cast<int>(ThreadState::kOther));

constexpr uint32_t kMaxUnwindProcesses = 1024;
// Python processes registered, and threads whose thread state the program remembers (a thread
// past the bound searches its interpreter's list at each sample).
constexpr uint32_t kMaxPythonProcesses = 1024;
constexpr uint32_t kMaxPythonThreads = 16384;

// Whether perf_event programs may use hash maps that allocate elements as they are added
// (BPF_F_NO_PREALLOC; Linux 6.1+). A preallocated map allocates and zeroes every element at
// creation: 10 MiB for proc_mappings' 1024 processes, in every recording.
bool KernelAtLeast(unsigned want_major, unsigned want_minor) {
  utsname u;
  if (uname(&u) != 0) return false;
  unsigned major = 0, minor = 0;
  if (sscanf(u.release, "%u.%u", &major, &minor) != 2) return false;
  return major > want_major || (major == want_major && minor >= want_minor);
}
bool HashMapsOnDemand() { return KernelAtLeast(6, 1); }

// --off-cpu: the frames above __schedule in a kernel stack taken in sched_switch's program (the
// program itself and bpf_trace_run4, the tracepoint's caller of BPF programs); where
// __traceiter_sched_switch shows too, SwitchFrames cuts it.
constexpr uint32_t kSwitchKernelSkip = 2;
// tp_btf where the kernel's BTF describes the tracepoint (libbpf finds its attach point
// there), else the raw tracepoint, which needs no BTF of its own; only the chosen one is loaded.
OffCpuAttach ChooseSwitchAttach(const RecordOptions& options) {
  if (options.off_cpu_force_raw_tp) return OffCpuAttach::kRawTp;
  return BtfHasName("/sys/kernel/btf/vmlinux", "btf_trace_sched_switch") ? OffCpuAttach::kTpBtf
                                                                         : OffCpuAttach::kRawTp;
}

// Target threads with an entry (allocated as they first leave the CPU, freed as they exit).
constexpr uint32_t kMaxOffCpuTasks = 65536;
// Distinct records summed in the kernel between two drains (allocated as they come).
constexpr uint32_t kMaxOffCpuSums = 16384;
constexpr double kSumsDrainSeconds = 0.5;

// The rows map's bound must fit in memory: its segments are created as tables fill them, so
// a bound the machine cannot hold would only fail later, table by table.
Result<void> CheckRowsBound(uint32_t rows) {
  struct sysinfo si;
  if (sysinfo(&si) != 0) return {};
  uint64_t bytes = uint64_t{rows} * sizeof(stacksym_unwind_row);
  if (bytes > uint64_t{si.totalram} * si.mem_unit) {
    return MakeError(ErrorCode::kInvalidArgument, "unwind rows bound of " +
                                                      std::to_string(bytes >> 20) +
                                                      " MiB exceeds the machine's memory");
  }
  return {};
}

class BpfSource : public SampleSource {
 public:
  ~BpfSource() override { Close(); }
  OffCpuAttach off_cpu_attach() const { return startup_.off_cpu_attach; }

  // In steps, each timed for the start-up summary (RecordStartup).
  Result<void> Open(const SourceConfig& config, bool stackmap, std::vector<std::string>* notes) {
    stackmap_ = stackmap;
    event_ = config.event;
    bpf_unwind_ = config.options.call_graph == CallGraph::kBpf && !stackmap;
    double t = ProcessCpuSeconds();
    auto lap = [&t](double* phase) {
      double now = ProcessCpuSeconds();
      *phase = now - t;
      t = now;
    };
    KernelTypesFile kernel_types;
    off_cpu_ = config.options.off_cpu && !stackmap;
    if (Result<void> r = OpenObject(config, kernel_types); !r) return r;
    if (Result<void> r = SizeMaps(config); !r) return r;
    lap(&startup_.open_s);
    if (int err = profile_bpf__load(skel_); err != 0) {
      return ErrnoError(-err,
                        "loading the BPF program (needs CAP_BPF and CAP_PERFMON, and a kernel "
                        "with BTF, ring buffers and bpf_get_stack; set STACKSYM_BPF_DEBUG=1 "
                        "for the verifier log)");
    }
    lap(&startup_.load_s);
    startup_.verified_insns = VerifiedInstructions();
    if (Result<void> r = AttachTracepoints(config); !r) return r;
    if (python_) {
      int fd = bpf_map__fd(skel_->maps.python_procs);
      python_->SetRegistrar([fd](uint32_t pid, const stacksym_python_proc* r) {
        if (r == nullptr) return bpf_map_delete_elem(fd, &pid) == 0;
        return bpf_map_update_elem(fd, &pid, r, BPF_ANY) == 0;
      });
    }
    if (bpf_unwind_) {
      awaiting_exec_ = static_cast<uint32_t>(config.command_pid);
      loader_.Init(bpf_map__fd(skel_->maps.unwind_rows),
                   std::max(config.options.bpf_unwind_rows, 1u), first_rows_segment_,
                   bpf_map__fd(skel_->maps.proc_mappings), kMaxUnwindProcesses,
                   config.unwind_tables);
      // Processes named by pid run already: their tables go in before the first switch, so
      // that a process switching 100 000 times a second does not fill the ring with stack
      // copies while they would load after its first sample.
      for (pid_t tgid : config.tgids) {
        if (static_cast<uint32_t>(tgid) != awaiting_exec_) {
          loader_.Want(static_cast<uint32_t>(tgid), false);
        }
      }
    } else {
      close(first_rows_segment_);
    }
    first_rows_segment_ = -1;  // the loader's, or closed
    if (off_cpu_) {
      sums_.Init(bpf_map__fd(skel_->maps.off_cpu_control), bpf_map__fd(skel_->maps.off_cpu_sums0),
                 bpf_map__fd(skel_->maps.off_cpu_sums1));
      last_sums_drain_ = MonotonicSeconds();
      if (Result<void> r = AttachOffCpu(); !r) return r;
    }
    if (Result<void> r = AttachPerfEvents(config); !r) return r;
    lap(&startup_.attach_s);
    if (!stackmap) {
      ring_ =
          ring_buffer__new(bpf_map__fd(skel_->maps.samples), &BpfSource::OnRecord, this, nullptr);
      if (ring_ == nullptr) return ErrnoError(errno, "creating the ring buffer reader");
    }
    lap(&startup_.ring_s);
    (void)notes;
    return {};
  }

  RecordStartup Startup() const override { return startup_; }

  CaptureBackend backend() const override {
    return stackmap_ ? CaptureBackend::kStackMap : CaptureBackend::kBpf;
  }
  CaptureEvent event() const override { return event_; }

  Result<void> Poll(int timeout_ms, const SampleCallback& callback) override {
    if (stackmap_) {
      usleep(static_cast<useconds_t>(timeout_ms) * 1000);  // aggregated in the kernel
      return {};
    }
    callback_ = &callback;
    // A program linked with libpython has just exec'd: its interpreter is looked for again in a
    // few milliseconds, not a poll interval later.
    if (python_ && python_->WantsSoon()) timeout_ms = std::min(timeout_ms, 2);
    int n = ring_buffer__poll(ring_, timeout_ms);
    // Wakeups are batched (wakeup_bytes): after a timeout, take what is there anyway.
    if (n >= 0) n = ring_buffer__consume(ring_);
    // Sums of processes that exited are normalized from what the reader remembers of them,
    // which it forgets after a second or two.
    if (sums_.enabled() && MonotonicSeconds() - last_sums_drain_ >= kSumsDrainSeconds)
      DrainSums(false);
    callback_ = nullptr;
    if (bpf_unwind_) loader_.Sweep();
    if (python_) python_->ExamineWanted();
    if (n < 0 && n != -EINTR) return ErrnoError(-n, "polling the BPF ring buffer");
    return {};
  }

  Result<void> StopAndDrain(const SampleCallback& callback) override {
    DetachEvents();
    if (!stackmap_) {
      callback_ = &callback;
      int n = ring_buffer__consume(ring_);
      DrainSums(true);
      callback_ = nullptr;
      if (n < 0) return ErrnoError(-n, "draining the BPF ring buffer");
      return {};
    }
    return DrainStackMap(callback);
  }

  SourceCounters Counters() override {
    SourceCounters c;
    int ncpus = libbpf_num_possible_cpus();
    if (ncpus <= 0) return c;
    std::vector<stacksym_counters> per_cpu(static_cast<size_t>(ncpus));
    uint32_t zero = 0;
    if (bpf_map__lookup_elem(skel_->maps.counters, &zero, sizeof(zero), per_cpu.data(),
                             per_cpu.size() * sizeof(stacksym_counters), 0) != 0) {
      return c;
    }
    c.lost_per_cpu.resize(per_cpu.size());
    for (size_t i = 0; i < per_cpu.size(); ++i) {
      const stacksym_counters& p = per_cpu[i];
      c.samples += p.samples;
      c.lost += p.lost_ringbuf;
      c.lost_per_cpu[i] = p.lost_ringbuf;
      c.kstack_errors += p.kstack_errors;
      c.ustack_errors += p.ustack_errors;
      c.stackmap_collisions += p.stackmap_collisions;
      c.stackmap_errors += p.stackmap_errors;
      c.stackmap_counts_full += p.counts_map_full;
      c.stack_copy_bytes += p.stack_copy_bytes;
      c.stack_copy_cut += p.stack_copy_cut;
      c.ringbuf_bytes += p.ringbuf_bytes;
      c.bpf_unwound += p.bpf_unwound;
      c.bpf_unwind_frames += p.bpf_unwind_frames;
      c.bpf_fallback_copies += p.bpf_fallback_copies;
      c.bpf_unknown_mapping += p.bpf_unknown_mapping;
      c.bpf_walk_memo_hits += p.bpf_walk_memo_hits;
      c.bpf_stack_memo_hits += p.bpf_stack_memo_hits;
      AddOffCpuCounts(p, &c.off_cpu);
      c.py_samples += p.py_samples;
      c.py_frames += p.py_frames;
      c.py_thread_searches += p.py_thread_searches;
    }
    if (bpf_unwind_) loader_.AddCounters(&c);
    return c;
  }

 private:
  static void AddOffCpuCounts(const stacksym_counters& p, OffCpuCounts* o) {
    o->intervals += p.off_cpu_intervals;
    o->ns += p.off_cpu_ns;
    o->filtered += p.off_cpu_filtered;
    o->filtered_ns += p.off_cpu_filtered_ns;
    o->sampled_out += p.off_cpu_sampled_out;
    o->sampled_out_ns += p.off_cpu_sampled_out_ns;
    o->recorded += p.off_cpu_sent;
    o->recorded_ns += p.off_cpu_sent_ns;
    o->dropped += p.off_cpu_lost;
    o->dropped_ns += p.off_cpu_lost_ns;
    o->untracked += p.off_cpu_untracked;
    o->summed += p.off_cpu_summed;
    o->summed_ns += p.off_cpu_summed_ns;
    o->unsummed += p.off_cpu_unsummed;
  }

  // The skeleton, with the options the program reads (frozen at load: the verifier drops
  // what they switch off) and, on the kernel the build cut them from, its few kernel types.
  Result<void> OpenObject(const SourceConfig& config, const KernelTypesFile& kernel_types) {
    libbpf_set_print(LibbpfQuiet);
    LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = kernel_types.path());
    startup_.kernel_types_bytes = kernel_types.path() != nullptr ? kernel_types.bytes() : 0;
    skel_ = profile_bpf__open_opts(&open_opts);
    if (skel_ == nullptr) return ErrnoError(errno, "opening the BPF object");
    auto* ro = skel_->rodata;
    ro->filter_tgid = !config.tgids.empty();
    ro->filter_tid = !config.tids.empty();
    ro->filter_cgroup = config.filter_cgroup;
    ro->target_cgroup_id = config.cgroup_id;
    ro->follow_forks = config.follow_forks;
    ro->include_idle = config.options.include_idle;
    ro->kernel_stacks = config.options.kernel_stacks;
    ro->user_stacks = config.options.user_stacks;
    ro->user_build_ids = config.options.kernel_build_ids;
    if (config.options.call_graph == CallGraph::kDwarf ||
        config.options.call_graph == CallGraph::kBpf) {
      ro->stack_copy_size = config.options.stack_copy_bytes;
      ro->user_build_ids = 0;
    }
    ro->bpf_unwind = bpf_unwind_;
    // Python frames need the ring buffer's records (not the stack map's aggregation).
    if (config.python && !stackmap_ && config.options.user_stacks) python_ = config.python;
    ro->python = python_ != nullptr;
    ro->bpf_unwind_verify = bpf_unwind_ && config.options.bpf_unwind_verify;
    bpf_program__set_autoload(skel_->progs.on_sample, !stackmap_);
    bpf_program__set_autoload(skel_->progs.on_sample_stackmap, stackmap_);
    bpf_program__set_autoload(skel_->progs.on_fork, config.follow_forks);
    bpf_program__set_autoload(skel_->progs.on_exit, config.follow_forks);
    bpf_program__set_autoload(skel_->progs.on_exec, !stackmap_ && config.options.user_stacks);
    SetOffCpuOptions(config.options);
    return {};
  }

  // --off-cpu: its program and map only when asked for (the verifier's time is start-up).
  void SetOffCpuOptions(const RecordOptions& options) {
    startup_.off_cpu_attach = off_cpu_ ? ChooseSwitchAttach(options) : OffCpuAttach::kNone;
    bpf_program__set_autoload(skel_->progs.on_switch_btf,
                              startup_.off_cpu_attach == OffCpuAttach::kTpBtf);
    bpf_program__set_autoload(skel_->progs.on_switch_raw,
                              startup_.off_cpu_attach == OffCpuAttach::kRawTp);
    for (bpf_map* m :
         {skel_->maps.off_cpu_tasks, skel_->maps.off_cpu_sums0, skel_->maps.off_cpu_sums1,
          skel_->maps.off_cpu_sums, skel_->maps.off_cpu_control}) {
      bpf_map__set_autocreate(m, off_cpu_);
    }
    if (!off_cpu_) return;
    bpf_map__set_max_entries(skel_->maps.off_cpu_tasks, kMaxOffCpuTasks);
    bpf_map__set_max_entries(skel_->maps.off_cpu_sums0, kMaxOffCpuSums);
    bpf_map__set_max_entries(skel_->maps.off_cpu_sums1, kMaxOffCpuSums);
    auto* ro = skel_->rodata;
    ro->off_cpu_min_ns = options.off_cpu_min_ns;
    double keep = options.off_cpu_sample * 4294967296.0;
    ro->off_cpu_keep = options.off_cpu_sample >= 1.0
                           ? 0
                           : static_cast<uint32_t>(std::clamp(keep, 1.0, 4294967295.0));
    ro->self_tgid = static_cast<uint32_t>(getpid());
    ro->switch_has_prev_state = KernelAtLeast(5, 18);
    ro->off_cpu_kernel_skip = kSwitchKernelSkip;
    switch_frames_ = SwitchFrames::FromKallsyms();
  }

  // Maps the options do not use get one entry; the rest are sized to the run.
  Result<void> SizeMaps(const SourceConfig& config) {
    const uint32_t max_rows = std::max(config.options.bpf_unwind_rows, 1u);
    if (bpf_unwind_) {
      if (Result<void> r = CheckRowsBound(max_rows); !r) return r.error();
    }
    bpf_map__set_max_entries(skel_->maps.unwind_rows,
                             bpf_unwind_ ? (max_rows - 1) / STACKSYM_ROWS_PER_SEGMENT + 1 : 1);
    // The map of row segments takes its shape from a segment: with unwinding, the first one
    // (libbpf would create one and drop it), else one row.
    first_rows_segment_ =
        BpfUnwindLoader::CreateSegment(bpf_unwind_ ? STACKSYM_ROWS_PER_SEGMENT : 1);
    if (first_rows_segment_ < 0) return ErrnoError(errno, "creating the unwind rows map");
    bpf_map__set_inner_map_fd(skel_->maps.unwind_rows, first_rows_segment_);
    bpf_map__set_max_entries(skel_->maps.proc_mappings, bpf_unwind_ ? kMaxUnwindProcesses : 1);
    bpf_map__set_max_entries(skel_->maps.python_procs, python_ ? kMaxPythonProcesses : 1);
    bpf_map__set_max_entries(skel_->maps.python_threads, python_ ? kMaxPythonThreads : 1);
    if (HashMapsOnDemand()) {
      // (Not python_threads: an LRU map is always preallocated.)
      for (bpf_map* m : {skel_->maps.proc_mappings, skel_->maps.target_tgids,
                         skel_->maps.target_tids, skel_->maps.python_procs}) {
        bpf_map__set_map_flags(m, bpf_map__map_flags(m) | BPF_F_NO_PREALLOC);
      }
    }
    if (int ncpus = libbpf_num_possible_cpus(); ncpus > 0) {
      // --off-cpu: a second buffer per CPU for the switches (see off_cpu_slot_base).
      bpf_map__set_max_entries(skel_->maps.scratch,
                               static_cast<uint32_t>(ncpus * (off_cpu_ ? 2 : 1)));
      skel_->rodata->off_cpu_slot_base = static_cast<uint32_t>(ncpus);
    }
    uint64_t rb_size = RoundRingbufSize(config.options.ringbuf_size);
    skel_->rodata->wakeup_bytes = rb_size / 8;
    bpf_map__set_max_entries(skel_->maps.samples, stackmap_ ? 4096 : rb_size);
    startup_.ring_bytes = stackmap_ ? 0 : rb_size;
    bpf_map__set_max_entries(skel_->maps.stackmap, stackmap_ ? config.options.stackmap_size : 1);
    bpf_map__set_max_entries(skel_->maps.stack_counts, stackmap_ ? 65536 : 1);
    return {};
  }

  // Instructions the verifier processed, over the loaded programs (Linux 5.16+; else 0).
  uint64_t VerifiedInstructions() const {
    uint64_t total = 0;
    bpf_program* prog;
    bpf_object__for_each_program(prog, skel_->obj) {
      if (!bpf_program__autoload(prog)) continue;
      bpf_prog_info info = {};
      uint32_t len = sizeof(info);
      if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0) {
        total += info.verified_insns;
      }
    }
    return total;
  }

  // The targets, and the tracepoints that follow forks, exits and execs.
  Result<void> AttachTracepoints(const SourceConfig& config) {
    uint8_t one = 1;
    for (pid_t pid : config.tgids) {
      uint32_t key = static_cast<uint32_t>(pid);
      if (bpf_map__update_elem(skel_->maps.target_tgids, &key, sizeof(key), &one, sizeof(one),
                               BPF_ANY) != 0) {
        return ErrnoError(errno, "adding pid " + std::to_string(pid) + " to the BPF targets");
      }
    }
    for (pid_t tid : config.tids) {
      uint32_t key = static_cast<uint32_t>(tid);
      if (bpf_map__update_elem(skel_->maps.target_tids, &key, sizeof(key), &one, sizeof(one),
                               BPF_ANY) != 0) {
        return ErrnoError(errno, "adding tid " + std::to_string(tid) + " to the BPF targets");
      }
    }
    if (config.follow_forks) {
      for (bpf_program* p : {skel_->progs.on_fork, skel_->progs.on_exit}) {
        bpf_link* link = bpf_program__attach(p);
        if (link == nullptr) return ErrnoError(errno, "attaching the fork/exit tracepoints");
        tracepoint_links_.push_back(link);
      }
    }
    if (!stackmap_ && config.options.user_stacks) {
      bpf_link* link = bpf_program__attach(skel_->progs.on_exec);
      if (link == nullptr) return ErrnoError(errno, "attaching the exec tracepoint");
      tracepoint_links_.push_back(link);
    }
    return {};
  }

  Result<void> AttachOffCpu() {
    bool btf = startup_.off_cpu_attach == OffCpuAttach::kTpBtf;
    // Tests of the fallback (OpenBpfSource) refuse the tp_btf attach as a kernel could.
    if (btf && getenv("STACKSYM_TEST_REFUSE_TP_BTF") != nullptr) {
      return ErrnoError(EINVAL,
                        "--off-cpu: attaching to sched_switch (tp_btf; refused for a test)");
    }
    bpf_link* link =
        bpf_program__attach(btf ? skel_->progs.on_switch_btf : skel_->progs.on_switch_raw);
    if (link == nullptr) {
      return ErrnoError(errno, std::string("--off-cpu: attaching to sched_switch (") +
                                   OffCpuAttachName(startup_.off_cpu_attach) + ")");
    }
    off_cpu_links_.push_back(link);
    return {};
  }

  // One sampling event per online CPU, the program attached to each.
  Result<void> AttachPerfEvents(const SourceConfig& config) {
    Result<std::vector<int>> cpus = OnlineCpus();
    if (!cpus) return cpus.error();
    bpf_program* prog = stackmap_ ? skel_->progs.on_sample_stackmap : skel_->progs.on_sample;
    for (int cpu : *cpus) {
      perf_event_attr attr = SamplingAttr(event_, config.options.frequency_hz);
      Result<int> fd = PerfEventOpen(&attr, -1, cpu, -1, 0);
      if (!fd) return fd.error();
      perf_fds_.push_back(*fd);
      bpf_link* link = bpf_program__attach_perf_event(prog, *fd);
      if (link == nullptr) {
        return ErrnoError(errno, "attaching the BPF program to cpu " + std::to_string(cpu));
      }
      links_.push_back(link);
    }
    startup_.cpus = static_cast<uint32_t>(cpus->size());
    return {};
  }

  static int OnRecord(void* ctx, void* data, size_t size) {
    auto* self = static_cast<BpfSource*>(ctx);
    if (self->callback_ == nullptr || size < sizeof(stacksym_sample)) return 0;
    const auto* h = static_cast<const stacksym_sample*>(data);
    if (h->flags & STACKSYM_SAMPLE_EXEC) {
      self->OnExec(*h);
    } else if (h->flags & STACKSYM_SAMPLE_OFF_CPU_CLOSE) {
      RawSample close;
      close.pid = h->pid;
      close.tid = h->tid;
      close.cpu = h->cpu;
      close.time_ns = h->time_ns;
      close.off_cpu =
          (h->flags & STACKSYM_SAMPLE_OFF_CPU_DISCARD) ? OffCpuPart::kDiscard : OffCpuPart::kClose;
      close.off_cpu_ns = h->off_cpu_ns;
      (*self->callback_)(close);
    } else {
      self->Deliver(static_cast<const uint8_t*>(data), size, 1);
    }
    return 0;
  }

  void OnExec(const stacksym_sample& h) {
    // Sums of the old image's stacks are read before the exec is told: the reader forgets
    // the old mappings then. Only a process unwound here has sums (see note_switch_out).
    if (bpf_unwind_ && sums_.enabled() && loader_.Loaded(h.pid)) DrainSums(false);
    if (bpf_unwind_) loader_.Forget(h.pid);  // the kernel dropped its mappings
    if (python_) python_->Exec(h.pid);
    if (h.pid == awaiting_exec_) awaiting_exec_ = 0;
    RawSample exec;
    exec.pid = h.pid;
    exec.tid = h.tid;
    exec.cpu = h.cpu;
    exec.time_ns = h.time_ns;
    exec.exec = true;
    (*callback_)(exec);
  }

  // --off-cpu: the sums the program may no longer add to, as records of `count` intervals.
  void DrainSums(bool detached) {
    sums_.Drain(
        [this](const uint8_t* record, uint32_t len, uint64_t ns, uint64_t count) {
          sum_record_.assign(record, record + len);
          reinterpret_cast<stacksym_sample*>(sum_record_.data())->off_cpu_ns = ns;
          Deliver(sum_record_.data(), sum_record_.size(), count);
        },
        detached);
    last_sums_drain_ = MonotonicSeconds();
  }

  // A record of stacks (a sample, an interval off CPU, the stacks of one that began), standing
  // for `count` of them.
  void Deliver(const uint8_t* data, size_t size, uint64_t count) {
    const auto* h = reinterpret_cast<const stacksym_sample*>(data);
    const auto* bytes = static_cast<const uint8_t*>(data);
    size_t kbytes = h->kstack_bytes > 0 ? static_cast<size_t>(h->kstack_bytes) : 0;
    size_t ubytes = h->ustack_bytes > 0 ? static_cast<size_t>(h->ustack_bytes) : 0;
    bool python = (h->flags & STACKSYM_SAMPLE_PYTHON) != 0;
    size_t pframes = python ? std::min<size_t>(h->py_frames, STACKSYM_MAX_PY_FRAMES) : 0;
    size_t pbytes = pframes * sizeof(stacksym_py_frame);
    // Cannot happen: the program sized it.
    if (sizeof(*h) + kbytes + pbytes + ubytes > size) return;
    if (python_) python_->Seen(h->pid);
    RawSample s;
    s.count = count;
    s.pid = h->pid;
    s.tid = h->tid;
    s.cpu = h->cpu;
    s.time_ns = h->time_ns;
    s.comm = std::string_view(h->comm, strnlen(h->comm, sizeof(h->comm)));
    s.kernel_thread = (h->flags & STACKSYM_SAMPLE_KTHREAD) != 0;
    if (h->flags & (STACKSYM_SAMPLE_OFF_CPU | STACKSYM_SAMPLE_OFF_CPU_OPEN)) {
      s.off_cpu = (h->flags & STACKSYM_SAMPLE_OFF_CPU) ? OffCpuPart::kInterval : OffCpuPart::kOpen;
      s.off_cpu_ns = h->off_cpu_ns;
      // STACKSYM_STATE_* are ThreadState's values (sample_event.h).
      s.state = static_cast<ThreadState>((h->flags >> STACKSYM_SAMPLE_STATE_SHIFT) &
                                         STACKSYM_SAMPLE_STATE_MASK);
    }
    s.kernel_ips = {reinterpret_cast<const uint64_t*>(bytes + sizeof(*h)), kbytes / 8};
    if (s.off_cpu != OffCpuPart::kNone) s.kernel_ips = switch_frames_.Trim(s.kernel_ips);
    if (python) {
      s.python = true;
      s.python_frames = {reinterpret_cast<const RawPythonFrame*>(bytes + sizeof(*h) + kbytes),
                         pframes};
      s.python_end = static_cast<int>(h->py_end);
    }
    const uint8_t* u = bytes + sizeof(*h) + kbytes + pbytes;
    if (h->flags & STACKSYM_SAMPLE_BPF_UNWOUND) {
      size_t ips = std::min<size_t>(h->unwind_frames, ubytes / 8);
      std::span<const uint64_t> frames{reinterpret_cast<const uint64_t*>(u), ips};
      if (h->flags & STACKSYM_SAMPLE_UNKNOWN_MAPPING) loader_.Want(h->pid, true);
      // STACKSYM_END_* are UnwindEnd's values (sample_event.h).
      if (h->unwind_end < static_cast<__u32>(kUnwindEndCount)) {
        s.bpf_unwind_end = static_cast<int>(h->unwind_end);
      }
      if (h->flags & STACKSYM_SAMPLE_STACK_COPY) {
        s.verify = true;
        s.verify_bpf_ips = frames;  // and the copy below
        u += ips * 8;
        ubytes -= ips * 8;
      } else {
        s.user_ips = frames;
        s.bpf_unwound = true;
        loader_.Touch(h->pid);
        (*callback_)(s);
        return;
      }
    }
    // Its next samples are unwound in the program: its tables are loaded after this sample is
    // aggregated, which reads its mappings first. Loading a big binary's tables can take longer
    // than a short process lives, and a process read only after it exited has no mappings.
    const bool load_tables = !(h->flags & STACKSYM_SAMPLE_BPF_UNWOUND) && bpf_unwind_ &&
                             (h->flags & STACKSYM_SAMPLE_STACK_COPY) &&
                             !(h->flags & STACKSYM_SAMPLE_KTHREAD) && h->pid != awaiting_exec_;
    if (h->flags & STACKSYM_SAMPLE_STACK_COPY) {
      if (ubytes >= sizeof(stacksym_user_regs)) {
        stacksym_user_regs r;
        std::memcpy(&r, u, sizeof(r));
        if (r.stack_bytes <= ubytes - sizeof(r)) {
          user_stack_.ip = r.ip;
          user_stack_.sp = r.sp;
          user_stack_.bp = r.bp;
          user_stack_.bytes = {u + sizeof(r), r.stack_bytes};
          user_stack_.cut_at_unreadable_page = (r.copy_flags & STACKSYM_COPY_CUT) != 0;
          s.user_stack = &user_stack_;
        }
      }
      s.user_context_missing = s.user_stack == nullptr && !s.kernel_thread;
    } else if (h->flags & STACKSYM_SAMPLE_USER_BUILD_ID) {
      s.user_build_id_frames = {reinterpret_cast<const BuildIdFrame*>(u),
                                ubytes / sizeof(BuildIdFrame)};
    } else {
      s.user_ips = {reinterpret_cast<const uint64_t*>(u), ubytes / 8};
    }
    (*callback_)(s);
    if (load_tables) loader_.Want(h->pid, (h->flags & STACKSYM_SAMPLE_UNKNOWN_MAPPING) != 0);
  }

  Result<void> DrainStackMap(const SampleCallback& callback) {
    int counts_fd = bpf_map__fd(skel_->maps.stack_counts);
    int stacks_fd = bpf_map__fd(skel_->maps.stackmap);
    stacksym_stackmap_key key, next;
    std::vector<uint64_t> kstack(kMaxStackFrames), ustack(kMaxStackFrames);
    void* prev = nullptr;
    while (bpf_map_get_next_key(counts_fd, prev, &next) == 0) {
      key = next;
      prev = &key;
      uint64_t count = 0;
      if (bpf_map_lookup_elem(counts_fd, &key, &count) != 0) continue;
      auto read_stack = [&](int32_t id, std::vector<uint64_t>& out) -> std::span<const uint64_t> {
        if (id < 0) return {};
        std::fill(out.begin(), out.end(), 0);
        uint32_t sid = static_cast<uint32_t>(id);
        if (bpf_map_lookup_elem(stacks_fd, &sid, out.data()) != 0) return {};
        size_t n = 0;
        while (n < out.size() && out[n] != 0) ++n;
        return {out.data(), n};
      };
      RawSample s;
      s.pid = key.pid;
      s.tid = key.tid;
      s.count = count;
      s.comm = std::string_view(key.comm, strnlen(key.comm, sizeof(key.comm)));
      s.kernel_ips = read_stack(key.kstack_id, kstack);
      s.user_ips = read_stack(key.ustack_id, ustack);
      s.user_stack_dropped = key.ustack_id == -EEXIST;
      s.kernel_thread = key.ustack_id == -EFAULT;  // the program asks no user stack of those
      callback(s);
    }
    return {};
  }

  void DetachEvents() {
    for (bpf_link* l : links_) bpf_link__destroy(l);
    links_.clear();
    for (bpf_link* l : off_cpu_links_) bpf_link__destroy(l);
    off_cpu_links_.clear();
    for (int fd : perf_fds_) close(fd);
    perf_fds_.clear();
  }

  void Close() {
    DetachEvents();
    for (bpf_link* l : tracepoint_links_) bpf_link__destroy(l);
    tracepoint_links_.clear();
    if (ring_ != nullptr) ring_buffer__free(ring_);
    ring_ = nullptr;
    if (skel_ != nullptr) profile_bpf__destroy(skel_);
    skel_ = nullptr;
    if (first_rows_segment_ >= 0) close(first_rows_segment_);
    first_rows_segment_ = -1;
  }

  bool stackmap_ = false;
  bool bpf_unwind_ = false;
  bool off_cpu_ = false;
  BpfUnwindLoader loader_;
  std::shared_ptr<PythonProcesses> python_;  // null: no Python frames walked
  // The command's pid until its exec is seen: before it, the process is a copy of stacksym
  // (in execve), whose tables are not worth loading.
  uint32_t awaiting_exec_ = 0;
  CaptureEvent event_ = CaptureEvent::kCpuClock;
  profile_bpf* skel_ = nullptr;
  int first_rows_segment_ = -1;  // until Open hands it to the loader
  RecordStartup startup_;
  ring_buffer* ring_ = nullptr;
  std::vector<int> perf_fds_;
  std::vector<bpf_link*> links_;
  std::vector<bpf_link*> tracepoint_links_;
  std::vector<bpf_link*> off_cpu_links_;
  OffCpuSums sums_;
  SwitchFrames switch_frames_;  // --off-cpu: cuts the tracepoint's frame off kernel stacks
  double last_sums_drain_ = 0;
  std::vector<uint8_t> sum_record_;
  const SampleCallback* callback_ = nullptr;
  RawUserStack user_stack_;
};

}  // namespace

Result<std::unique_ptr<SampleSource>> OpenBpfSource(const SourceConfig& config, bool stackmap,
                                                    std::vector<std::string>* notes) {
  auto source = std::make_unique<BpfSource>();
  Result<void> opened = source->Open(config, stackmap, notes);
  // The kernel refused sched_switch's program as tp_btf (at load or attach): once more with
  // the raw tracepoint, which needs no BTF attach point.
  if (!opened && source->off_cpu_attach() == OffCpuAttach::kTpBtf) {
    if (notes != nullptr) {
      notes->push_back("--off-cpu: sched_switch as tp_btf failed (" + opened.error().message +
                       "); the raw tracepoint instead");
    }
    SourceConfig raw = config;
    raw.options.off_cpu_force_raw_tp = true;
    source = std::make_unique<BpfSource>();
    opened = source->Open(raw, stackmap, notes);
  }
  if (!opened) return opened.error();
  return std::unique_ptr<SampleSource>(std::move(source));
}

}  // namespace stacksym::capture
