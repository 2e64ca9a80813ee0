// stacksym/agent.h — continuous profiling: one recording for the agent's whole life, cut into
// windows that are symbolized and pushed to profile stores (OTLP profiles, Pyroscope) or
// written as pprof files, while sampling goes on.
//
//   AgentOptions opts;
//   opts.record.frequency_hz = 19;
//   opts.interval_s = 10;
//   opts.otlp_urls = {"http://127.0.0.1:4318"};
//   auto agent = Agent::Create(opts);     // loads BPF once, starts the senders
//   if (!agent) return agent.error();
//   (*agent)->Run();                      // until RequestStop(): then the last window is closed
//                                         // and the queue flushed for at most shutdown_timeout_s
//
// Threads: Run's (the recorder: it only hands each closed window over), one that symbolizes
// and encodes windows, one sender per receiver, and the metrics server's. A window waits in a
// bounded queue (queue_bytes) between encoding and sending; a full queue drops its oldest request,
// counted. RequestStop() and Abort() are async-signal-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stacksym/capture.h"
#include "stacksym/result.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {

enum class AgentSymbolize : uint8_t {
  kLocal,   // the profile symbolizer, on this host (index, debug dirs, debuginfod)
  kServer,  // stacksym serve (ProfileSymbolizeOptions::server); what it cannot name, locally
  kNone,    // build ID + address only: the store symbolizes
};

struct AgentOptions {
  RecordOptions record;  // window_s is set from interval_s
  double interval_s = 10;
  AgentSymbolize symbolize = AgentSymbolize::kLocal;
  ProfileSymbolizeOptions symbolize_options;
  uint64_t symbolizer_cache_bytes = 64 << 20;  // symbolizers kept across windows

  std::vector<std::string> otlp_urls;       // POST URL/v1development/profiles
  std::vector<std::string> pyroscope_urls;  // POST URL/push.v1.PusherService/Push
  // Sent with every request to those receivers (Authorization, X-Scope-OrgID, ...). Credentials
  // in a URL (https://USER:PASSWORD@HOST) are sent as Basic authorization besides.
  std::vector<std::pair<std::string, std::string>> otlp_headers, pyroscope_headers;
  std::string ca_file;     // https: CA certificates (PEM) for the receivers; empty: the system's
  std::string output_dir;  // one pprof per window
  uint64_t output_max_bytes = uint64_t{1} << 30;

  uint64_t queue_bytes = 64 << 20;
  uint64_t max_request_bytes = 4 << 20;  // OTLP requests are split above this
  double send_timeout_s = 10;
  double shutdown_timeout_s = 10;
  std::string metrics_listen;  // HOST:PORT for GET /metrics; empty: none
  std::string service_name;    // empty: each process's executable name
  std::string host_name;       // empty: gethostname()
};

// What the agent did so far (its /metrics).
struct AgentStats {
  uint64_t windows_closed = 0;
  uint64_t windows_exported = 0;        // encoded and queued for every receiver (or written)
  uint64_t windows_empty = 0;           // without a sample of any target: not sent
  uint64_t windows_dropped_behind = 0;  // closed while 16 windows still waited for the encoder
  uint64_t samples = 0, samples_lost = 0;
  uint64_t processes_tracked = 0;  // processes in the last window
};

class Agent {
 public:
  static Result<std::unique_ptr<Agent>> Create(const AgentOptions& options);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Records until RequestStop(); then closes the last window, waits for the encoder and flushes
  // the queue (at most shutdown_timeout_s, or until Abort()).
  Result<void> Run();
  void RequestStop();
  void Abort();  // stop flushing at once (a second signal)

  // Prometheus text: samples, windows, queue, senders, CPU, RSS, BPF map bytes, processes.
  std::string RenderMetrics() const;
  // The port the metrics server listens on (0: none).
  int metrics_port() const;
  const std::vector<std::string>& notes() const;

  struct Impl;

 private:
  explicit Agent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace stacksym
