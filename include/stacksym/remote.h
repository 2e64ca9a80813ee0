// stacksym/remote.h — symbolization beyond one machine: debug files fetched from debuginfod,
// an HTTP symbolization server, and the client that symbolizes a profile through one.
//
//   // 1. debuginfod as one more source of files by build ID ($DEBUGINFOD_URLS, its cache
//   //    $DEBUGINFOD_CACHE_PATH); null when no server is configured.
//   SymbolizeOptions opts;
//   opts.fetcher = MakeDebuginfodFetcher({});
//
//   // 2. A server: POST /v1/symbolize (docs/remote.md), GET /healthz, GET /metrics, the
//   //    debuginfod API, and the OTLP and Pyroscope symbolizing proxies.
//   SymbolServerOptions so;
//   so.debug_dirs = {"/srv/debug"};
//   auto server = SymbolServer::Start("127.0.0.1", 0, so);   // port 0: any free port
//   printf("%d\n", (*server)->port());
//   (*server)->Stop();
//
//   // 3. A client: the profile symbolizer asks the server first (symbolize_profile.h).
//   ProfileSymbolizeOptions po;
//   po.server = *ConnectSymbolServer("http://127.0.0.1:8000");
//   SymbolizeProfile(profile, po);
//
// Thread-safety: the fetcher and the server are used from any thread; a server backend by one
// thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stacksym/build_id_fetcher.h"
#include "stacksym/debug_dirs.h"
#include "stacksym/result.h"
#include "stacksym/symbolize_profile.h"

namespace stacksym {

struct DebuginfodOptions {
  // A fetch that has not finished after this long is abandoned with a reason (a server that
  // accepts connections but never answers cannot hang a command).
  double timeout_seconds = 30;
  // Show progress on stderr for downloads that take more than a moment (only when stderr is
  // a terminal).
  bool progress = true;
};

// What a fetcher has done so far (for /metrics and summaries).
struct DebuginfodCounters {
  std::atomic<uint64_t> fetches{0};   // Fetch() calls
  std::atomic<uint64_t> found{0};     // answered with a file (downloaded or from its cache)
  std::atomic<uint64_t> missing{0};   // no server has it
  std::atomic<uint64_t> failures{0};  // server down, slow, or another error
};

// A fetcher through elfutils' libdebuginfod, or null when $DEBUGINFOD_URLS is unset or empty.
// `counters` (optional) must outlive the fetcher.
std::shared_ptr<const BuildIdFetcher> MakeDebuginfodFetcher(const DebuginfodOptions& options,
                                                            DebuginfodCounters* counters = nullptr);

struct SymbolServerOptions {
  std::vector<std::string> debug_dirs = {kDefaultDebugDir};
  std::shared_ptr<const BuildIdFetcher> fetcher;   // asked when no debug dir has a build ID
  DebuginfodCounters* fetcher_counters = nullptr;  // reported by /metrics when set
  unsigned threads = 8;                            // HTTP worker threads
  size_t max_body_bytes = 8 << 20;                 // larger request bodies get 413
  size_t max_offsets = 100000;                     // per request (400 beyond)
  unsigned max_concurrent = 64;                    // requests being symbolized at once (503 beyond)
  double request_timeout_seconds = 30;             // symbolizing one request (503 beyond)
  double read_timeout_seconds = 5;                 // a client that sends slower is cut off
  unsigned keep_alive_seconds = 5;                 // an idle connection is closed after this
  size_t cache_bytes = size_t{1} << 30;            // parsed files kept across requests
  unsigned symbolize_threads = 0;                  // per batch (0: one per CPU)
  // Persisted symbol indexes (symbol_cache.h), shared with the other commands; empty: none.
  // A file opened again after eviction is then answered from its index in milliseconds.
  std::string index_cache_dir;
  // The symbolizing proxies (docs/remote.md): POST /v1development/profiles (OTLP) and POST
  // /push.v1.PusherService/Push (Pyroscope) get their native frames named and are sent on to
  // these URLs (http://HOST[:PORT][/PREFIX]), whose answer goes back to the client; empty: the
  // symbolized request is the answer.
  std::string otlp_forward;
  std::string pyroscope_forward;
  size_t max_proxy_body_bytes = size_t{64} << 20;  // on the wire and inflated (413 beyond)
  double proxy_symbolize_seconds = 10;  // naming one request's frames; the rest stay unnamed
  double forward_timeout_seconds = 30;  // the downstream's answer (503 beyond)
};

class SymbolServer {
 public:
  // Binds host:port (port 0: a free one) and serves on background threads.
  static Result<std::unique_ptr<SymbolServer>> Start(const std::string& host, int port,
                                                     const SymbolServerOptions& options);
  ~SymbolServer();  // stops
  int port() const;
  // Stops accepting and lets the requests being served finish; idempotent, any thread.
  void Stop();
  // Blocks until the server has stopped (after Stop() from another thread); one caller.
  void Wait();

  class Impl;

 private:
  explicit SymbolServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct SymbolServerClientOptions {
  size_t batch_offsets = 20000;  // offsets per request
  double timeout_seconds = 120;  // per request
};

// The client of a `stacksym serve` at `url` ("http://host:port"), as the profile symbolizer's
// server backend (ProfileSymbolizeOptions::server): a pass's distinct (build ID, file offset)
// pairs go to it in batches, and its answers are the ones a local symbolization with the
// server's files gives. Error when the URL is invalid or the HTTP module cannot be loaded; an
// unreachable server is found out (and reported) at the first request.
Result<std::shared_ptr<FrameSymbolBackend>> ConnectSymbolServer(
    const std::string& url, const SymbolServerClientOptions& options = {});

}  // namespace stacksym
