// Where serve's proxies send what they symbolized (`--otlp-forward URL`,
// `--pyroscope-forward URL`), and how the downstream's answer goes back to the client.
//
// Requests are POSTed through the HTTP transport's client (http_transport.h, the one the
// agent's senders use), from a small pool of connections so that concurrent requests do not
// wait on one connection. The request path is the URL's path prefix followed by the path the
// client asked for (http_url.h): `--otlp-forward http://collector:4318` receives
// /v1development/profiles.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "remote/http_transport.h"
#include "remote/http_url.h"
#include "stacksym/result.h"

namespace stacksym::remote {

// Seconds a client is told to wait (Retry-After) when the downstream gave no answer at all.
inline constexpr int kDownstreamDownRetryAfterSeconds = 5;

class ProxyForwarder {
 public:
  // An error when the URL is not http://HOST[:PORT][/PATH].
  static Result<std::unique_ptr<ProxyForwarder>> Create(const std::string& url,
                                                        const HttpTransport& http,
                                                        double timeout_seconds);

  // POSTs `body` to prefix + `path`; `sent` false when no answer came (refused, reset, timed
  // out). Any thread.
  HttpPostResult Post(const std::string& path, const std::string& body,
                      const std::string& content_type, const HttpHeaders& headers);

  const std::string& url() const { return url_; }

 private:
  ProxyForwarder() = default;
  std::unique_ptr<HttpClient> Take();
  void Give(std::unique_ptr<HttpClient> client);

  std::string url_;
  SplitUrl split_;
  const HttpTransport* http_ = nullptr;
  HttpClientConfig config_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<HttpClient>> idle_;  // connections not in use
};

// The client's request headers worth passing on (tenant, authorization, Connect's version,
// User-Agent, ...): all but the hop-by-hop ones and those the forwarder sets itself (Host,
// Content-Length, Content-Type, Content-Encoding, Accept-Encoding).
HttpHeaders ForwardedHeaders(const HttpHeaders& request_headers);

// The downstream's answer as the client's: its status, Retry-After, Content-Type and body.
// No answer at all (down, reset, timed out): 503 with Retry-After and a google.rpc.Status
// (UNAVAILABLE) saying why.
void AnswerFromDownstream(const HttpPostResult& answer, const std::string& url,
                          HttpResponse& response);

}  // namespace stacksym::remote
