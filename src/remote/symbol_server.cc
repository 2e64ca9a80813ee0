// `stacksym serve`: cpp-httplib serving SymbolService over HTTP/1.1 with limits, and metrics.
#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include "remote/metrics.h"
#include "remote/symbol_service.h"
#include "remote/symbolize_api.h"
#include "stacksym/remote.h"

namespace stacksym {

using remote::ServerMetrics;
using remote::SymbolService;
using remote::SymbolServiceOptions;

class SymbolServer::Impl {
 public:
  explicit Impl(const SymbolServerOptions& options)
      : options_(options), service_(ToServiceOptions(options)) {}

  ~Impl() {
    Stop();
    Wait();
  }

  Result<int> Bind(const std::string& host, int port) {
    Configure();
    int bound = port == 0 ? server_.bind_to_any_port(host) : port;
    if (port != 0 && !server_.bind_to_port(host, port)) bound = -1;
    if (bound <= 0) {
      return MakeError(ErrorCode::kIo, "cannot listen on " + host + ":" + std::to_string(port));
    }
    // cpp-httplib 0.11 listens with a backlog of 5: a burst of more simultaneous connections
    // overflows the accept queue and clients see their connection reset (found with 16-24
    // concurrent clients). listen() again on the bound socket raises the backlog.
    if (listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
    port_ = bound;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    return bound;
  }

  // Safe from any thread; the listening thread ends after the requests being served.
  void Stop() { server_.stop(); }

  void Wait() {
    if (thread_.joinable()) thread_.join();
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

  static void Json(httplib::Response& res, int status, std::string_view error,
                   std::string_view message) {
    res.status = status;
    res.set_content(remote::WriteErrorBody(error, message), "application/json");
  }

  void Configure() {
    server_.set_socket_options([this](socket_t sock) {
      httplib::default_socket_options(sock);
      listen_fd_ = sock;
    });
    unsigned threads = options_.threads == 0 ? 1 : options_.threads;
    server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server_.set_payload_max_length(options_.max_body_bytes);
    // Headers and body go out in separate writes: without this, Nagle's algorithm and the
    // peer's delayed ACK add ~40 ms to every answer.
    server_.set_tcp_nodelay(true);
    auto read_timeout = std::chrono::duration<double>(options_.read_timeout_seconds);
    server_.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(read_timeout));
    server_.set_write_timeout(std::chrono::seconds(10));
    server_.set_keep_alive_timeout(options_.keep_alive_seconds);
    server_.set_keep_alive_max_count(1000);

    server_.set_logger([this](const httplib::Request&, const httplib::Response& res) {
      metrics_.CountResponse(res.status);
    });
    // Every error status httplib makes itself (404, 413, 400 for a bad request line, ...)
    // gets a JSON body too; ours already have one.
    server_.set_error_handler(
        httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          const char* error = res.status == 413   ? "body_too_large"
                              : res.status == 404 ? "not_found"
                              : res.status == 405 ? "method_not_allowed"
                                                  : "bad_request";
          Json(res, res.status, error, "HTTP status " + std::to_string(res.status));
          return httplib::Server::HandlerResponse::Handled;
        }));
    server_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          Json(res, 500, "internal", "the server failed on this request");
        });

    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{\"status\":\"ok\"}", "application/json");
    });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_.Render(service_.counters(), options_.fetcher_counters),
                      "text/plain; version=0.0.4");
    });
    server_.Post("/v1/symbolize", [this](const httplib::Request& req, httplib::Response& res) {
      auto start = std::chrono::steady_clock::now();
      Symbolize(req, res, start);
      metrics_.ObserveSymbolizeLatency(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    });
  }

  void Symbolize(const httplib::Request& req, httplib::Response& res,
                 std::chrono::steady_clock::time_point start) {
    struct InFlight {
      explicit InFlight(std::atomic<int64_t>& n) : n(n) { count = ++n; }
      ~InFlight() { --n; }
      std::atomic<int64_t>& n;
      int64_t count;
    } in_flight(metrics_.in_flight);
    if (in_flight.count > static_cast<int64_t>(options_.max_concurrent)) {
      res.set_header("Retry-After", "1");
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
    res.set_content(remote::WriteSymbolizeResponse(*response), "application/json");
  }

  SymbolServerOptions options_;
  SymbolService service_;
  ServerMetrics metrics_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;  // the listening socket, seen when httplib creates it
};

Result<std::unique_ptr<SymbolServer>> SymbolServer::Start(const std::string& host, int port,
                                                          const SymbolServerOptions& options) {
  auto impl = std::make_unique<Impl>(options);
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
