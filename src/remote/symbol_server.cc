// `stacksym serve`: SymbolService over HTTP/1.1 (cpp-httplib, through http_transport.h) with
// limits, the debuginfod web API over the same files (debuginfod_api.h), the OTLP and
// Pyroscope symbolizing proxies (proxy_route.h), and metrics.
#include <algorithm>
#include <atomic>
#include <chrono>

#include "remote/debuginfod_api.h"
#include "remote/http_transport.h"
#include "remote/metrics.h"
#include "remote/otlp_proxy.h"
#include "remote/proxy_forwarder.h"
#include "remote/proxy_route.h"
#include "remote/pyroscope_proxy.h"
#include "remote/rpc_status.h"
#include "remote/symbol_service.h"
#include "remote/symbolize_api.h"
#include "stacksym/remote.h"

namespace stacksym {

using remote::HttpRequest;
using remote::HttpResponse;
using remote::HttpServerConfig;
using remote::ServerMetrics;
using remote::SymbolService;
using remote::SymbolServiceOptions;

class SymbolServer::Impl {
 public:
  Impl(const SymbolServerOptions& options, const remote::HttpTransport& http)
      : options_(options),
        service_(ToServiceOptions(options)),
        files_{options.debug_dirs, options.fetcher},
        http_(http) {}

  ~Impl() {
    Stop();
    Wait();
  }

  Result<int> Bind(const std::string& host, int port) {
    for (auto [url, forwarder] : {std::pair{&options_.otlp_forward, &otlp_forward_},
                                  std::pair{&options_.pyroscope_forward, &pyroscope_forward_}}) {
      if (url->empty()) continue;
      auto f = remote::ProxyForwarder::Create(*url, http_, options_.forward_timeout_seconds);
      if (!f) return f.error();
      *forwarder = *std::move(f);
    }
    server_ = http_.new_server(Configure());
    int bound = server_->Start(host, port);
    if (bound <= 0) {
      return MakeError(ErrorCode::kIo, "cannot listen on " + host + ":" + std::to_string(port));
    }
    port_ = bound;
    return bound;
  }

  // Safe from any thread; the listening thread ends after the requests being served.
  void Stop() {
    if (server_) server_->Stop();
  }

  void Wait() {
    if (server_) server_->Wait();
  }

  int port() const { return port_; }

 private:
  static SymbolServiceOptions ToServiceOptions(const SymbolServerOptions& o) {
    SymbolServiceOptions s;
    s.debug_dirs = o.debug_dirs;
    s.fetcher = o.fetcher;
    s.cache_bytes = o.cache_bytes;
    s.symbolize_threads = o.symbolize_threads;
    s.index_cache_dir = o.index_cache_dir;
    return s;
  }

  static void Json(HttpResponse& res, int status, std::string_view error,
                   std::string_view message) {
    res.Set(status, remote::WriteErrorBody(error, message), "application/json");
  }

  HttpServerConfig Configure() {
    HttpServerConfig c;
    c.threads = options_.threads == 0 ? 1 : options_.threads;
    // The proxies take larger bodies than /v1/symbolize, which checks its own limit.
    c.max_body_bytes = std::max(options_.max_body_bytes, options_.max_proxy_body_bytes);
    c.read_timeout_seconds = options_.read_timeout_seconds;
    c.write_timeout_seconds = 10;
    c.keep_alive_seconds = options_.keep_alive_seconds;
    c.keep_alive_max_count = 1000;
    c.on_response = [this](int status) { metrics_.CountResponse(status); };
    // Every error status the transport makes itself (404, 413, 400 for a bad request line,
    // ...) gets a JSON body too; ours already have one.
    c.on_error = [](HttpResponse& res) {
      const char* error = res.status == 413   ? "body_too_large"
                          : res.status == 404 ? "not_found"
                          : res.status == 405 ? "method_not_allowed"
                                              : "bad_request";
      Json(res, res.status, error, "HTTP status " + std::to_string(res.status));
    };
    c.on_exception = [](HttpResponse& res) {
      Json(res, 500, "internal", "the server failed on this request");
    };
    c.routes.push_back({"GET", "/healthz", [](const HttpRequest&, HttpResponse& res) {
                          res.Set(200, "{\"status\":\"ok\"}", "application/json");
                        }});
    c.routes.push_back({"GET", "/metrics", [this](const HttpRequest&, HttpResponse& res) {
                          res.Set(200,
                                  metrics_.Render(service_.counters(), options_.fetcher_counters),
                                  "text/plain; version=0.0.4");
                        }});
    c.routes.push_back(
        {"POST", "/v1/symbolize", [this](const HttpRequest& req, HttpResponse& res) {
           auto start = std::chrono::steady_clock::now();
           Symbolize(req, res, start);
           metrics_.ObserveSymbolizeLatency(
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
         }});
    // debuginfod's web API; GET routes answer HEAD too (headers only).
    c.routes.push_back({"GET", std::string(remote::kBuildIdPathPrefix),
                        [this](const HttpRequest& req, HttpResponse& res) {
                          auto endpoint = remote::AnswerBuildIdRequest(req.path, files_, res);
                          metrics_.CountBuildIdAnswer(endpoint, res.status);  // set by now
                        },
                        /*prefix=*/true});
    AddProxyRoutes(c);
    return c;
  }

  // Requests being answered at once, over every symbolizing route; counted for its lifetime.
  struct InFlight {
    explicit InFlight(std::atomic<int64_t>& n) : n(n) { count = ++n; }
    ~InFlight() { --n; }
    std::atomic<int64_t>& n;
    int64_t count;
  };

  void AddProxyRoutes(HttpServerConfig& c) {
    remote::ProxyRoute otlp;
    otlp.path = "/v1development/profiles";
    otlp.transform = [this](std::string_view body, std::chrono::steady_clock::time_point deadline,
                            remote::ProxyTally* tally) {
      return remote::SymbolizeOtlpRequest(body, service_, deadline, tally);
    };
    otlp.forwarder = otlp_forward_.get();
    otlp.counters = &metrics_.otlp;
    remote::ProxyRoute push;
    push.path = "/push.v1.PusherService/Push";
    push.transform = [this](std::string_view body, std::chrono::steady_clock::time_point deadline,
                            remote::ProxyTally* tally) {
      return remote::SymbolizePushRequest(body, service_, deadline, options_.max_proxy_body_bytes,
                                          tally);
    };
    push.forwarder = pyroscope_forward_.get();
    push.counters = &metrics_.pyroscope;
    for (remote::ProxyRoute& route : {std::ref(otlp), std::ref(push)}) {
      route.max_body_bytes = options_.max_proxy_body_bytes;
      route.symbolize_timeout_seconds = options_.proxy_symbolize_seconds;
      c.routes.push_back(
          {"POST", route.path, [this, route](const HttpRequest& req, HttpResponse& res) {
             InFlight in_flight(metrics_.in_flight);
             if (in_flight.count > static_cast<int64_t>(options_.max_concurrent)) {
               ++route.counters->busy;
               ++route.counters->requests;
               res.headers.emplace_back("Retry-After", "1");
               return remote::SetRpcStatus(res, 503, remote::RpcCode::kUnavailable,
                                           "too many requests at once; retry later");
             }
             remote::AnswerProxyRequest(route, req, res);
           }});
    }
  }

  void Symbolize(const HttpRequest& req, HttpResponse& res,
                 std::chrono::steady_clock::time_point start) {
    InFlight in_flight(metrics_.in_flight);
    if (req.body.size() > options_.max_body_bytes) {
      return Json(
          res, 413, "body_too_large",
          "the request is larger than " + std::to_string(options_.max_body_bytes) + " bytes");
    }
    if (in_flight.count > static_cast<int64_t>(options_.max_concurrent)) {
      res.headers.emplace_back("Retry-After", "1");
      return Json(res, 503, "busy", "too many requests at once; retry later");
    }
    remote::RequestLimits limits;
    limits.max_offsets = options_.max_offsets;
    Result<remote::SymbolizeRequest> request = remote::ParseSymbolizeRequest(req.body, limits);
    if (!request) {
      bool json = request.error().code == ErrorCode::kMalformed;
      return Json(res, 400, json ? "bad_json" : "bad_request", request.error().message);
    }
    auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(options_.request_timeout_seconds));
    Result<remote::SymbolizeResponse> response = service_.Symbolize(*request, deadline);
    if (!response) return Json(res, 503, "deadline_exceeded", response.error().message);
    res.Set(200, remote::WriteSymbolizeResponse(*response), "application/json");
  }

  SymbolServerOptions options_;
  SymbolService service_;
  remote::DebuginfodApiOptions files_;  // where /buildid/ requests find their files
  ServerMetrics metrics_;
  const remote::HttpTransport& http_;
  std::unique_ptr<remote::ProxyForwarder> otlp_forward_;  // null: answer with the request
  std::unique_ptr<remote::ProxyForwarder> pyroscope_forward_;
  std::unique_ptr<remote::HttpServer> server_;  // last: stopped before the rest goes
  int port_ = 0;
};

Result<std::unique_ptr<SymbolServer>> SymbolServer::Start(const std::string& host, int port,
                                                          const SymbolServerOptions& options) {
  Result<const remote::HttpTransport*> http = remote::LoadHttpTransport();
  if (!http) return http.error();
  auto impl = std::make_unique<Impl>(options, **http);
  Result<int> bound = impl->Bind(host, port);
  if (!bound) return bound.error();
  return std::unique_ptr<SymbolServer>(new SymbolServer(std::move(impl)));
}

SymbolServer::SymbolServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SymbolServer::~SymbolServer() = default;
int SymbolServer::port() const { return impl_->port(); }
void SymbolServer::Stop() { impl_->Stop(); }
void SymbolServer::Wait() { impl_->Wait(); }

}  // namespace stacksym
