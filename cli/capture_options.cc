#include "capture_options.h"

#include <cstdlib>

namespace stacksym::cli {

bool ParseByteSize(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  unsigned long long v = strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return false;
  std::string suffix(end);
  uint64_t mult = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") {
    mult = 1ull << 10;
  } else if (suffix == "M" || suffix == "MiB") {
    mult = 1ull << 20;
  } else if (suffix == "G" || suffix == "GiB") {
    mult = 1ull << 30;
  } else if (!suffix.empty()) {
    return false;
  }
  *out = v * mult;
  return true;
}

Result<void> CaptureCliOptions::Resolve() {
  auto usage = [](std::string message) { return MakeError(ErrorCode::kInvalidArgument, message); };
  record.frequency_hz = frequency;
  auto parsed_event = ParseCaptureEvent(event);
  if (!parsed_event) return usage("unknown event '" + event + "' (cpu-clock, cycles)");
  record.event = *parsed_event;
  auto parsed_backend = ParseCaptureBackend(backend);
  if (!parsed_backend)
    return usage("unknown backend '" + backend + "' (auto, bpf, perf, stackmap)");
  record.backend = *parsed_backend;
  record.python = !no_python;
  if (!call_graph.empty()) {
    Result<CallGraphSpec> spec = ParseCallGraph(call_graph);
    if (!spec) return usage(spec.error().message);
    record.call_graph = spec->mode;
    record.stack_copy_bytes = spec->stack_copy_bytes;
  }
  // Empty: the library's default (a second of the largest samples, 1M to 32M).
  if (!ringbuf_size.empty() && !ParseByteSize(ringbuf_size, &record.ringbuf_size)) {
    return usage("bad --ringbuf-size '" + ringbuf_size + "' (e.g. 8M, 512K)");
  }
  if (!bpf_table_size.empty()) {
    uint64_t bytes = 0;
    if (!ParseByteSize(bpf_table_size, &bytes) || bytes < 16 || bytes / 16 > UINT32_MAX) {
      return usage("bad --bpf-table-size '" + bpf_table_size + "' (e.g. 16M, 64M)");
    }
    record.bpf_unwind_rows = static_cast<uint32_t>(bytes / 16);
  }
  if (off_cpu_min_us < 0 || off_cpu_min_us > 1e12) {
    return usage("bad --off-cpu-min-us " + std::to_string(off_cpu_min_us));
  }
  record.off_cpu_min_ns = static_cast<uint64_t>(off_cpu_min_us * 1000);
  if (all && (!record.pids.empty() || !record.tids.empty() || !record.command.empty())) {
    return usage("-a cannot be combined with -p, --tid or a command");
  }
  return {};
}

void AddCaptureOptions(CLI::App& app, CaptureCliOptions* o, uint32_t default_frequency) {
  o->frequency = default_frequency;
  app.add_option("-F,--frequency", o->frequency,
                 "Samples per second per CPU (default " + std::to_string(default_frequency) + ")");
  app.add_option("-e,--event", o->event, "cpu-clock (default) or cycles");
  app.add_option("-p,--pid", o->record.pids, "Process (thread group) to sample; repeatable");
  app.add_option("--tid", o->record.tids, "Thread to sample; repeatable");
  app.add_option("--cgroup", o->record.cgroup_path, "Only tasks in this cgroup v2 directory");
  app.add_flag("-a,--all", o->all, "All processes (the default without targets)");
  app.add_flag("--include-idle", o->record.include_idle, "Also sample the idle task");
  app.add_option("--backend", o->backend, "auto (default), bpf, perf, stackmap");
  app.add_option("--call-graph", o->call_graph,
                 "User stacks: bpf (the default with the BPF backend: unwind in the BPF "
                 "program from .eh_frame tables in BPF maps), dwarf[,SIZE] (the default with "
                 "--backend perf: copy SIZE bytes of stack, 16384 by default, and unwind "
                 "with .eh_frame) or fp (frame pointers; the stackmap backend's only mode)");
  app.add_flag("--bpf-unwind-verify", o->record.bpf_unwind_verify,
               "With --call-graph bpf: also copy each stack and count the samples where "
               "unwinding the copy gives another chain (testing)")
      ->group("");
  app.add_option("--bpf-table-size", o->bpf_table_size,
                 "With --call-graph bpf: kernel memory for unwind tables (default 16M, 16 "
                 "bytes a row); past it, tables are evicted and counted");
  app.add_flag("--off-cpu", o->record.off_cpu,
               "Also record where the targets wait: each interval a target thread spends "
               "off CPU (blocked or preempted), with its stacks and length (BPF backend)");
  app.add_option("--off-cpu-min-us", o->off_cpu_min_us,
                 "With --off-cpu: intervals shorter than this are counted, not stacked "
                 "(default 0)");
  app.add_option("--off-cpu-sample", o->record.off_cpu_sample,
                 "With --off-cpu: keep each interval with this probability (0 < P <= 1, "
                 "default 1); kept ones count 1/P times their length");
  app.add_flag("--off-cpu-raw-tp", o->record.off_cpu_force_raw_tp,
               "With --off-cpu: attach to sched_switch as a raw tracepoint even where the "
               "kernel's BTF allows tp_btf (testing)")
      ->group("");
  app.add_option("--ringbuf-size", o->ringbuf_size,
                 "Ring buffer size (default: a second of the largest samples at -F on "
                 "every CPU, 1M to 32M; at least 8M with --off-cpu)");
  app.add_option("--stackmap-size", o->record.stackmap_size,
                 "Entries of the stackmap backend's map (default 16384)");
  app.add_flag("--no-python", o->no_python,
               "No Python frames: leave CPython's evaluator frames as they are");
  app.add_flag("--kernel-build-ids", o->record.kernel_build_ids,
               "BPF: user frames as build ID + offset from the kernel");
}

}  // namespace stacksym::cli
