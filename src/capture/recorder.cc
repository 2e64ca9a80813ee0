#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "base/clock.h"
#include "capture/aggregator.h"
#include "capture/perf_event_util.h"
#include "capture/sample_source.h"
#include "stacksym/capture.h"
#include "stacksym/unwind.h"

namespace stacksym {

const char* CaptureBackendName(CaptureBackend backend) {
  switch (backend) {
    case CaptureBackend::kAuto:
      return "auto";
    case CaptureBackend::kBpf:
      return "bpf";
    case CaptureBackend::kPerf:
      return "perf";
    case CaptureBackend::kStackMap:
      return "stackmap";
  }
  return "?";
}

std::optional<CaptureBackend> ParseCaptureBackend(std::string_view name) {
  for (CaptureBackend b : {CaptureBackend::kAuto, CaptureBackend::kBpf, CaptureBackend::kPerf,
                           CaptureBackend::kStackMap}) {
    if (name == CaptureBackendName(b)) return b;
  }
  return std::nullopt;
}

const char* CallGraphName(CallGraph mode) {
  switch (mode) {
    case CallGraph::kFramePointers:
      return "fp";
    case CallGraph::kDwarf:
      return "dwarf";
    case CallGraph::kBpf:
      return "bpf";
    case CallGraph::kAuto:
      return "auto";
  }
  return "?";
}

Result<CallGraphSpec> ParseCallGraph(std::string_view text) {
  CallGraphSpec spec;
  std::string_view mode = text.substr(0, text.find(','));
  if (mode == "fp") {
    spec.mode = CallGraph::kFramePointers;
    if (mode.size() != text.size()) {
      return MakeError(ErrorCode::kInvalidArgument, "--call-graph fp takes no size");
    }
    return spec;
  }
  if (mode == "bpf") {
    spec.mode = CallGraph::kBpf;
    if (mode.size() != text.size()) {
      return MakeError(ErrorCode::kInvalidArgument, "--call-graph bpf takes no size");
    }
    return spec;
  }
  if (mode != "dwarf") {
    return MakeError(ErrorCode::kInvalidArgument,
                     "unknown call-graph mode '" + std::string(mode) + "' (fp, dwarf[,SIZE], bpf)");
  }
  spec.mode = CallGraph::kDwarf;
  if (mode.size() == text.size()) return spec;
  std::string_view size = text.substr(mode.size() + 1);
  uint64_t multiplier = 1;
  if (!size.empty() && (size.back() == 'k' || size.back() == 'K')) {
    multiplier = 1024;
    size.remove_suffix(1);
  }
  uint64_t value = 0;
  bool ok = !size.empty() && size.size() <= 9;
  for (char c : size) {
    if (c < '0' || c > '9') ok = false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  value *= multiplier;
  if (!ok || value == 0 || value > kMaxStackCopyBytes || value % 8 != 0) {
    return MakeError(ErrorCode::kInvalidArgument, "bad stack copy size in '" + std::string(text) +
                                                      "': a multiple of 8 from 8 to " +
                                                      std::to_string(kMaxStackCopyBytes));
  }
  spec.stack_copy_bytes = static_cast<uint32_t>(value);
  return spec;
}

const char* CaptureEventName(CaptureEvent event) {
  return event == CaptureEvent::kCycles ? "cycles" : "cpu-clock";
}

const char* OffCpuAttachName(OffCpuAttach attach) {
  switch (attach) {
    case OffCpuAttach::kTpBtf:
      return "tp_btf";
    case OffCpuAttach::kRawTp:
      return "raw_tp";
    case OffCpuAttach::kNone:
      break;
  }
  return "none";
}

std::optional<CaptureEvent> ParseCaptureEvent(std::string_view name) {
  if (name == "cpu-clock") return CaptureEvent::kCpuClock;
  if (name == "cycles") return CaptureEvent::kCycles;
  return std::nullopt;
}

namespace {

double ProcessCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

bool ProcessExists(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

bool ThreadExists(pid_t tid) {
  struct stat st;
  // /proc/TID exists (hidden from readdir) for every thread id.
  return tid > 0 && stat(("/proc/" + std::to_string(tid)).c_str(), &st) == 0;
}

// Searches PATH like execvp would, so that "command not found" is reported before attaching.
bool CommandFindable(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0;
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    if (access((dir + "/" + name).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// Forks the command; the child blocks on a pipe until released, then execs. Returns the pid
// and the write end of the pipe (closing it releases the child).
Result<std::pair<pid_t, int>> StartCommandPaused(const std::vector<std::string>& argv) {
  int release[2];
  if (pipe2(release, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(release[0]);
    close(release[1]);
    return ErrnoError(err, "fork");
  }
  if (pid == 0) {
    close(release[1]);
    char c;
    // Wait for the go (EOF when the parent closes the pipe or exits).
    while (read(release[0], &c, 1) < 0 && errno == EINTR) {
    }
    execvp(args[0], args.data());
    dprintf(2, "stacksym record: cannot run %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  close(release[0]);
  return std::make_pair(pid, release[1]);
}

}  // namespace

Recorder::~Recorder() {
  source_.reset();
  if (command_release_fd_ >= 0) {
    // Never released (Run not called): the child would run unprofiled; stop it instead.
    kill(command_pid_, SIGKILL);
    close(command_release_fd_);
    waitpid(command_pid_, nullptr, 0);
  }
}

Profile& Recorder::profile() { return aggregator_->profile(); }

namespace {

// The default call graph when the unwinding program cannot be loaded (a kernel without
// bpf_loop, no room for its maps): the BPF backend with stack copies, said in a note.
Result<std::unique_ptr<capture::SampleSource>> OpenBpfWithStackCopies(
    capture::SourceConfig& config, const Error& why, std::vector<std::string>* notes) {
  config.options.call_graph = CallGraph::kDwarf;
  Result<std::unique_ptr<capture::SampleSource>> source =
      capture::OpenBpfSource(config, false, notes);
  if (source) {
    notes->push_back("unwinding in BPF unavailable (" + why.ToString() +
                     "); user stacks from stack copies (dwarf)");
  } else {
    config.options.call_graph = CallGraph::kBpf;  // as asked, for the perf fallback's note
  }
  return source;
}

// What the options leave to the recorder: the call graph the backend walks best (in BPF by
// default, stack copies on perf, frame pointers in the stack map) and a ring buffer sized
// for what each sample carries.
void FillDefaults(RecordOptions& options) {
  if (options.call_graph == CallGraph::kAuto) {
    options.call_graph = options.backend == CaptureBackend::kStackMap ? CallGraph::kFramePointers
                         : options.backend == CaptureBackend::kPerf   ? CallGraph::kDwarf
                                                                      : CallGraph::kBpf;
  }
  if (options.ringbuf_size == 0) options.ringbuf_size = capture::DefaultRingbufSize(options);
}

// --off-cpu needs the BPF ring-buffer backend: the scheduler's tracepoint and probe are BPF
// programs, and its records travel with the samples.
Result<void> CheckOffCpu(const RecordOptions& options) {
  if (!options.off_cpu) return {};
  if (options.backend == CaptureBackend::kPerf || options.backend == CaptureBackend::kStackMap) {
    return MakeError(ErrorCode::kInvalidArgument,
                     std::string("--off-cpu needs the BPF backend (--backend auto or bpf); the ") +
                         CaptureBackendName(options.backend) + " backend records CPU samples only");
  }
  if (!(options.off_cpu_sample > 0 && options.off_cpu_sample <= 1)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "--off-cpu-sample must be a probability above 0 and at most 1");
  }
  return {};
}

// The sampling settings and whether the backend can walk the call graph asked for.
Result<void> CheckSampling(const RecordOptions& options) {
  if (options.frequency_hz == 0 || options.frequency_hz > 100000) {
    return MakeError(ErrorCode::kInvalidArgument, "sampling frequency must be 1..100000 Hz, got " +
                                                      std::to_string(options.frequency_hz));
  }
  if (options.duration_s < 0) {
    return MakeError(ErrorCode::kInvalidArgument, "duration must not be negative");
  }
  if (options.ringbuf_size < 4096 || options.ringbuf_size > (1ull << 30)) {
    return MakeError(ErrorCode::kInvalidArgument, "ring buffer size must be 4 KiB .. 1 GiB");
  }
  if (options.call_graph == CallGraph::kDwarf &&
      (options.stack_copy_bytes == 0 || options.stack_copy_bytes > kMaxStackCopyBytes ||
       options.stack_copy_bytes % 8 != 0)) {
    return MakeError(
        ErrorCode::kInvalidArgument,
        "stack copy size must be a multiple of 8 from 8 to " + std::to_string(kMaxStackCopyBytes));
  }
  if (options.call_graph == CallGraph::kBpf && options.bpf_unwind_rows == 0) {
    return MakeError(ErrorCode::kInvalidArgument, "the BPF unwind tables need at least one row");
  }
  if (options.call_graph == CallGraph::kBpf && options.backend == CaptureBackend::kPerf) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "--call-graph bpf needs the BPF backend (the perf backend has dwarf and fp)");
  }
  if (options.backend == CaptureBackend::kStackMap &&
      options.call_graph != CallGraph::kFramePointers) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the stackmap backend walks frame pointers only (--call-graph fp)");
  }
  if (options.backend == CaptureBackend::kStackMap &&
      (options.stackmap_size == 0 || options.stackmap_size > (1u << 24))) {
    return MakeError(ErrorCode::kInvalidArgument, "stack map size must be 1 .. 16M entries");
  }
  return CheckOffCpu(options);
}

// A command or -p/--tid targets, each of which exists (the command on PATH), so that a typo
// is reported before anything is attached.
Result<void> CheckTargets(const RecordOptions& options) {
  if (!options.command.empty() && (!options.pids.empty() || !options.tids.empty())) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "give either a command or -p/--tid targets, not both");
  }
  for (pid_t pid : options.pids) {
    if (!ProcessExists(pid)) {
      return MakeError(ErrorCode::kNotFound, "no process with pid " + std::to_string(pid));
    }
  }
  for (pid_t tid : options.tids) {
    if (!ThreadExists(tid)) {
      return MakeError(ErrorCode::kNotFound, "no thread with tid " + std::to_string(tid));
    }
  }
  if (!options.command.empty() && !CommandFindable(options.command[0])) {
    return MakeError(ErrorCode::kNotFound, "command not found: " + options.command[0]);
  }
  return {};
}

// The backends' configuration before any kernel object exists: the options, the unwind
// tables they share, the -p/--tid targets and the event asked for.
capture::SourceConfig BaseConfig(const RecordOptions& options) {
  capture::SourceConfig config;
  config.options = options;
  UnwindTableCacheOptions table_options;
  table_options.dir = options.unwind_cache_dir;
  table_options.dir_max_bytes = options.unwind_cache_max_bytes;
  table_options.max_bytes = options.unwind_tables_memory_bytes;
  config.unwind_tables = std::make_shared<UnwindTableCache>(table_options);
  if (options.python) config.python = std::make_shared<capture::PythonProcesses>();
  config.tgids = options.pids;
  config.tids = options.tids;
  config.event = options.event;
  return config;
}

// Opens the --cgroup directory: the BPF program filters on its id, perf events are opened
// on the directory. The caller closes the descriptor.
Result<int> OpenCgroup(const std::string& path, capture::SourceConfig& config) {
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cgroup " + path);
  // The id the BPF filter compares and the fd perf_event_open takes both need a cgroup v2
  // directory; another directory (a v1 hierarchy, the tmpfs that holds them) matched nothing
  // or failed later with EBADF.
  struct statfs fs;
  if (fstatfs(fd, &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
    close(fd);
    return Error(ErrorCode::kInvalidArgument,
                 "cgroup " + path + " is not a cgroup v2 directory (see `mount -t cgroup2`)");
  }
  struct stat st;
  fstat(fd, &st);
  config.filter_cgroup = true;
  config.cgroup_id = st.st_ino;  // cgroup v2: the id bpf_get_current_cgroup_id returns
  config.cgroup_fd = fd;
  return fd;
}

// The cycles event needs a PMU; without one, cpu-clock, said in a note.
Result<void> ChooseEvent(capture::SourceConfig& config, std::vector<std::string>* notes) {
  if (config.event != CaptureEvent::kCycles) return {};
  Result<std::vector<int>> cpus = capture::OnlineCpus();
  if (!cpus) return cpus.error();
  if (!capture::CyclesAvailable(cpus->front())) {
    notes->push_back(
        "hardware cycles event unavailable (no PMU here); sampling "
        "cpu-clock instead");
    config.event = CaptureEvent::kCpuClock;
  }
  return {};
}

// The BPF backend, else stack copies in BPF when the default call graph cannot be walked
// there, else perf_event_open with stack copies; each step down said in a note.
Result<std::unique_ptr<capture::SampleSource>> OpenAnyBackend(capture::SourceConfig& config,
                                                              bool call_graph_chosen,
                                                              std::vector<std::string>* notes) {
  Result<std::unique_ptr<capture::SampleSource>> source =
      capture::OpenBpfSource(config, /*stackmap=*/false, notes);
  if (!source && !call_graph_chosen && config.options.call_graph == CallGraph::kBpf) {
    source = OpenBpfWithStackCopies(config, source.error(), notes);
  }
  if (source) return source;
  if (config.options.off_cpu) {
    return MakeError(
        source.error().code,
        "--off-cpu needs the BPF backend, which is unavailable: " + source.error().ToString());
  }
  notes->push_back("BPF backend unavailable (" + source.error().ToString() +
                   "); using perf_event_open");
  if (config.options.call_graph == CallGraph::kBpf) {
    notes->push_back(call_graph_chosen ? "--call-graph bpf needs BPF: using stack copies (dwarf)"
                                       : "user stacks: from stack copies (dwarf)");
    config.options.call_graph = CallGraph::kDwarf;
  }
  return capture::OpenPerfSource(config, notes);
}

// The backend asked for; a fallback changes config.options.call_graph to the one it walks.
Result<std::unique_ptr<capture::SampleSource>> OpenBackend(capture::SourceConfig& config,
                                                           bool call_graph_chosen,
                                                           std::vector<std::string>* notes) {
  Result<std::unique_ptr<capture::SampleSource>> source =
      MakeError(ErrorCode::kInternal, "no backend tried");
  switch (config.options.backend) {
    case CaptureBackend::kAuto:
      source = OpenAnyBackend(config, call_graph_chosen, notes);
      break;
    case CaptureBackend::kBpf:
      source = capture::OpenBpfSource(config, false, notes);
      if (!source && !call_graph_chosen && config.options.call_graph == CallGraph::kBpf) {
        source = OpenBpfWithStackCopies(config, source.error(), notes);
      }
      break;
    case CaptureBackend::kStackMap:
      source = capture::OpenBpfSource(config, true, notes);
      break;
    case CaptureBackend::kPerf:
      source = capture::OpenPerfSource(config, notes);
      break;
  }
  return source;
}

// --kernel-build-ids only changes what the BPF backend walking frame pointers records.
void NoteKernelBuildIds(const RecordOptions& options, CaptureBackend backend,
                        std::vector<std::string>* notes) {
  if (!options.kernel_build_ids) return;
  if (options.call_graph != CallGraph::kFramePointers) {
    notes->push_back(
        "--kernel-build-ids applies to --call-graph fp only; unwound stacks are normalized in "
        "user space");
  } else if (backend != CaptureBackend::kBpf) {
    notes->push_back(
        "--kernel-build-ids applies to the BPF backend only; user stacks "
        "are normalized in user space");
  }
}

}  // namespace

// Checks everything the user gave before touching the kernel, then the event, the command
// (started stopped before its exec, so that its pid is a target from its first instruction)
// and the backend with its fallbacks.
Result<std::unique_ptr<Recorder>> Recorder::Create(const RecordOptions& given) {
  const double cpu_at_start = ProcessCpuSeconds();
  RecordOptions options = given;
  const bool call_graph_chosen = options.call_graph != CallGraph::kAuto;
  FillDefaults(options);
  if (Result<void> ok = CheckSampling(options); !ok) return ok.error();
  if (Result<void> ok = CheckTargets(options); !ok) return ok.error();

  std::unique_ptr<Recorder> rec(new Recorder());
  rec->options_ = options;
  capture::SourceConfig config = BaseConfig(options);
  // Closed however Create returns (it leaked when the event or the command failed); the
  // perf events keep their own reference, the BPF program only the id.
  struct ClosedOnReturn {
    int fd = -1;
    ~ClosedOnReturn() {
      if (fd >= 0) close(fd);
    }
  } cgroup;
  if (!options.cgroup_path.empty()) {
    Result<int> fd = OpenCgroup(options.cgroup_path, config);
    if (!fd) return fd.error();
    cgroup.fd = *fd;
  }
  if (Result<void> ok = ChooseEvent(config, &rec->notes_); !ok) return ok.error();
  if (!options.command.empty()) {
    Result<std::pair<pid_t, int>> started = StartCommandPaused(options.command);
    if (!started) return started.error();
    rec->command_pid_ = started->first;
    rec->command_release_fd_ = started->second;
    config.tgids = {rec->command_pid_};
    config.command_pid = rec->command_pid_;
    config.follow_forks = true;
  }

  Result<std::unique_ptr<capture::SampleSource>> source =
      OpenBackend(config, call_graph_chosen, &rec->notes_);
  if (!source) return source.error();  // ~Recorder kills the paused command
  NoteKernelBuildIds(options, (*source)->backend(), &rec->notes_);
  rec->source_ = std::move(*source);
  rec->aggregator_ = std::make_unique<capture::SampleAggregator>(
      config.unwind_tables, options.off_cpu ? options.off_cpu_sample : 1.0, config.python);
  rec->python_ = config.python;
  rec->unwind_tables_ = config.unwind_tables;
  rec->stats_.backend = rec->source_->backend();
  rec->stats_.event = rec->source_->event();
  rec->stats_.call_graph = config.options.call_graph;
  Profile& p = rec->aggregator_->profile();
  p.period_ns = 1000000000ull / options.frequency_hz;
  p.event = CaptureEventName(rec->stats_.event);
  p.off_cpu_recorded = options.off_cpu;
  rec->stats_.startup = rec->source_->Startup();
  rec->stats_.startup.total_s = ProcessCpuSeconds() - cpu_at_start;
  return rec;
}

namespace {

// The Python counters as RecordStats has them: failures by their stable names.
void CopyPythonStats(capture::PythonProcesses& python, RecordStats* stats) {
  python.AddCodeStats();
  const capture::PythonCounters& p = python.counters();
  stats->python_processes = p.processes;
  stats->python_processes_unsupported = p.processes_unsupported;
  stats->python_samples = p.samples;
  stats->python_frames = p.frames;
  stats->python_samples_in_interpreter = p.samples_in_interpreter;
  stats->python_samples_named = p.samples_named;
  stats->python_frames_unnamed = p.frames_unnamed;
  stats->python_calls_unplaced = p.groups_unplaced;
  stats->python_code_objects_read = p.code_objects_read;
  stats->python_versions = python.Versions();
  stats->python_layouts_corrected = p.layouts_corrected;
  stats->python_first_problem = p.first_problem;
  stats->python_failures.clear();
  for (size_t e = 0; e < p.code_failures.size(); ++e) {
    if (p.code_failures[e] == 0) continue;
    std::string name = interp::python::CodeErrorName(static_cast<interp::python::CodeError>(e));
    stats->python_failures.emplace_back("code object " + name, p.code_failures[e]);
  }
  const char* ends[] = {"outermost", "walk cut at the depth limit", "walk read failed",
                        "no thread state"};
  for (int e = 1; e < STACKSYM_PY_END_COUNT; ++e) {
    if (p.walk_ends[e] != 0) stats->python_failures.emplace_back(ends[e], p.walk_ends[e]);
  }
}

}  // namespace

void Recorder::RefreshStats() {
  capture::SourceCounters c = source_->Counters();
  const capture::AggregatorCounters& a = aggregator_->counters();
  stats_.samples = c.samples;
  stats_.lost = c.lost;
  stats_.lost_per_cpu = c.lost_per_cpu;
  stats_.kernel_stack_errors = c.kstack_errors;
  stats_.user_stack_errors = c.ustack_errors;
  stats_.stackmap_collisions = c.stackmap_collisions;
  stats_.stackmap_errors = c.stackmap_errors;
  stats_.stackmap_counts_full = c.stackmap_counts_full;
  stats_.aggregated = a.aggregated;
  stats_.user_stacks_empty = a.user_stacks_empty;
  stats_.user_stacks_truncated = a.user_stacks_truncated;
  stats_.build_id_frames = a.build_id_frames;
  stats_.build_id_fallbacks = a.build_id_fallbacks;
  stats_.frames_not_normalized = a.frames_not_normalized;
  stats_.user_stacks_unwound = a.user_stacks_unwound;
  stats_.user_context_missing = a.user_context_missing;
  stats_.unwind_cache_hits = a.unwind_cache_hits;
  std::copy(std::begin(a.unwind_ends), std::end(a.unwind_ends), std::begin(stats_.unwind_ends));
  std::copy(std::begin(a.bpf_unwind_ends), std::end(a.bpf_unwind_ends),
            std::begin(stats_.bpf_unwind_ends));
  stats_.unwind_fp_frames = aggregator_->unwind_fp_frames();
  if (unwind_tables_) {
    stats_.unwind_tables_loaded = unwind_tables_->dir_loads();
    stats_.unwind_tables_stored = unwind_tables_->dir_stores();
  }
  stats_.stack_copy_bytes = c.stack_copy_bytes;
  stats_.stack_copy_cut = c.stack_copy_cut;
  stats_.ringbuf_bytes = c.ringbuf_bytes;
  stats_.bpf_unwound = c.bpf_unwound;
  stats_.bpf_unwind_frames = c.bpf_unwind_frames;
  stats_.bpf_fallback_copies = c.bpf_fallback_copies;
  stats_.bpf_unknown_mapping = c.bpf_unknown_mapping;
  stats_.bpf_walk_memo_hits = c.bpf_walk_memo_hits;
  stats_.bpf_stack_memo_hits = c.bpf_stack_memo_hits;
  stats_.bpf_processes_loaded = c.bpf_processes_loaded;
  stats_.bpf_processes_not_loaded = c.bpf_processes_not_loaded;
  stats_.bpf_processes_evicted = c.bpf_processes_evicted;
  stats_.bpf_tables_loaded = c.bpf_tables_loaded;
  stats_.bpf_tables_evicted = c.bpf_tables_evicted;
  stats_.bpf_rows_loaded = c.bpf_rows_loaded;
  stats_.bpf_rows_in_use = c.bpf_rows_in_use;
  stats_.bpf_rows_map_bytes = c.bpf_rows_map_bytes;
  stats_.bpf_first_load_problem = c.bpf_first_load_problem;
  stats_.verify_samples = a.verify_samples;
  stats_.verify_agreed = a.verify_agreed;
  stats_.verify_no_reference = a.verify_no_reference;
  stats_.verify_differences = aggregator_->verify_differences();
  stats_.distinct_stacks = aggregator_->profile().stacks.size();
  stats_.off_cpu = c.off_cpu;
  stats_.off_cpu_aggregated = a.off_cpu;
  stats_.off_cpu_aggregated_ns = a.off_cpu_ns;
  stats_.python_thread_searches = c.py_thread_searches;
  stats_.late_samples = aggregator_->late_samples();
  if (python_) CopyPythonStats(*python_, &stats_);
}

namespace {

// The monotonic time a record belongs to: when a CPU sample was taken, when an off-CPU interval
// ended (a sum drained from the kernel, time 0: now); 0 for records that add nothing.
uint64_t RecordTime(const capture::RawSample& s, uint64_t now) {
  switch (s.off_cpu) {
    case capture::OffCpuPart::kNone:
      return s.exec ? 0 : s.time_ns;
    case capture::OffCpuPart::kInterval:
      return s.time_ns != 0 ? s.time_ns : now;
    case capture::OffCpuPart::kClose:
      return s.time_ns + s.off_cpu_ns;
    case capture::OffCpuPart::kOpen:
    case capture::OffCpuPart::kDiscard:
      break;
  }
  return 0;
}

// How long a window stays open past its end for the samples taken before it but not yet read
// (the ring buffer is read every 100 ms at most).
constexpr uint64_t kWindowGraceNs = 150'000'000;

}  // namespace

// Windows on the monotonic clock; their wall-clock times from one offset taken at the start, so
// that consecutive windows tile exactly.
struct Recorder::Windows {
  bool on = false;
  uint64_t length_ns = 0;
  uint64_t start_ns = 0;  // monotonic
  uint64_t end_ns = 0;
  int64_t wall_minus_monotonic_ns = 0;
  uint64_t lost_at_start = 0;
};

void Recorder::CloseWindow(Windows& w, const WindowCallback& callback) {
  RefreshStats();
  Profile window = aggregator_->TakeProfile();
  window.start_time_ns =
      static_cast<uint64_t>(static_cast<int64_t>(w.start_ns) + w.wall_minus_monotonic_ns);
  window.duration_ns = w.end_ns - w.start_ns;
  window.lost_samples = stats_.lost - w.lost_at_start;
  w.lost_at_start = stats_.lost;
  w.start_ns = w.end_ns;
  w.end_ns += w.length_ns;
  aggregator_->SetClock(w.wall_minus_monotonic_ns, w.start_ns);
  ++stats_.windows;
  if (callback) callback(std::move(window), stats_);
}

Result<void> Recorder::Run(const RecordStatusCallback& status, const WindowCallback& on_window) {
  Windows windows;
  windows.on = options_.window_s > 0;
  capture::SampleCallback add = [this, &windows, &on_window](const capture::RawSample& s) {
    if (windows.on) {
      uint64_t now = MonotonicNs();
      uint64_t t = std::min(RecordTime(s, now), now);
      while (t >= windows.end_ns) CloseWindow(windows, on_window);
    }
    aggregator_->Add(s);
  };
  uint64_t wall_start = WallNs();
  uint64_t monotonic_start = MonotonicNs();
  aggregator_->profile().start_time_ns = wall_start;
  if (windows.on) {
    windows.length_ns = static_cast<uint64_t>(options_.window_s * 1e9);
    windows.start_ns = monotonic_start;
    windows.end_ns = monotonic_start + windows.length_ns;
    windows.wall_minus_monotonic_ns =
        static_cast<int64_t>(wall_start) - static_cast<int64_t>(monotonic_start);
    aggregator_->profile().keep_times = true;
    aggregator_->SetClock(windows.wall_minus_monotonic_ns, monotonic_start);
  }
  double start = MonotonicSeconds();
  double cpu_start = ProcessCpuSeconds();
  if (command_release_fd_ >= 0) {
    close(command_release_fd_);  // go
    command_release_fd_ = -1;
  }
  double last_status = start, last_invalidate = start;
  Result<void> result;
  while (!stop_requested_.load(std::memory_order_relaxed)) {
    double now = MonotonicSeconds();
    if (options_.duration_s > 0 && now - start >= options_.duration_s) break;
    if (command_pid_ > 0) {
      int wstatus;
      pid_t r = waitpid(command_pid_, &wstatus, WNOHANG);
      if (r == command_pid_) {
        command_status_ = wstatus;
        break;
      }
    }
    int timeout = 100;
    if (options_.duration_s > 0) {
      double left_ms = (options_.duration_s - (now - start)) * 1000;
      if (left_ms < timeout) timeout = left_ms < 1 ? 1 : static_cast<int>(left_ms);
    }
    if (auto r = source_->Poll(timeout, add); !r) {
      result = r;
      break;
    }
    // A window with nothing more to read closes once every sample of it has had time to come.
    while (windows.on && MonotonicNs() >= windows.end_ns + kWindowGraceNs) {
      CloseWindow(windows, on_window);
    }
    now = MonotonicSeconds();
    if (now - last_invalidate >= 1.0) {
      // Mappings change (dlopen, munmap): bound how long a cached VMA is trusted unchecked.
      aggregator_->RevalidateMappings();
      last_invalidate = now;
    }
    if (status && now - last_status >= 0.25) {
      RefreshStats();
      stats_.elapsed_s = now - start;
      status(stats_);
      last_status = now;
    }
  }
  if (auto r = source_->StopAndDrain(add); !r && result.ok()) result = r;
  double end = MonotonicSeconds();
  RefreshStats();
  stats_.elapsed_s = end - start;
  stats_.recorder_cpu_s = ProcessCpuSeconds() - cpu_start;
  if (windows.on) {
    // The last window ends where sampling stopped, not at its planned end.
    windows.end_ns = std::max(windows.start_ns, MonotonicNs());
    CloseWindow(windows, on_window);
    RefreshStats();
    stats_.elapsed_s = end - start;
    stats_.recorder_cpu_s = ProcessCpuSeconds() - cpu_start;
  }
  Profile& p = aggregator_->profile();
  p.duration_ns = static_cast<uint64_t>(stats_.elapsed_s * 1e9);
  p.lost_samples = stats_.lost;
  if (command_pid_ > 0 && !command_status_) {
    // Stopped before the command ended (duration or Ctrl-C): end it rather than leave an
    // unprofiled orphan behind — SIGTERM, then SIGKILL after two seconds.
    int wstatus;
    pid_t r = waitpid(command_pid_, &wstatus, WNOHANG);
    if (r == 0) {
      kill(command_pid_, SIGTERM);
      for (int i = 0; i < 200 && (r = waitpid(command_pid_, &wstatus, WNOHANG)) == 0; ++i) {
        usleep(10000);
      }
      if (r == 0) {
        kill(command_pid_, SIGKILL);
        r = waitpid(command_pid_, &wstatus, 0);
      }
      notes_.push_back("recording ended before the command; the command was terminated");
    }
    if (r == command_pid_) command_status_ = wstatus;
  }
  // Last, after the command has ended: a JVM writes its perf map as it exits. (Windows read
  // theirs as they close.)
  if (!windows.on) aggregator_->CollectJitFiles();
  return result;
}

}  // namespace stacksym
