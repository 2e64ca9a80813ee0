// HTTP for `stacksym serve` and the `--server` client, behind a narrow interface whose one
// implementation (cpp-httplib, http_transport_httplib.cc) is a module of its own,
// libstacksym-http.so, opened with dlopen the first time HTTP is wanted: linking cpp-httplib
// into the command made every start-up load and initialise OpenSSL and brotli (about 13 ms
// of CPU, half of `stacksym --version`), which only these two commands use.
//
// The module calls nothing of stacksym's: everything crosses this interface as standard
// library types and std::function, so it needs only libstdc++ and cpp-httplib.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::remote {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string_view method;  // "GET", "HEAD", "POST"; valid during the handler
  std::string_view path;    // percent-decoded, without the query; valid during the handler
  std::string_view body;    // valid during the handler
  HttpHeaders headers;      // as received (names as the client spelled them)
};

// A response body read from an open file in chunks while it is sent, so that a file of any
// size costs the server one chunk of memory. Owns `fd` (closed when the last holder lets go:
// the transport, after the last byte went out or the client left).
struct HttpFileBody {
  HttpFileBody(int fd, uint64_t offset, uint64_t length) : fd(fd), offset(offset), length(length) {}
  ~HttpFileBody() {
    if (fd >= 0) ::close(fd);
  }
  HttpFileBody(const HttpFileBody&) = delete;
  HttpFileBody& operator=(const HttpFileBody&) = delete;
  int fd;
  uint64_t offset;  // of the first byte sent
  uint64_t length;  // bytes sent (Content-Length)
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is this file range instead of `body`. A HEAD request gets the same
  // headers (Content-Length included) and no body.
  std::shared_ptr<const HttpFileBody> file;
  void Set(int s, std::string b, std::string type) {
    status = s;
    body = std::move(b);
    content_type = std::move(type);
  }
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

struct HttpServerConfig {
  unsigned threads = 8;
  size_t max_body_bytes = 8 << 20;
  double read_timeout_seconds = 5;
  double write_timeout_seconds = 10;
  unsigned keep_alive_seconds = 5;
  size_t keep_alive_max_count = 1000;
  std::function<void(int status)> on_response;  // after every response (metrics)
  // An error status the transport made itself (404, 413, 400, ...) with an empty body.
  std::function<void(HttpResponse&)> on_error;
  std::function<void(HttpResponse&)> on_exception;  // a handler threw
  struct Route {
    std::string method;  // "GET" (which answers HEAD too, without the body) or "POST"
    std::string path;    // the whole path, or with `prefix` every path that starts with it
    HttpHandler handler;
    bool prefix = false;
  };
  std::vector<Route> routes;
};

class HttpServer {
 public:
  virtual ~HttpServer() = default;
  // Binds host:port (0: any free port) and serves on background threads: the port, or -1.
  virtual int Start(const std::string& host, int port) = 0;
  virtual void Stop() = 0;  // any thread, idempotent
  virtual void Wait() = 0;  // until the serving thread ended
};

struct HttpClientConfig {
  double connection_timeout_seconds = 5;
  double timeout_seconds = 120;  // read and write
  // https: the CA certificates (PEM) the server's certificate must chain to. Empty: OpenSSL's
  // defaults (the system's store, or $SSL_CERT_FILE / $SSL_CERT_DIR). Server certificates are
  // always verified, host name included.
  std::string ca_file;
};

struct HttpPostResult {
  bool sent = false;  // false: no answer; `error` says why
  std::string error;
  int status = 0;
  std::string body;
  HttpHeaders headers;  // the answer's (Retry-After, Content-Type, ...)
  // The value of header `name` (ASCII case-insensitive), empty when absent.
  std::string Header(std::string_view name) const;
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  virtual bool valid() const = 0;  // the URL could be used
  // `headers` go with the request besides Content-Type (Content-Encoding, ...).
  virtual HttpPostResult Post(const std::string& path, const std::string& body,
                              const std::string& content_type, const HttpHeaders& headers = {}) = 0;
};

// What the module exports, as `stacksym_http_transport` (extern "C"). kHttpTransportAbi
// changes with anything above, so that a stale module is refused instead of misread.
inline constexpr uint32_t kHttpTransportAbi = 4;
struct HttpTransport {
  uint32_t abi;
  std::unique_ptr<HttpServer> (*new_server)(const HttpServerConfig& config);
  std::unique_ptr<HttpClient> (*new_client)(const std::string& url, const HttpClientConfig& config);
};
using HttpTransportEntry = const HttpTransport* (*)();

// The module, opened once (next to the running executable, else where the build put it):
// an Error when it cannot be found or is of another ABI.
Result<const HttpTransport*> LoadHttpTransport();

// Header names compare ASCII case-insensitively; the value of header `name` in `headers`
// (the first), empty when absent. The command's, beside the loader (not the module's: no ABI).
bool SameHeaderName(std::string_view a, std::string_view b);
std::string FindHeader(const HttpHeaders& headers, std::string_view name);

}  // namespace stacksym::remote
