// `stacksym agent` — profile continuously: one BPF load for the agent's life, windows of
// --interval seconds, each symbolized and pushed to OTLP / Pyroscope receivers or written as
// pprof files, through a bounded delivery queue; SIGTERM flushes and exits 0.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "capture_options.h"
#include "command.h"
#include "profile_symbolize_options.h"
#include "remote/http_url.h"
#include "stacksym/agent.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_agent {
namespace {

struct Options {
  CaptureCliOptions capture;
  AgentOptions agent;
  std::vector<std::string> symbolize_mode = {"local"};
  ProfileSymbolizeCliOptions symbolize;
  std::string queue_bytes = "64M";
  std::string max_request_bytes = "4M";
  std::string output_max_bytes = "1G";
  std::vector<std::string> otlp_headers, pyroscope_headers;  // "Name: value"
  bool quiet = false;
};

std::atomic<Agent*> g_agent{nullptr};
std::atomic<int64_t> g_first_signal_ns{0};  // 0: no signal yet

// A second signal within this of the first is the same request delivered twice: GNU timeout
// signals its child and then its whole process group, and so may a supervisor. (The two often
// merge into one pending signal, but not always: a 30-s bench run lost its final metrics so.)
constexpr int64_t kRepeatedSignalNs = 1'000'000'000;

int64_t MonotonicNsForSignal() {  // clock_gettime is async-signal-safe
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// The first signal stops sampling and flushes; a second one, a second later or more, exits at
// once.
void OnSignal(int) {
  const int64_t now = MonotonicNsForSignal();
  int64_t first = 0;
  if (g_first_signal_ns.compare_exchange_strong(first, now)) {
    if (Agent* a = g_agent.load()) a->RequestStop();
  } else if (now - first >= kRepeatedSignalNs) {
    _exit(1);
  }
}

Result<void> Resolve(Options& o) {
  auto usage = [](std::string m) { return MakeError(ErrorCode::kInvalidArgument, std::move(m)); };
  if (Result<void> ok = o.capture.Resolve(); !ok) return ok;
  if (!o.capture.record.command.empty()) return usage("the agent samples processes, not a command");
  o.agent.record = o.capture.record;
  const std::string& mode = o.symbolize_mode.empty() ? "local" : o.symbolize_mode[0];
  if (mode == "local" && o.symbolize_mode.size() == 1) {
    o.agent.symbolize = AgentSymbolize::kLocal;
  } else if (mode == "none" && o.symbolize_mode.size() == 1) {
    o.agent.symbolize = AgentSymbolize::kNone;
  } else if (mode == "server" && o.symbolize_mode.size() == 2) {
    o.agent.symbolize = AgentSymbolize::kServer;
    o.symbolize.server = o.symbolize_mode[1];
  } else {
    return usage("--symbolize takes local, none, or server URL");
  }
  if (!o.symbolize.server.empty()) o.agent.symbolize = AgentSymbolize::kServer;
  o.agent.record.unwind_cache_dir = o.symbolize.cache.Resolve();
  if (o.agent.symbolize != AgentSymbolize::kNone) {
    Result<ProfileSymbolizeOptions> symbolize = o.symbolize.Resolve();
    if (!symbolize) return symbolize.error();
    o.agent.symbolize_options = std::move(*symbolize);
    // A long-lived process keeps no DWARF beside an index it built (hundreds of MB).
    o.agent.symbolize_options.symbolize.keep_dwarf_after_index_build = false;
    // One thread: an agent's symbolization (and the index builds of new binaries) runs beside
    // the host's work, not on all its cores at once, and each thread's working set of a build
    // is memory the agent would hold at its peak.
    o.agent.symbolize_options.symbolize.threads = 1;
  }
  for (auto [given, out] : {std::pair{&o.otlp_headers, &o.agent.otlp_headers},
                            std::pair{&o.pyroscope_headers, &o.agent.pyroscope_headers}}) {
    for (const std::string& text : *given) {
      Result<std::pair<std::string, std::string>> header = remote::ParseHeaderArgument(text);
      if (!header) return header.error();
      out->push_back(std::move(*header));
    }
  }
  struct Size {
    const std::string* text;
    uint64_t* out;
    const char* flag;
  };
  for (Size s : {Size{&o.queue_bytes, &o.agent.queue_bytes, "--queue-bytes"},
                 Size{&o.max_request_bytes, &o.agent.max_request_bytes, "--max-request-bytes"},
                 Size{&o.output_max_bytes, &o.agent.output_max_bytes, "--output-max-bytes"}}) {
    if (!ParseByteSize(*s.text, s.out) || *s.out == 0) {
      return usage(std::string("bad ") + s.flag + " '" + *s.text + "' (e.g. 64M, 512K)");
    }
  }
  return {};
}

int RunAgent(Options& o) {
  if (Result<void> ok = Resolve(o); !ok) {
    std::fprintf(stderr, "stacksym agent: %s\n", ok.error().message.c_str());
    return kExitUsage;
  }
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  Result<std::unique_ptr<Agent>> agent = Agent::Create(o.agent);
  if (!agent) {
    std::fprintf(stderr, "stacksym agent: %s\n", agent.error().ToString().c_str());
    return kExitBadInput;
  }
  for (const std::string& note : (*agent)->notes()) {
    std::fprintf(stderr, "stacksym agent: %s\n", note.c_str());
  }
  if (!o.quiet) {
    std::fprintf(stderr, "stacksym agent: sampling at %u Hz, windows of %g s", o.capture.frequency,
                 o.agent.interval_s);
    if ((*agent)->metrics_port() > 0) {
      std::fprintf(stderr, "; metrics on port %d", (*agent)->metrics_port());
    }
    std::fprintf(stderr, "\n");
  }
  g_agent.store(agent->get());
  if (g_first_signal_ns.load() != 0) (*agent)->RequestStop();
  Result<void> run = (*agent)->Run();
  g_agent.store(nullptr);
  if (!o.quiet) std::fputs((*agent)->RenderMetrics().c_str(), stderr);
  if (!run) {
    std::fprintf(stderr, "stacksym agent: %s\n", run.error().ToString().c_str());
    return kExitBadInput;
  }
  return kExitOk;
}

CommandRegistrar registrar(
    "agent",
    "Profile continuously: windows pushed to OTLP / Pyroscope receivers or written as pprof",
    [](CLI::App& app) -> CommandRun {
      auto o = std::make_shared<Options>();
      AddCaptureOptions(app, &o->capture, /*default_frequency=*/19);
      app.add_option("--interval", o->agent.interval_s,
                     "Seconds per window (default 10): each is exported while sampling goes on");
      app.add_option("--otlp", o->agent.otlp_urls,
                     "OTLP/HTTP receiver: POST URL/v1development/profiles (repeatable)");
      app.add_option("--pyroscope", o->agent.pyroscope_urls,
                     "Pyroscope: POST URL/push.v1.PusherService/Push (repeatable)");
      app.add_option("--otlp-header", o->otlp_headers,
                     "'Name: value' sent with every OTLP request (repeatable): Authorization, ...");
      app.add_option("--pyroscope-header", o->pyroscope_headers,
                     "'Name: value' sent with every push (repeatable): X-Scope-OrgID, ...");
      app.add_option("--ca-file", o->agent.ca_file,
                     "https: the receivers' CA certificates (PEM; default: the system's). "
                     "Credentials in a URL (https://USER:PASSWORD@HOST) go as Basic authorization");
      app.add_option("--output-dir", o->agent.output_dir, "Write one pprof file per window here");
      app.add_option("--output-max-bytes", o->output_max_bytes,
                     "Bytes of pprof files kept in --output-dir; the oldest go (default 1G)");
      app.add_option("--symbolize", o->symbolize_mode,
                     "local (default: on this host), server URL (stacksym serve), or none "
                     "(build ID + address: the store symbolizes)")
          ->expected(1, 2);
      app.add_option("--queue-bytes", o->queue_bytes,
                     "Bound of the delivery queue (default 64M); when full, the oldest request "
                     "is dropped");
      app.add_option("--max-request-bytes", o->max_request_bytes,
                     "OTLP requests are split above this size (default 4M)");
      app.add_option("--send-timeout", o->agent.send_timeout_s,
                     "Seconds to wait for a receiver's answer before trying again (default 10)");
      app.add_option("--shutdown-timeout", o->agent.shutdown_timeout_s,
                     "On SIGTERM, seconds to flush the queue (default 10)");
      app.add_option("--metrics-listen", o->agent.metrics_listen,
                     "Serve Prometheus metrics at http://HOST:PORT/metrics");
      app.add_option("--service-name", o->agent.service_name,
                     "service.name / service_name of every process (default: its executable's "
                     "name)");
      app.add_option("--host-name", o->agent.host_name, "host.name (default: this host's name)");
      app.add_flag("-q,--quiet", o->quiet, "No start line or final metrics");
      AddProfileSymbolizeOptions(app, &o->symbolize, /*default_kallsyms=*/"/proc/kallsyms");
      return [o] { return RunAgent(*o); };
    });

}  // namespace
}  // namespace stacksym::cli::cmd_agent
