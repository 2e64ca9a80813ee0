// `stacksym serve --listen HOST:PORT` — the symbolization server (docs/remote.md): build IDs
// and file offsets in, frames out, from local debug dirs and debuginfod.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cache_options.h"
#include "command.h"
#include "debug_dir_options.h"
#include "stacksym/remote.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_serve {
namespace {

struct ServeArgs {
  std::string listen;
  DebugDirCliOptions debug_dirs;
  CacheCliOptions index_cache;
  std::string debuginfod_cache;
  bool no_debuginfod = false;
  unsigned threads = 8;
  size_t max_body = 8 << 20;
  size_t max_offsets = 100000;
  unsigned max_concurrent = 0;
  double request_timeout = 30;
  double read_timeout = 5;
  size_t cache_mb = 1024;
  double exit_after = 0;
  std::string otlp_forward;
  std::string pyroscope_forward;
  size_t max_proxy_body = size_t{64} << 20;
  double proxy_timeout = 10;
  double forward_timeout = 30;
};

int RunServe(const ServeArgs& args) {
  constexpr const char* kName = "stacksym serve";
  size_t colon = args.listen.rfind(':');
  int port = -1;
  if (colon != std::string::npos && colon + 1 < args.listen.size()) {
    char* end = nullptr;
    long p = std::strtol(args.listen.c_str() + colon + 1, &end, 10);
    if (*end == '\0' && p >= 0 && p <= 65535) port = static_cast<int>(p);
  }
  if (port < 0 || colon == 0) {
    std::fprintf(stderr, "%s: --listen wants HOST:PORT, got '%s'\n", kName, args.listen.c_str());
    return kExitUsage;
  }
  std::string host = args.listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }

  // Before any thread exists: libdebuginfod reads its cache path from the environment.
  if (!args.debuginfod_cache.empty()) {
    setenv("DEBUGINFOD_CACHE_PATH", args.debuginfod_cache.c_str(), 1);
  }
  // SIGINT/SIGTERM are taken by a thread (sigwait) that stops the server cleanly.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  SymbolServerOptions options;
  options.debug_dirs = args.debug_dirs.Resolve(options.debug_dirs);
  auto counters = std::make_unique<DebuginfodCounters>();
  if (!args.no_debuginfod) {
    DebuginfodOptions d;
    d.progress = false;  // a server has no terminal to show it on
    options.fetcher = MakeDebuginfodFetcher(d, counters.get());
    options.fetcher_counters = counters.get();
  }
  options.threads = args.threads;
  options.max_body_bytes = args.max_body;
  options.max_offsets = args.max_offsets;
  options.max_concurrent = args.max_concurrent == 0 ? args.threads : args.max_concurrent;
  options.request_timeout_seconds = args.request_timeout;
  options.read_timeout_seconds = args.read_timeout;
  options.cache_bytes = args.cache_mb << 20;
  options.index_cache_dir = args.index_cache.Resolve();
  options.otlp_forward = args.otlp_forward;
  options.pyroscope_forward = args.pyroscope_forward;
  options.max_proxy_body_bytes = args.max_proxy_body;
  options.proxy_symbolize_seconds = args.proxy_timeout;
  options.forward_timeout_seconds = args.forward_timeout;

  Result<std::unique_ptr<SymbolServer>> server = SymbolServer::Start(host, port, options);
  if (!server) {
    std::fprintf(stderr, "%s: %s\n", kName, server.error().ToString().c_str());
    return kExitBadInput;
  }
  SymbolServer* s = server->get();
  std::printf("listening on http://%s:%d\n",
              host.find(':') != std::string::npos ? ("[" + host + "]").c_str() : host.c_str(),
              s->port());
  std::fflush(stdout);
  std::fprintf(stderr, "%s: debug dirs:", kName);
  for (const std::string& d : options.debug_dirs) std::fprintf(stderr, " %s", d.c_str());
  const char* urls = options.fetcher ? std::getenv("DEBUGINFOD_URLS") : nullptr;
  std::fprintf(stderr, "; debuginfod: %s; symbol index cache: %s\n",
               options.fetcher ? (urls ? urls : "(DEBUGINFOD_URLS unset)") : "off",
               options.index_cache_dir.empty() ? "off" : options.index_cache_dir.c_str());
  std::fprintf(stderr, "%s: OTLP proxy forwards to %s; Pyroscope proxy forwards to %s\n", kName,
               args.otlp_forward.empty() ? "(none: answers)" : args.otlp_forward.c_str(),
               args.pyroscope_forward.empty() ? "(none: answers)" : args.pyroscope_forward.c_str());

  std::thread stopper([s, stop_signals, exit_after = args.exit_after] {
    if (exit_after > 0) {
      timespec wait{static_cast<time_t>(exit_after),
                    static_cast<long>(
                        (exit_after - static_cast<double>(static_cast<time_t>(exit_after))) * 1e9)};
      sigtimedwait(&stop_signals, nullptr, &wait);
    } else {
      int signal = 0;
      sigwait(&stop_signals, &signal);
    }
    s->Stop();
  });
  s->Wait();
  // Stopped by a signal or --exit-after; a stopper still waiting gets a signal to end.
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  std::fprintf(stderr, "%s: stopped\n", kName);
  return kExitOk;
}

CommandRegistrar registrar(
    "serve", "Serve symbolization over HTTP: build IDs and file offsets in, frames out",
    [](CLI::App& app) -> CommandRun {
      auto args = std::make_shared<ServeArgs>();
      app.add_option("--listen", args->listen, "HOST:PORT to listen on (port 0: any free port)")
          ->required();
      AddDebugDirOptions(app, &args->debug_dirs);
      AddCacheOptions(app, &args->index_cache);
      app.add_option("--debuginfod-cache", args->debuginfod_cache,
                     "debuginfod download cache (default $DEBUGINFOD_CACHE_PATH, else "
                     "~/.cache/debuginfod_client)");
      app.add_flag("--no-debuginfod", args->no_debuginfod,
                   "do not fetch missing files from the servers in $DEBUGINFOD_URLS");
      app.add_option("--threads", args->threads, "HTTP worker threads (default 8)")
          ->check(CLI::Range(1u, 1024u));
      app.add_option("--max-body", args->max_body, "largest request body in bytes (default 8 MiB)");
      app.add_option("--max-offsets", args->max_offsets,
                     "most offsets in one request (default 100000)");
      app.add_option("--max-concurrent", args->max_concurrent,
                     "requests symbolized at once, 503 beyond (default: --threads)");
      app.add_option("--request-timeout", args->request_timeout,
                     "seconds one request may take (default 30)");
      app.add_option("--read-timeout", args->read_timeout,
                     "seconds a client may pause while sending (default 5)");
      app.add_option("--cache-mb", args->cache_mb,
                     "MiB of parsed files kept across requests (default 1024)");
      app.add_option(
          "--otlp-forward", args->otlp_forward,
          "send POST /v1development/profiles (OTLP), symbolized, on to this URL "
          "(http://HOST:PORT[/PREFIX]); without it the answer is the symbolized request");
      app.add_option("--pyroscope-forward", args->pyroscope_forward,
                     "send POST /push.v1.PusherService/Push (Pyroscope), symbolized, on to this "
                     "URL; without it the answer is the symbolized request");
      app.add_option("--max-proxy-body", args->max_proxy_body,
                     "largest OTLP or Push request in bytes, on the wire and inflated "
                     "(default 64 MiB)");
      app.add_option("--proxy-timeout", args->proxy_timeout,
                     "seconds to name one proxied request's frames; the rest are sent on "
                     "unnamed (default 10)");
      app.add_option("--forward-timeout", args->forward_timeout,
                     "seconds to wait for the downstream's answer (default 30)");
      app.add_option("--exit-after", args->exit_after,
                     "stop by itself after this many seconds (tests, benchmarks)");
      return [args] { return RunServe(*args); };
    });

}  // namespace
}  // namespace stacksym::cli::cmd_serve
