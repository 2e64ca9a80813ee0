#include "remote/proxy_forwarder.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "remote/rpc_status.h"

namespace stacksym::remote {
namespace {

// Idle connections kept for the next requests; more are opened while more are in use.
constexpr size_t kMaxIdleConnections = 16;

}  // namespace

Result<std::unique_ptr<ProxyForwarder>> ProxyForwarder::Create(const std::string& url,
                                                               const HttpTransport& http,
                                                               double timeout_seconds) {
  Result<SplitUrl> split = SplitHttpUrl(url);
  if (!split) return split.error();
  std::unique_ptr<ProxyForwarder> f(new ProxyForwarder());
  f->url_ = url;
  f->split_ = *std::move(split);
  f->http_ = &http;
  f->config_.connection_timeout_seconds = std::min(5.0, timeout_seconds);
  f->config_.timeout_seconds = timeout_seconds;
  std::unique_ptr<HttpClient> probe = http.new_client(f->split_.origin, f->config_);
  if (!probe || !probe->valid()) {
    return MakeError(ErrorCode::kInvalidArgument, "forward URL " + url + " cannot be used");
  }
  f->Give(std::move(probe));
  return f;
}

std::unique_ptr<HttpClient> ProxyForwarder::Take() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<HttpClient> c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  return http_->new_client(split_.origin, config_);
}

void ProxyForwarder::Give(std::unique_ptr<HttpClient> client) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < kMaxIdleConnections) idle_.push_back(std::move(client));
}

HttpPostResult ProxyForwarder::Post(const std::string& path, const std::string& body,
                                    const std::string& content_type, const HttpHeaders& headers) {
  std::unique_ptr<HttpClient> client = Take();
  if (!client) {
    HttpPostResult failed;
    failed.error = "no HTTP client";
    return failed;
  }
  // The forward URL's own credentials, where the client sent none of its own.
  HttpHeaders sent = headers;
  for (const auto& [name, value] : split_.headers) {
    if (FindHeader(headers, name).empty()) sent.emplace_back(name, value);
  }
  HttpPostResult answer = client->Post(split_.prefix + path, body, content_type, sent);
  // A connection that failed is dropped: the next request opens a fresh one.
  if (answer.sent) Give(std::move(client));
  return answer;
}

HttpHeaders ForwardedHeaders(const HttpHeaders& request_headers) {
  static constexpr std::string_view kDropped[] = {
      "Host", "Content-Length", "Content-Type", "Content-Encoding", "Accept-Encoding", "Connection",
      "Keep-Alive", "Transfer-Encoding", "TE", "Trailer", "Upgrade", "Expect",
      "Proxy-Authorization", "Proxy-Connection",
      // cpp-httplib's own bookkeeping on a received request
      "REMOTE_ADDR", "REMOTE_PORT", "LOCAL_ADDR", "LOCAL_PORT"};
  HttpHeaders out;
  for (const auto& [name, value] : request_headers) {
    bool dropped = false;
    for (std::string_view d : kDropped) dropped = dropped || SameHeaderName(name, d);
    if (!dropped) out.emplace_back(name, value);
  }
  return out;
}

void AnswerFromDownstream(const HttpPostResult& answer, const std::string& url,
                          HttpResponse& response) {
  if (!answer.sent) {
    response.headers.emplace_back("Retry-After", std::to_string(kDownstreamDownRetryAfterSeconds));
    SetRpcStatus(response, 503, RpcCode::kUnavailable,
                 "the downstream " + url + " did not answer: " + answer.error);
    return;
  }
  std::string retry_after = answer.Header("Retry-After");
  if (!retry_after.empty()) response.headers.emplace_back("Retry-After", retry_after);
  std::string type = answer.Header("Content-Type");
  if (type.empty()) type = answer.body.empty() ? "text/plain" : "application/octet-stream";
  response.Set(answer.status, answer.body, type);
}

}  // namespace stacksym::remote
