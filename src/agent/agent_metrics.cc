#include "agent/agent_metrics.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "remote/prometheus_text.h"

namespace stacksym::agent {
namespace {

using remote::PrometheusHelp;
using remote::PrometheusLabelValue;
using remote::PrometheusLine;

void Metric(std::string* out, const char* name, const char* type, const char* help, double value) {
  PrometheusHelp(out, name, type, help);
  PrometheusLine(out, name, "", value);
}

std::string ReceiverLabels(const ReceiverMetrics& r, const std::string& extra = "") {
  return "{exporter=\"" + r.exporter + "\",url=\"" + PrometheusLabelValue(r.url) + "\"" + extra +
         "}";
}

// Counters with one series per receiver (and per reason, for the by-reason maps).
void Receivers(std::string* out, const std::vector<ReceiverMetrics>& receivers) {
  PrometheusHelp(out, "stacksym_agent_requests_sent_total", "counter",
                 "Requests a receiver accepted (2xx).");
  for (const ReceiverMetrics& r : receivers) {
    PrometheusLine(out, "stacksym_agent_requests_sent_total", ReceiverLabels(r),
                   static_cast<double>(r.counts.sent));
  }
  PrometheusHelp(out, "stacksym_agent_sent_bytes_total", "counter",
                 "Bytes of request bodies accepted, as sent (compressed).");
  for (const ReceiverMetrics& r : receivers) {
    PrometheusLine(out, "stacksym_agent_sent_bytes_total", ReceiverLabels(r),
                   static_cast<double>(r.counts.sent_bytes));
  }
  PrometheusHelp(out, "stacksym_agent_sent_samples_total", "counter",
                 "Samples and off-CPU intervals in accepted requests.");
  for (const ReceiverMetrics& r : receivers) {
    PrometheusLine(out, "stacksym_agent_sent_samples_total", ReceiverLabels(r),
                   static_cast<double>(r.counts.sent_samples));
  }
  PrometheusHelp(out, "stacksym_agent_requests_partial_total", "counter",
                 "Requests accepted with part of them rejected (counted, not retried).");
  for (const ReceiverMetrics& r : receivers) {
    PrometheusLine(out, "stacksym_agent_requests_partial_total", ReceiverLabels(r),
                   static_cast<double>(r.counts.partial));
  }
  PrometheusHelp(out, "stacksym_agent_requests_retried_total", "counter",
                 "Attempts that will be tried again (429, 502, 503, 504, no answer), by reason.");
  for (const ReceiverMetrics& r : receivers) {
    for (const auto& [reason, n] : r.counts.retried) {
      PrometheusLine(out, "stacksym_agent_requests_retried_total",
                     ReceiverLabels(r, ",reason=\"" + reason + "\""), static_cast<double>(n));
    }
  }
  PrometheusHelp(out, "stacksym_agent_requests_dropped_total", "counter",
                 "Requests given up (another 4xx or 5xx, shutdown), by reason.");
  for (const ReceiverMetrics& r : receivers) {
    for (const auto& [reason, n] : r.counts.dropped) {
      PrometheusLine(out, "stacksym_agent_requests_dropped_total",
                     ReceiverLabels(r, ",reason=\"" + reason + "\""), static_cast<double>(n));
    }
  }
  PrometheusHelp(out, "stacksym_agent_send_seconds", "summary", "Time each attempt took.");
  for (const ReceiverMetrics& r : receivers) {
    PrometheusLine(out, "stacksym_agent_send_seconds_sum", ReceiverLabels(r),
                   r.counts.attempt_seconds);
    PrometheusLine(out, "stacksym_agent_send_seconds_count", ReceiverLabels(r),
                   static_cast<double>(r.counts.attempts));
  }
  PrometheusHelp(out, "stacksym_agent_send_last_seconds", "gauge", "Time the last attempt took.");
  for (const ReceiverMetrics& r : receivers) {
    PrometheusLine(out, "stacksym_agent_send_last_seconds", ReceiverLabels(r),
                   r.counts.last_attempt_seconds);
  }
}

}  // namespace

std::string RenderAgentMetrics(const AgentMetricsInput& in) {
  std::string out;
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  Metric(&out, "stacksym_agent_samples_total", "counter", "Samples taken of the targets.",
         d(in.record.samples));
  Metric(&out, "stacksym_agent_samples_lost_total", "counter",
         "Samples lost before user space read them (ring buffer full).", d(in.record.lost));
  Metric(&out, "stacksym_agent_samples_late_total", "counter",
         "Samples read after their window closed (kept in the next window, at its start).",
         d(in.record.late_samples));
  Metric(&out, "stacksym_agent_off_cpu_intervals_total", "counter",
         "Off-CPU intervals recorded with their stacks.", d(in.record.off_cpu.recorded));
  Metric(&out, "stacksym_agent_off_cpu_intervals_dropped_total", "counter",
         "Off-CPU intervals lost on the way (ring buffer full).", d(in.record.off_cpu.dropped));
  Metric(&out, "stacksym_agent_windows_closed_total", "counter", "Windows closed.",
         d(in.agent.windows_closed));
  Metric(&out, "stacksym_agent_windows_exported_total", "counter",
         "Windows encoded and queued for every receiver (or written to --output-dir).",
         d(in.agent.windows_exported));
  Metric(&out, "stacksym_agent_windows_empty_total", "counter",
         "Windows without a sample of any target (not sent).", d(in.agent.windows_empty));
  PrometheusHelp(&out, "stacksym_agent_windows_dropped_total", "counter",
                 "Windows dropped before they were queued, by reason.");
  PrometheusLine(&out, "stacksym_agent_windows_dropped_total", "{reason=\"encoder_behind\"}",
                 d(in.agent.windows_dropped_behind));
  PrometheusLine(&out, "stacksym_agent_windows_dropped_total", "{reason=\"encode_error\"}",
                 d(in.encode_errors));
  PrometheusHelp(&out, "stacksym_agent_queue_dropped_total", "counter",
                 "Requests dropped from the delivery queue, by reason.");
  PrometheusLine(&out, "stacksym_agent_queue_dropped_total", "{reason=\"full\"}",
                 d(in.queue.dropped_full));
  PrometheusLine(&out, "stacksym_agent_queue_dropped_total", "{reason=\"too_big\"}",
                 d(in.queue.dropped_too_big));
  PrometheusLine(&out, "stacksym_agent_queue_dropped_total", "{reason=\"shutdown\"}",
                 d(in.queue.dropped_shutdown));
  Metric(&out, "stacksym_agent_queue_bytes", "gauge", "Bytes of requests queued or being sent.",
         d(in.queue.bytes));
  Metric(&out, "stacksym_agent_queue_max_bytes", "gauge", "The queue's bound (--queue-bytes).",
         d(in.queue_max_bytes));
  Metric(&out, "stacksym_agent_queue_requests", "gauge", "Requests queued or being sent.",
         d(in.queue.requests));
  Receivers(&out, in.receivers);
  Metric(&out, "stacksym_agent_output_files_total", "counter",
         "pprof files written to --output-dir.", d(in.output_files));
  Metric(&out, "stacksym_agent_output_errors_total", "counter",
         "Windows that could not be written to --output-dir.", d(in.output_errors));
  Metric(&out, "stacksym_agent_processes_tracked", "gauge",
         "Processes with samples in the last window.", d(in.agent.processes_tracked));
  Metric(&out, "stacksym_agent_symbolizer_cache_bytes", "gauge",
         "Memory of the symbolizers kept across windows.", d(in.symbolizer_cached_bytes));
  Metric(&out, "stacksym_agent_symbolizer_cache_peak_bytes", "gauge",
         "The most the kept symbolizers held while the last window was symbolized.",
         d(in.symbolizer_peak_bytes));
  Metric(&out, "stacksym_agent_bpf_unwind_rows_bytes", "gauge",
         "Kernel memory of the unwind-table rows map in use.", d(in.record.bpf_rows_map_bytes));
  Metric(&out, "process_cpu_seconds_total", "counter", "User and system CPU time of the agent.",
         SelfCpuSeconds());
  Metric(&out, "process_resident_memory_bytes", "gauge", "Resident memory of the agent.",
         d(SelfResidentBytes()));
  Metric(&out, "stacksym_agent_bpf_map_bytes", "gauge",
         "Kernel memory of the agent's BPF maps (their memlock).", d(SelfBpfMapBytes()));
  return out;
}

double SelfCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

uint64_t SelfResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long pages = 0, resident = 0;
  int n = std::fscanf(f, "%llu %llu", &pages, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

uint64_t SelfBpfMapBytes() {
  DIR* dir = opendir("/proc/self/fdinfo");
  if (!dir) return 0;
  uint64_t total = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string path = std::string("/proc/self/fdinfo/") + e->d_name;
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) continue;
    char line[256];
    bool map = false;
    uint64_t memlock = 0;
    while (std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, "map_type:", 9) == 0) map = true;
      unsigned long long v;
      if (std::sscanf(line, "memlock: %llu", &v) == 1) memlock = v;
    }
    std::fclose(f);
    if (map) total += memlock;
  }
  closedir(dir);
  return total;
}

}  // namespace stacksym::agent
