// Agent: the recorder cuts windows; an encoder thread symbolizes each (the one profile
// symbolizer, kept across windows), encodes it for every exporter and queues the requests; one
// sender per receiver delivers them. Sampling never waits for symbolization or the network.
#include "stacksym/agent.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "agent/agent_metrics.h"
#include "agent/delivery_queue.h"
#include "agent/http_sender.h"
#include "agent/output_dir.h"
#include "remote/http_transport.h"
#include "stacksym/export.h"

namespace stacksym {

using agent::DeliveryQueue;
using agent::HttpSender;
using agent::OutputDir;

namespace {

// Closed windows waiting for the encoder: at most this many; one more drops the oldest. The
// first windows of a host can take long to symbolize (each binary's index is built once), and a
// window at 19 Hz is small: room for a burst, bounded all the same.
constexpr size_t kMaxPendingWindows = 16;

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return {};
  return name;
}

Result<std::pair<std::string, int>> SplitListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 >= listen.size()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "--metrics-listen " + listen + ": expected HOST:PORT");
  }
  int port = std::atoi(listen.c_str() + colon + 1);
  if (port < 0 || port > 65535) {
    return MakeError(ErrorCode::kInvalidArgument, "--metrics-listen " + listen + ": bad port");
  }
  return std::make_pair(listen.substr(0, colon), port);
}

}  // namespace

struct Agent::Impl {
  AgentOptions options;
  std::unique_ptr<Recorder> recorder;
  std::vector<std::unique_ptr<Exporter>> exporters;  // one per destination
  std::vector<std::string> destination_urls;
  std::unique_ptr<DeliveryQueue> queue;
  std::vector<std::unique_ptr<HttpSender>> senders;
  std::optional<OutputDir> output_dir;
  std::unique_ptr<ProfileSymbolizer> symbolizer;
  std::unique_ptr<remote::HttpServer> metrics_server;
  int metrics_port = 0;
  std::vector<std::string> notes;

  // Windows between the recorder and the encoder.
  std::mutex mu;
  std::condition_variable window_ready;
  std::deque<Profile> pending;
  bool recording_done = false;
  AgentStats stats;
  RecordStats last_record_stats;
  uint64_t encode_errors = 0, output_files = 0, output_errors = 0, symbolizer_bytes = 0,
           symbolizer_peak_bytes = 0;
  std::atomic<bool> abort{false};
  std::thread encoder;

  void OnWindow(Profile&& window, const RecordStats& record) {
    std::lock_guard lock(mu);
    ++stats.windows_closed;
    last_record_stats = record;
    if (pending.size() >= kMaxPendingWindows) {
      pending.pop_front();
      ++stats.windows_dropped_behind;
    }
    pending.push_back(std::move(window));
    window_ready.notify_all();
  }

  void EncodeLoop() {
    for (;;) {
      Profile window;
      {
        std::unique_lock lock(mu);
        window_ready.wait(lock, [&] { return !pending.empty() || recording_done; });
        if (pending.empty()) return;
        window = std::move(pending.front());
        pending.pop_front();
      }
      Export(window);
      window = Profile();
      // Give the window's memory, and that of unwind tables and symbolizers dropped meanwhile,
      // back to the system: glibc keeps freed heap otherwise, and a long-lived agent's RSS
      // would be its worst moment's.
      malloc_trim(0);
    }
  }

  void Export(Profile& window) {
    if (symbolizer) symbolizer->Symbolize(window);
    ExportWindow export_window{window, window.start_time_ns,
                               window.start_time_ns + window.duration_ns, options.host_name,
                               options.service_name};
    uint64_t errors = 0;
    bool has_samples = !window.stacks.empty();
    for (size_t d = 0; d < exporters.size() && has_samples; ++d) {
      Result<std::vector<ExportRequest>> requests = exporters[d]->Encode(export_window);
      if (!requests) {
        ++errors;
        continue;
      }
      for (ExportRequest& r : *requests) queue->Push(d, std::move(r), window.start_time_ns);
    }
    bool written = false, write_failed = false;
    if (output_dir && has_samples) {
      written = output_dir->Write(window).ok();
      write_failed = !written;
    }
    std::lock_guard lock(mu);
    encode_errors += errors;
    output_files += written;
    output_errors += write_failed;
    if (!has_samples) {
      ++stats.windows_empty;
    } else if (errors == 0) {
      ++stats.windows_exported;
    }
    stats.processes_tracked = window.processes.size();
    if (symbolizer) {
      symbolizer_bytes = symbolizer->cached_bytes();
      symbolizer_peak_bytes = symbolizer->peak_cached_bytes();
    }
  }

  agent::AgentMetricsInput MetricsInput() {
    agent::AgentMetricsInput in;
    {
      std::lock_guard lock(mu);
      in.record = last_record_stats;
      in.agent = stats;
      in.encode_errors = encode_errors;
      in.output_files = output_files;
      in.output_errors = output_errors;
      in.symbolizer_cached_bytes = symbolizer_bytes;
      in.symbolizer_peak_bytes = symbolizer_peak_bytes;
    }
    in.agent.samples = in.record.samples;
    in.agent.samples_lost = in.record.lost;
    in.queue = queue->counters();
    in.queue_max_bytes = options.queue_bytes;
    for (size_t d = 0; d < senders.size(); ++d) {
      in.receivers.push_back(
          {std::string(exporters[d]->name()), senders[d]->url(), senders[d]->stats().Snapshot()});
    }
    return in;
  }

  Result<void> StartMetrics() {
    if (options.metrics_listen.empty()) return {};
    Result<std::pair<std::string, int>> where = SplitListen(options.metrics_listen);
    if (!where) return where.error();
    Result<const remote::HttpTransport*> http = remote::LoadHttpTransport();
    if (!http) return http.error();
    remote::HttpServerConfig config;
    config.threads = 1;
    config.routes.push_back(
        {"GET", "/metrics", [this](const remote::HttpRequest&, remote::HttpResponse& res) {
           res.Set(200, agent::RenderAgentMetrics(MetricsInput()), "text/plain; version=0.0.4");
         }});
    metrics_server = (*http)->new_server(config);
    metrics_port = metrics_server->Start(where->first, where->second);
    if (metrics_port <= 0) {
      return MakeError(ErrorCode::kIo,
                       "--metrics-listen " + options.metrics_listen + ": cannot listen there");
    }
    return {};
  }

  // After the last window: every queued request is tried until the deadline (or Abort).
  void Flush() {
    queue->Close();
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(options.shutdown_timeout_s));
    while (!abort.load() && std::chrono::steady_clock::now() < deadline) {
      auto slice =
          std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
      if (queue->WaitEmpty(slice)) break;
    }
    queue->Abort();
    for (auto& sender : senders) sender->Stop();
  }
};

Agent::Agent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Agent::~Agent() {
  if (!impl_) return;
  {
    std::lock_guard lock(impl_->mu);
    impl_->recording_done = true;
    impl_->window_ready.notify_all();
  }
  if (impl_->encoder.joinable()) impl_->encoder.join();
  if (impl_->queue) impl_->queue->Abort();
  impl_->senders.clear();
  if (impl_->metrics_server) impl_->metrics_server->Stop();
}

Result<std::unique_ptr<Agent>> Agent::Create(const AgentOptions& given) {
  auto impl = std::make_unique<Impl>();
  AgentOptions& o = impl->options;
  o = given;
  if (!(o.interval_s >= 0.1 && o.interval_s <= 3600)) {
    return MakeError(ErrorCode::kInvalidArgument, "--interval must be 0.1 to 3600 seconds");
  }
  if (o.otlp_urls.empty() && o.pyroscope_urls.empty() && o.output_dir.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "nowhere to send profiles: give --otlp URL, --pyroscope URL or --output-dir");
  }
  if (o.host_name.empty()) o.host_name = HostName();
  o.record.window_s = o.interval_s;
  o.record.duration_s = 0;
  // Within a fleet profiler's memory budget on a build host too, where every compiler run
  // brings libLLVM's or cc1plus's tables. A table is read only to copy it into the BPF rows
  // map the first time its build ID is seen (BpfUnwindLoader::Table): the persisted copies
  // are read again when needed (16 MiB: the heap profile of a build host showed this cache,
  // at 48 MiB, as the agent's largest peak).
  o.record.unwind_tables_memory_bytes =
      std::min<uint64_t>(o.record.unwind_tables_memory_bytes, uint64_t{16} << 20);
  // Destinations first: a bad URL is said before BPF is loaded.
  OtlpExportOptions otlp;
  otlp.max_request_bytes = o.max_request_bytes;
  for (const std::string& url : o.otlp_urls) {
    impl->exporters.push_back(MakeOtlpExporter(otlp));
    impl->destination_urls.push_back(url);
  }
  for (const std::string& url : o.pyroscope_urls) {
    impl->exporters.push_back(MakePyroscopeExporter({}));
    impl->destination_urls.push_back(url);
  }
  impl->queue = std::make_unique<DeliveryQueue>(o.queue_bytes, impl->exporters.size());
  agent::HttpSenderOptions sender_options;
  sender_options.timeout_s = o.send_timeout_s;
  sender_options.ca_file = o.ca_file;
  for (size_t d = 0; d < impl->destination_urls.size(); ++d) {
    // Destinations are the OTLP URLs, then the Pyroscope ones.
    sender_options.headers = d < o.otlp_urls.size() ? o.otlp_headers : o.pyroscope_headers;
    Result<std::unique_ptr<HttpSender>> sender = HttpSender::Start(
        impl->destination_urls[d], d, impl->queue.get(), sender_options, impl->exporters[d].get());
    if (!sender) return sender.error();
    impl->senders.push_back(std::move(*sender));
  }
  if (!o.output_dir.empty()) {
    Result<OutputDir> dir = OutputDir::Open(o.output_dir, o.output_max_bytes);
    if (!dir) return dir.error();
    impl->output_dir = std::move(*dir);
  }
  if (o.symbolize != AgentSymbolize::kNone) {
    if (o.symbolize == AgentSymbolize::kLocal) o.symbolize_options.server.reset();
    impl->symbolizer =
        std::make_unique<ProfileSymbolizer>(o.symbolize_options, o.symbolizer_cache_bytes);
  }
  if (Result<void> metrics = impl->StartMetrics(); !metrics) return metrics.error();
  Result<std::unique_ptr<Recorder>> recorder = Recorder::Create(o.record);
  if (!recorder) return recorder.error();
  impl->recorder = std::move(*recorder);
  impl->notes = impl->recorder->notes();
  return std::unique_ptr<Agent>(new Agent(std::move(impl)));
}

Result<void> Agent::Run() {
  Impl& impl = *impl_;
  impl.encoder = std::thread([&impl] { impl.EncodeLoop(); });
  Result<void> run = impl.recorder->Run({}, [&impl](Profile&& window, const RecordStats& stats) {
    impl.OnWindow(std::move(window), stats);
  });
  {
    std::lock_guard lock(impl.mu);
    impl.last_record_stats = impl.recorder->stats();
    impl.recording_done = true;
    impl.window_ready.notify_all();
  }
  impl.encoder.join();
  impl.Flush();
  for (const std::string& note : impl.recorder->notes()) {
    if (std::find(impl.notes.begin(), impl.notes.end(), note) == impl.notes.end()) {
      impl.notes.push_back(note);
    }
  }
  return run;
}

void Agent::RequestStop() {
  if (impl_ && impl_->recorder) impl_->recorder->RequestStop();
}

void Agent::Abort() {
  if (impl_) impl_->abort.store(true);
}

std::string Agent::RenderMetrics() const {
  return agent::RenderAgentMetrics(impl_->MetricsInput());
}

int Agent::metrics_port() const { return impl_->metrics_port; }

const std::vector<std::string>& Agent::notes() const { return impl_->notes; }

}  // namespace stacksym
