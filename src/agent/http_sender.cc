#include "agent/http_sender.h"

#include <time.h>

#include <chrono>
#include <utility>

#include "agent/retry_policy.h"
#include "base/clock.h"
#include "remote/http_transport.h"

namespace stacksym::agent {

Result<std::unique_ptr<HttpSender>> HttpSender::Start(const std::string& url, size_t destination,
                                                      DeliveryQueue* queue,
                                                      const HttpSenderOptions& options,
                                                      const Exporter* exporter) {
  Result<SplitUrl> split = SplitReceiverUrl(url);
  if (!split) return split.error();
  Result<const remote::HttpTransport*> http = remote::LoadHttpTransport();
  if (!http) return http.error();
  remote::HttpClientConfig config;
  config.connection_timeout_seconds = options.connect_timeout_s;
  config.timeout_seconds = options.timeout_s;
  config.ca_file = options.ca_file;
  std::unique_ptr<HttpSender> sender(new HttpSender());
  sender->client_ = (*http)->new_client(split->origin, config);
  // Shown in metrics and messages: without the credentials.
  const std::string shown = split->origin + split->prefix;
  if (!sender->client_ || !sender->client_->valid()) {
    return MakeError(ErrorCode::kInvalidArgument, "receiver URL " + shown + " cannot be used");
  }
  sender->url_ = shown;
  sender->split_ = std::move(*split);
  sender->headers_ = sender->split_.headers;
  sender->headers_.insert(sender->headers_.end(), options.headers.begin(), options.headers.end());
  sender->destination_ = destination;
  sender->queue_ = queue;
  sender->exporter_ = exporter;
  sender->options_ = options;
  HttpSender* raw = sender.get();
  sender->thread_ = std::thread([raw] { raw->Loop(); });
  return sender;
}

HttpSender::~HttpSender() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void HttpSender::Stop() {
  std::lock_guard lock(mu_);
  stop_ = true;
  wake_.notify_all();
}

bool HttpSender::Wait(double seconds) {
  std::unique_lock lock(mu_);
  return !wake_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stop_; });
}

remote::HttpHeaders HttpSender::WithOurHeaders(const remote::HttpHeaders& request_headers) const {
  remote::HttpHeaders all = request_headers;
  all.insert(all.end(), headers_.begin(), headers_.end());
  return all;
}

void HttpSender::Loop() {
  Backoff backoff(options_.backoff_initial_s, options_.backoff_max_s,
                  static_cast<uint64_t>(MonotonicSeconds() * 1e9) ^ destination_);
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
    }
    std::shared_ptr<const QueuedRequest> item =
        queue_->Front(destination_, std::chrono::milliseconds(200));
    if (!item) {
      if (queue_->aborted()) return;
      continue;
    }
    const ExportRequest& r = item->request;
    double started = MonotonicSeconds();
    remote::HttpPostResult answer =
        client_->Post(split_.prefix + r.path, r.body, r.content_type, WithOurHeaders(r.headers));
    stats_.Attempt(MonotonicSeconds() - started);
    Verdict verdict = Judge(answer.sent, answer.status);
    if (verdict.outcome == Outcome::kSent) {
      backoff.Reset();
      if (queue_->Settle(destination_, item)) {
        stats_.Sent(r.body.size(), r.samples,
                    exporter_ != nullptr && exporter_->PartlyRejected(answer.body));
      }
      continue;
    }
    if (verdict.outcome == Outcome::kDropped) {
      backoff.Reset();
      if (queue_->Settle(destination_, item)) stats_.Dropped(verdict.reason);
      continue;
    }
    stats_.Retried(verdict.reason);
    std::optional<double> retry_after =
        ParseRetryAfter(answer.Header("Retry-After"), WallSeconds());
    if (!Wait(backoff.Next(retry_after))) return;
  }
}

}  // namespace stacksym::agent
