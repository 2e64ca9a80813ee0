// `stacksym record` — sample stacks (BPF ring buffer, or perf_event_open), symbolize each
// distinct frame once, write a profile (format from the file extension).
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture_options.h"
#include "command.h"
#include "profile_symbolize_options.h"
#include "sample_type_options.h"
#include "stacksym/capture.h"
#include "stacksym/output.h"
#include "stacksym/symbolize_profile.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_record {
namespace {

struct Options {
  CaptureCliOptions capture;
  RecordOptions& record = capture.record;
  bool quiet = false;
  bool no_symbolize = false;
  std::string output = "stacksym.pb.gz";
  std::string format;
  SampleTypeCliOptions sample_type;  // what the written profile shows (not what is recorded)
  ProfileSymbolizeCliOptions symbolize;
};

std::atomic<Recorder*> g_recorder{nullptr};

std::atomic<bool> g_stop{false};

// Installed before the recorder exists: a Ctrl-C during loading still stops cleanly.
void OnSignal(int) {
  g_stop.store(true);
  if (Recorder* r = g_recorder.load()) r->RequestStop();
}

void PrintStatus(const RecordStats& s) {
  std::fprintf(stderr, "\r\033[K[%6.1fs] samples %llu  lost %llu  stacks %llu", s.elapsed_s,
               static_cast<unsigned long long>(s.samples), static_cast<unsigned long long>(s.lost),
               static_cast<unsigned long long>(s.distinct_stacks));
  std::fflush(stderr);
}

// Where Recorder::Create's CPU went: one line, since a short recording is mostly start-up.
void PrintStartup(const RecordStartup& st, CaptureBackend backend) {
  auto ms = [](double s) { return s * 1e3; };
  if (backend == CaptureBackend::kPerf) {
    std::fprintf(stderr, "  start-up: %.1f ms of CPU\n", ms(st.total_s));
    return;
  }
  std::string types = st.kernel_types_bytes > 0
                          ? std::to_string(st.kernel_types_bytes) + " bytes of kernel types"
                          : std::string("the kernel's BTF");
  // libbpf finds a tp_btf program's attach point in the kernel's whole BTF (about 9 ms).
  if (st.kernel_types_bytes > 0 && st.off_cpu_attach == OffCpuAttach::kTpBtf) {
    types += " and the kernel's BTF for the tp_btf attach";
  }
  std::string ring;
  if (st.ring_bytes > 0) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), ", %llu KiB ring buffer mapped %.1f ms",
                  static_cast<unsigned long long>(st.ring_bytes >> 10), ms(st.ring_s));
    ring = buf;
  }
  double rest = st.total_s - st.open_s - st.load_s - st.attach_s - st.ring_s;
  std::fprintf(stderr,
               "  start-up: %.1f ms of CPU: BPF object opened %.1f ms, loaded %.1f ms (maps, %s, "
               "%llu instructions verified), attached on %u CPUs %.1f ms%s; checks and the "
               "command's fork %.1f ms\n",
               ms(st.total_s), ms(st.open_s), ms(st.load_s), types.c_str(),
               static_cast<unsigned long long>(st.verified_insns), st.cpus, ms(st.attach_s),
               ring.c_str(), ms(rest > 0 ? rest : 0));
}

// Python frames: what was found, how many frames per sample, how many samples in the
// interpreter got a named chain, code objects read, and every failure by reason.
void PrintPython(const RecordStats& s) {
  if (s.python_processes == 0 && s.python_processes_unsupported == 0) return;
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  auto per = [](uint64_t a, uint64_t b) {
    return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
  };
  std::fprintf(stderr,
               "  python: %llu processes (%s), %llu samples, %.1f Python frames per sample; "
               "%llu samples in the interpreter, %.1f %% with a named Python chain; %llu code "
               "objects read\n",
               u(s.python_processes), s.python_versions.c_str(), u(s.python_samples),
               per(s.python_frames, s.python_samples), u(s.python_samples_in_interpreter),
               100 * per(s.python_samples_named, s.python_samples_in_interpreter),
               u(s.python_code_objects_read));
  std::string failures;
  for (const auto& [reason, count] : s.python_failures) {
    failures += (failures.empty() ? " " : ", ") + reason + " " + std::to_string(count);
  }
  if (s.python_frames_unnamed > 0) {
    failures += (failures.empty() ? " " : ", ") + std::string("frames unnamed ") +
                std::to_string(s.python_frames_unnamed);
  }
  if (s.python_calls_unplaced > 0) {
    failures += (failures.empty() ? " " : ", ") +
                std::string("calls with no evaluator frame (placed outermost) ") +
                std::to_string(s.python_calls_unplaced);
  }
  if (s.python_layouts_corrected > 0) {
    failures += (failures.empty() ? " " : ", ") +
                std::string("built-in layouts corrected by the DWARF ") +
                std::to_string(s.python_layouts_corrected);
  }
  if (s.python_processes_unsupported > 0) {
    failures += (failures.empty() ? " " : ", ") + std::to_string(s.python_processes_unsupported) +
                " processes unsupported: " + s.python_first_problem;
  }
  if (!failures.empty()) std::fprintf(stderr, "  python failures:%s\n", failures.c_str());
}

// --off-cpu: every interval that ended while recording, by fate, with its time.
void PrintOffCpu(const OffCpuCounts& c, double sample, OffCpuAttach attach) {
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  auto sec = [](uint64_t ns) { return static_cast<double>(ns) * 1e-9; };
  std::fprintf(stderr,
               "  off-CPU (sched_switch as %s): %llu intervals, %.3f s in all: %llu recorded "
               "(%.3f s), %llu shorter than --off-cpu-min-us (%.3f s), %llu sampled out (%.3f "
               "s), %llu dropped (ring buffer full, %.3f s)\n",
               OffCpuAttachName(attach), u(c.intervals), sec(c.ns), u(c.recorded),
               sec(c.recorded_ns), u(c.filtered), sec(c.filtered_ns), u(c.sampled_out),
               sec(c.sampled_out_ns), u(c.dropped), sec(c.dropped_ns));
  if (c.summed + c.unsummed > 0) {
    std::fprintf(stderr,
                 "  off-CPU: %llu of the recorded added up by stack in the kernel (%.3f s), %llu "
                 "sent one by one for want of room or on a fingerprint collision\n",
                 u(c.summed), sec(c.summed_ns), u(c.unsummed));
  }
  if (sample < 1) {
    std::fprintf(stderr,
                 "  off-CPU values scaled by %.4g (--off-cpu-sample %.4g: each interval kept "
                 "with that probability)\n",
                 1 / sample, sample);
  }
  if (c.untracked > 0) {
    std::fprintf(stderr, "  off-CPU: %llu switch-outs found no room to note their start\n",
                 u(c.untracked));
  }
}

void PrintSummary(const RecordStats& s, const Options& o) {
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::fprintf(stderr,
               "stacksym record: %llu samples in %.2f s (%s backend, %s @ %u Hz), %llu lost, "
               "%llu distinct stacks\n",
               u(s.samples), s.elapsed_s, CaptureBackendName(s.backend), CaptureEventName(s.event),
               o.capture.frequency, u(s.lost), u(s.distinct_stacks));
  std::fprintf(stderr,
               "  user stacks: %llu empty, %llu truncated at 127 frames; %llu frames not "
               "normalized (process gone, or unmapped: often bogus callers from code without frame "
               "pointers)\n",
               u(s.user_stacks_empty), u(s.user_stacks_truncated), u(s.frames_not_normalized));
  if (s.lost > 0 && !s.lost_per_cpu.empty()) {
    std::string per_cpu;
    for (size_t i = 0; i < s.lost_per_cpu.size(); ++i) {
      if (s.lost_per_cpu[i] == 0) continue;
      per_cpu += " cpu" + std::to_string(i) + "=" + std::to_string(s.lost_per_cpu[i]);
    }
    std::fprintf(stderr, "  lost per CPU (ring buffer full; raise --ringbuf-size):%s\n",
                 per_cpu.c_str());
  }
  // With --off-cpu most records are off-CPU stacks: a figure per CPU sample would mislead.
  if (s.backend == CaptureBackend::kBpf && o.record.off_cpu) {
    std::fprintf(stderr, "  ring buffer: %.1f MiB of CPU samples and off-CPU stacks\n",
                 static_cast<double>(s.ringbuf_bytes) / (1 << 20));
  } else if (s.backend == CaptureBackend::kBpf && s.samples > 0) {
    std::fprintf(stderr, "  ring buffer: %.0f bytes per sample\n",
                 static_cast<double>(s.ringbuf_bytes) / static_cast<double>(s.samples));
  }
  if (s.call_graph == CallGraph::kBpf) {
    std::fprintf(stderr,
                 "  unwinding in BPF (--call-graph bpf): %llu %s unwound in the program "
                 "(%.1f frames each, %llu rows remembered, %llu stacks replayed), %llu sent as "
                 "stack copies (tables not loaded yet); %llu walks met an unknown mapping\n",
                 u(s.bpf_unwound),
                 o.record.off_cpu ? "stacks (CPU samples and off-CPU)" : "samples",
                 s.bpf_unwound
                     ? static_cast<double>(s.bpf_unwind_frames) / static_cast<double>(s.bpf_unwound)
                     : 0.0,
                 u(s.bpf_walk_memo_hits), u(s.bpf_stack_memo_hits), u(s.bpf_fallback_copies),
                 u(s.bpf_unknown_mapping));
    std::fprintf(stderr,
                 "  unwind tables in BPF maps: %llu processes, %llu tables, %llu rows loaded "
                 "(%.1f MiB in use at the end, in %llu MiB of maps); evicted to make room: "
                 "%llu tables, %llu processes; %llu processes could not be loaded%s%s\n",
                 u(s.bpf_processes_loaded), u(s.bpf_tables_loaded), u(s.bpf_rows_loaded),
                 static_cast<double>(s.bpf_rows_in_use) * 16 / (1 << 20),
                 u(s.bpf_rows_map_bytes >> 20), u(s.bpf_tables_evicted), u(s.bpf_processes_evicted),
                 u(s.bpf_processes_not_loaded), s.bpf_first_load_problem.empty() ? "" : ": ",
                 s.bpf_first_load_problem.c_str());
    std::string bpf_ends;
    for (int i = 0; i < kUnwindEndCount; ++i) {
      if (s.bpf_unwind_ends[i] == 0) continue;
      bpf_ends += " " + std::string(UnwindEndName(static_cast<UnwindEnd>(i))) + "=" +
                  std::to_string(s.bpf_unwind_ends[i]);
    }
    if (!bpf_ends.empty()) std::fprintf(stderr, "  walks in BPF ended:%s\n", bpf_ends.c_str());
    if (s.verify_samples > 0 || s.verify_no_reference > 0) {
      std::fprintf(stderr,
                   "  verify: %llu of %llu BPF chains agree with the stack copy's (%llu copies "
                   "read too late to place their pcs: not compared)\n",
                   u(s.verify_agreed), u(s.verify_samples), u(s.verify_no_reference));
      for (size_t i = 0; i < s.verify_differences.size() && i < 20; ++i) {
        std::fprintf(stderr, "    differs: %s\n", s.verify_differences[i].c_str());
      }
    }
  }
  if (s.call_graph == CallGraph::kDwarf || s.call_graph == CallGraph::kBpf) {
    uint64_t complete = s.unwind_ends[static_cast<int>(UnwindEnd::kOutermost)];
    // Per CPU sample, unless off-CPU stacks are copied too: then per copy.
    double per = static_cast<double>(o.record.off_cpu ? s.user_stacks_unwound : s.samples);
    std::fprintf(stderr,
                 "  unwinding stack copies (%u bytes): %llu stacks, %llu complete, %llu by an "
                 "earlier walk; %.0f stack bytes per %s, %llu copies cut at an unreadable "
                 "page; %llu frames by frame pointers\n",
                 o.record.stack_copy_bytes, u(s.user_stacks_unwound), u(complete),
                 u(s.unwind_cache_hits),
                 per > 0 ? static_cast<double>(s.stack_copy_bytes) / per : 0.0,
                 o.record.off_cpu ? "copy" : "sample", u(s.stack_copy_cut), u(s.unwind_fp_frames));
    std::string ends;
    for (int i = 1; i < kUnwindEndCount; ++i) {
      if (s.unwind_ends[i] == 0) continue;
      ends += " " + std::string(UnwindEndName(static_cast<UnwindEnd>(i))) + "=" +
              std::to_string(s.unwind_ends[i]);
    }
    if (!ends.empty()) {
      std::fprintf(stderr, "  stacks cut short:%s\n", ends.c_str());
    }
    if (s.user_context_missing != 0) {
      std::fprintf(stderr,
                   "  %llu samples without user registers (taken in kernel entry code or while "
                   "exiting): kernel frames only\n",
                   u(s.user_context_missing));
    }
    if (!o.record.unwind_cache_dir.empty()) {
      std::fprintf(stderr, "  unwind tables: %llu from the cache, %llu built from CFI and cached\n",
                   u(s.unwind_tables_loaded), u(s.unwind_tables_stored));
    }
  }
  if (o.record.kernel_build_ids) {
    std::fprintf(stderr, "  kernel build IDs: %llu frames, %llu fallbacks to raw IPs\n",
                 u(s.build_id_frames), u(s.build_id_fallbacks));
  }
  if (s.kernel_stack_errors || s.user_stack_errors) {
    std::fprintf(stderr, "  stack read errors: %llu kernel, %llu user\n", u(s.kernel_stack_errors),
                 u(s.user_stack_errors));
  }
  if (s.backend == CaptureBackend::kStackMap) {
    std::fprintf(stderr,
                 "  stackmap (%u entries): %llu stacks dropped by hash collisions (EEXIST), "
                 "%llu other errors, %llu samples without room in the count map\n",
                 o.record.stackmap_size, u(s.stackmap_collisions), u(s.stackmap_errors),
                 u(s.stackmap_counts_full));
  }
  if (o.record.off_cpu) PrintOffCpu(s.off_cpu, o.record.off_cpu_sample, s.startup.off_cpu_attach);
  PrintPython(s);
  PrintStartup(s.startup, s.backend);
  if (s.samples > 0) {
    rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double total = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                   static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    std::fprintf(stderr,
                 "  stacksym CPU time: %.3f s while recording (%.2f ms per 1000 samples), "
                 "%.3f s in all (with loading and symbolization)\n",
                 s.recorder_cpu_s, s.recorder_cpu_s * 1e6 / static_cast<double>(s.samples), total);
  }
}

// What record writes: the format, the sample type and the thread states.
struct OutputChoice {
  std::optional<ProfileFormat> format;  // -o - writes folded stacks to stdout whatever it is
  std::optional<SampleType> sample_type;
  ProfileFilter filter;
};

// The output flags, checked before anything is recorded: a choice the recording cannot show
// is said at once (and checked again against the profile by WriteOutput). With --off-cpu the
// profile will hold off-CPU time (off_cpu, wall and the states are choices; wall the default).
Result<OutputChoice> ParseOutputChoice(const Options& o) {
  OutputChoice out;
  Result<SampleTypeCliOptions::Choice> choice = o.sample_type.Parse();
  if (!choice) return std::move(choice).error();
  out.sample_type = choice->type;
  out.filter.states = choice->states;
  Profile expected;
  expected.off_cpu_recorded = o.record.off_cpu;
  if (Result<SampleType> type = ChooseSampleType(expected, out.sample_type, out.filter); !type) {
    return std::move(type).error();
  }
  if (!o.format.empty()) {
    Result<ProfileFormat> format = ParseProfileFormat(o.format);
    if (!format) return std::move(format).error();
    out.format = *format;
  } else if (o.output != "-") {
    out.format = ProfileFormatFromPath(o.output);
    if (!out.format) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "cannot tell the format of '" + o.output +
                           "' from its extension (.pb.gz, .folded, .html, .svg) — give --format");
    }
  }
  return out;
}

// Writes the recorded profile as chosen: its stacks in the chosen states, in the chosen sample
// type, whose default follows the profile (wall once it holds off-CPU time, else samples).
Result<void> WriteOutput(const Options& o, const OutputChoice& choice, const Profile& recorded) {
  Result<SampleType> type = ChooseSampleType(recorded, choice.sample_type, choice.filter);
  if (!type) return std::move(type).error();
  Profile filtered;
  if (!choice.filter.KeepsAll()) filtered = FilterProfile(recorded, choice.filter);
  const Profile& profile = choice.filter.KeepsAll() ? recorded : filtered;
  WriteOptions options;
  options.sample_type = *type;
  if (o.output == "-") {
    options.folded.sample_type = *type;
    std::string text = FormatFolded(profile, options.folded);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return {};
  }
  if (Result<void> w = WriteProfileAs(profile, *choice.format, o.output, options); !w) return w;
  if (!o.quiet) {
    std::fprintf(stderr, "stacksym record: wrote %s (%s)\n", o.output.c_str(),
                 ProfileFormatName(*choice.format));
  }
  return {};
}

int RunRecord(Options& o) {
  if (Result<void> ok = o.capture.Resolve(); !ok) {
    std::fprintf(stderr, "stacksym record: %s\n", ok.error().message.c_str());
    return kExitUsage;
  }
  o.record.unwind_cache_dir = o.symbolize.cache.Resolve();
  // Before recording: a bad --server is said at once, not after the recording.
  Result<ProfileSymbolizeOptions> symbolize_options = o.symbolize.Resolve();
  if (!symbolize_options) {
    std::fprintf(stderr, "stacksym record: %s\n", symbolize_options.error().ToString().c_str());
    return kExitUsage;
  }
  Result<OutputChoice> output = ParseOutputChoice(o);
  if (!output) {
    std::fprintf(stderr, "stacksym record: %s\n", output.error().ToString().c_str());
    return kExitUsage;
  }

  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int, old_term;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  Result<std::unique_ptr<Recorder>> rec = Recorder::Create(o.record);
  if (!rec) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    std::fprintf(stderr, "stacksym record: %s\n", rec.error().ToString().c_str());
    return kExitBadInput;
  }
  for (const std::string& note : (*rec)->notes()) {
    std::fprintf(stderr, "stacksym record: %s\n", note.c_str());
  }
  size_t notes_shown = (*rec)->notes().size();
  g_recorder.store(rec->get());
  if (g_stop.load()) (*rec)->RequestStop();
  bool live = !o.quiet && isatty(STDERR_FILENO);
  Result<void> run = (*rec)->Run(live ? RecordStatusCallback(PrintStatus) : RecordStatusCallback());
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  g_recorder.store(nullptr);
  if (live) std::fprintf(stderr, "\r\033[K");
  if (!run) std::fprintf(stderr, "stacksym record: %s\n", run.error().ToString().c_str());
  for (size_t i = notes_shown; i < (*rec)->notes().size(); ++i) {
    std::fprintf(stderr, "stacksym record: %s\n", (*rec)->notes()[i].c_str());
  }

  Profile& profile = (*rec)->profile();
  std::optional<ProfileSymbolizeStats> symbolized;
  if (!o.no_symbolize) symbolized = SymbolizeProfile(profile, *symbolize_options);
  if (!o.quiet) {
    PrintSummary((*rec)->stats(), o);
    if (symbolized) PrintProfileSymbolizeStats("stacksym record", *symbolized);
  }

  if (Result<void> w = WriteOutput(o, *output, profile); !w) {
    std::fprintf(stderr, "stacksym record: %s\n", w.error().ToString().c_str());
    return kExitBadInput;
  }
  if (!run) return kExitBadInput;
  // The profile is written, but a server that was asked for and could not be used is an error.
  if (symbolized && !symbolized->server_error.empty()) {
    if (o.quiet) std::fprintf(stderr, "stacksym record: %s\n", symbolized->server_error.c_str());
    return kExitBadInput;
  }
  return kExitOk;
}

CommandRegistrar registrar(
    "record", "Sample stacks of processes (BPF ring buffer or perf) into a profile",
    [](CLI::App& app) -> CommandRun {
      auto o = std::make_shared<Options>();
      AddCaptureOptions(app, &o->capture, /*default_frequency=*/99);
      app.add_option("-d,--duration", o->record.duration_s,
                     "Seconds to record (default: until Ctrl-C or the command exits)");
      app.add_option("-o,--output", o->output,
                     "Output file; format from the extension (default stacksym.pb.gz); "
                     "- for folded stacks on stdout");
      app.add_option("--format", o->format, "pprof, folded, html, svg (overrides extension)");
      AddSampleTypeOptions(app, &o->sample_type);
      app.add_flag("-q,--quiet", o->quiet, "No status line or summary");
      app.add_flag("--no-symbolize", o->no_symbolize, "Keep addresses only");
      AddProfileSymbolizeOptions(app, &o->symbolize, /*default_kallsyms=*/"/proc/kallsyms");
      app.add_option("command", o->record.command, "-- CMD ARGS: run and profile a command");
      return [o] { return RunRecord(*o); };
    });

}  // namespace
}  // namespace stacksym::cli::cmd_record
