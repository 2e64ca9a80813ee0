// libstacksym-http.so: the HttpTransport of http_transport.h over cpp-httplib. It uses only
// the standard library and cpp-httplib (the command's own code reaches it through the
// interface), so that it can be opened with dlopen by an executable that exports nothing.
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "remote/http_transport.h"

namespace stacksym::remote {
namespace {

std::chrono::microseconds Micros(double seconds) {
  return std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::duration<double>(seconds));
}

// Bytes read from a file body per write to the socket: big enough that a gigabyte is a few
// thousand reads, small enough that many downloads at once cost little memory.
constexpr size_t kFileChunkBytes = 256 << 10;

// httplib asks for the body from `offset` (0 first, then where the last write ended, or the
// start of a Range) until `length` bytes were written; a read that fails or comes up short
// (the file shrank) ends the response, and the client sees a truncated body.
httplib::ContentProvider ReadFileInChunks(std::shared_ptr<const HttpFileBody> file) {
  auto buffer = std::make_shared<std::vector<char>>();
  return [file = std::move(file), buffer](size_t offset, size_t length, httplib::DataSink& sink) {
    if (buffer->empty()) buffer->resize(kFileChunkBytes);  // on the first call only
    size_t want = std::min(length, buffer->size());
    ssize_t got =
        ::pread(file->fd, buffer->data(), want, static_cast<off_t>(file->offset + offset));
    if (got <= 0) return false;
    return sink.write(buffer->data(), static_cast<size_t>(got));
  };
}

void Copy(const HttpResponse& from, httplib::Response& to) {
  to.status = from.status;
  for (const auto& [name, value] : from.headers) to.set_header(name, value);
  if (from.file && from.file->length > 0) {
    to.set_content_provider(static_cast<size_t>(from.file->length), from.content_type,
                            ReadFileInChunks(from.file));
  } else {
    to.set_content(from.body, from.content_type);
  }
}

HttpRequest ToOurs(const httplib::Request& req) {
  HttpRequest ours;
  ours.method = req.method;
  ours.path = req.path;
  ours.body = req.body;
  ours.headers.assign(req.headers.begin(), req.headers.end());
  return ours;
}

// Each range lies inside a body of `length` bytes, as httplib 0.11 reads them: [first,
// second] with second -1 for "to the end", or first -1 for the last `second` bytes.
bool RangesWithin(const httplib::Ranges& ranges, uint64_t length) {
  for (const auto& [first, second] : ranges) {
    if (first == -1 && second == -1) continue;
    bool fits = first == -1 ? second > 0 && static_cast<uint64_t>(second) <= length
                            : first >= 0 && static_cast<uint64_t>(first) < length &&
                                  (second == -1 ||
                                   (second >= first && static_cast<uint64_t>(second) < length));
    if (!fits) return false;
  }
  return true;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

class HttplibServer final : public HttpServer {
 public:
  explicit HttplibServer(const HttpServerConfig& config) : config_(config) {}
  ~HttplibServer() override {
    Stop();
    Wait();
  }

  int Start(const std::string& host, int port) override {
    Configure();
    int bound = port == 0 ? server_.bind_to_any_port(host) : port;
    if (port != 0 && !server_.bind_to_port(host, port)) bound = -1;
    if (bound <= 0) return -1;
    // cpp-httplib 0.11 listens with a backlog of 5: a burst of more simultaneous connections
    // overflows the accept queue and clients see their connection reset (found with 16-24
    // concurrent clients). listen() again on the bound socket raises the backlog.
    if (listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // Until the accept loop runs: a Stop() before it began was lost, and Wait() then waited
    // for ever (a server started and stopped at once, as a probe for a free port is).
    for (int i = 0; i < 2000 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return bound;
  }

  void Stop() override { server_.stop(); }

  void Wait() override {
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Configure() {
    server_.set_socket_options([this](socket_t sock) {
      httplib::default_socket_options(sock);
      listen_fd_ = sock;
    });
    unsigned threads = config_.threads == 0 ? 1 : config_.threads;
    server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server_.set_payload_max_length(config_.max_body_bytes);
    // Headers and body go out in separate writes: without this, Nagle's algorithm and the
    // peer's delayed ACK add ~40 ms to every answer.
    server_.set_tcp_nodelay(true);
    server_.set_read_timeout(Micros(config_.read_timeout_seconds));
    server_.set_write_timeout(Micros(config_.write_timeout_seconds));
    server_.set_keep_alive_timeout(config_.keep_alive_seconds);
    server_.set_keep_alive_max_count(config_.keep_alive_max_count);
    if (config_.on_response) {
      server_.set_logger([this](const httplib::Request&, const httplib::Response& res) {
        config_.on_response(res.status);
      });
    }
    if (config_.on_error) {
      server_.set_error_handler(httplib::Server::HandlerWithResponse(
          [this](const httplib::Request&, httplib::Response& res) {
            // A 416 is Answer()'s own, for a file body's ranges: headers only, as it is.
            if (!res.body.empty() || res.status == 416) {
              return httplib::Server::HandlerResponse::Unhandled;
            }
            HttpResponse ours;
            ours.status = res.status;
            config_.on_error(ours);
            Copy(ours, res);
            return httplib::Server::HandlerResponse::Handled;
          }));
    }
    if (config_.on_exception) {
      server_.set_exception_handler(
          [this](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
            HttpResponse ours;
            config_.on_exception(ours);
            Copy(ours, res);
          });
    }
    for (const HttpServerConfig::Route& route : config_.routes) {
      if (route.prefix) continue;  // matched before httplib's routing: RoutePrefixes()
      const HttpHandler* handler = &route.handler;
      auto call = [handler](const httplib::Request& req, httplib::Response& res) {
        Answer(*handler, req, res);
      };
      if (route.method == "POST") {
        server_.Post(route.path, ReadBounded(handler, config_.max_body_bytes));
      } else {
        server_.Get(route.path, call);  // httplib answers HEAD with GET's handler
      }
    }
    RoutePrefixes();
  }

  // httplib inflates a gzip request body itself, bounded only on the wire (Content-Length):
  // read it here, inflated chunk by chunk, so that a small gzip bomb stops at max_body bytes
  // instead of taking its inflated size in memory.
  static httplib::Server::HandlerWithContentReader ReadBounded(const HttpHandler* handler,
                                                               uint64_t max_body) {
    return [handler, max_body](const httplib::Request& req, httplib::Response& res,
                               const httplib::ContentReader& read) {
      std::string body;
      bool too_big = false;
      read([&](const char* data, size_t n) {
        if (body.size() + n > max_body) {
          too_big = true;
          return false;
        }
        body.append(data, n);
        return true;
      });
      if (too_big) {
        res.status = 413;  // the error handler writes the body
        return;
      }
      HttpRequest ours = ToOurs(req);
      ours.body = std::move(body);
      HttpResponse answer;
      (*handler)(ours, answer);
      Copy(answer, res);
    };
  }

  static void Answer(const HttpHandler& handler, const httplib::Request& req,
                     httplib::Response& res) {
    HttpResponse answer;
    handler(ToOurs(req), answer);
    if (answer.file && answer.status == 200 && !req.ranges.empty()) {
      // httplib sends only the asked-for ranges of a file body, but says 206 only when the
      // handler left the status unset (a 200 with part of the file would pass for all of it),
      // and reads past the end for a range beyond it.
      if (!RangesWithin(req.ranges, answer.file->length)) {
        res.status = 416;
        res.set_header("Content-Range", "bytes */" + std::to_string(answer.file->length));
        return;
      }
      answer.status = 206;
    }
    Copy(answer, res);
  }

  // httplib 0.11 routes by std::regex only, whose matcher recurses once per character (a
  // long path could exhaust the stack); prefix routes are compared as strings, ahead of it.
  void RoutePrefixes() {
    bool any = false;
    for (const HttpServerConfig::Route& route : config_.routes) any = any || route.prefix;
    if (!any) return;
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      bool get = req.method == "GET" || req.method == "HEAD";
      for (const HttpServerConfig::Route& route : config_.routes) {
        if (!route.prefix || !StartsWith(req.path, route.path)) continue;
        if (route.method == req.method || (route.method == "GET" && get)) {
          Answer(route.handler, req, res);
          return httplib::Server::HandlerResponse::Handled;
        }
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
  }

  HttpServerConfig config_;
  httplib::Server server_;
  std::thread thread_;
  int listen_fd_ = -1;  // the listening socket, seen when httplib creates it
};

class HttplibClient final : public HttpClient {
 public:
  HttplibClient(const std::string& url, const HttpClientConfig& config) : client_(url) {
    client_.set_connection_timeout(Micros(config.connection_timeout_seconds));
    client_.set_read_timeout(Micros(config.timeout_seconds));
    client_.set_write_timeout(Micros(config.timeout_seconds));
    client_.set_keep_alive(true);
    client_.set_tcp_nodelay(true);  // no Nagle delay between a request's header and body
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    client_.enable_server_certificate_verification(true);
    if (!config.ca_file.empty()) client_.set_ca_cert_path(config.ca_file);
#endif
  }

  bool valid() const override { return client_.is_valid(); }

  HttpPostResult Post(const std::string& path, const std::string& body,
                      const std::string& content_type, const HttpHeaders& headers) override {
    HttpPostResult out;
    httplib::Headers sent(headers.begin(), headers.end());
    httplib::Result res = client_.Post(path, sent, body, content_type);
    if (!res) {
      out.error = httplib::to_string(res.error());
      return out;
    }
    out.sent = true;
    out.status = res->status;
    out.body = std::move(res->body);
    out.headers.assign(res->headers.begin(), res->headers.end());
    return out;
  }

 private:
  httplib::Client client_;
};

std::unique_ptr<HttpServer> NewServer(const HttpServerConfig& config) {
  return std::make_unique<HttplibServer>(config);
}

std::unique_ptr<HttpClient> NewClient(const std::string& url, const HttpClientConfig& config) {
  return std::make_unique<HttplibClient>(url, config);
}

constexpr HttpTransport kTransport = {kHttpTransportAbi, &NewServer, &NewClient};

}  // namespace
}  // namespace stacksym::remote

extern "C" __attribute__((visibility("default"))) const stacksym::remote::HttpTransport*
stacksym_http_transport() {
  return &stacksym::remote::kTransport;
}
