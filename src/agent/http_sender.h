// One destination's sender: a thread that takes the destination's requests from the delivery
// queue in order and POSTs them to the receiver, retrying as retry_policy.h says until the
// request is sent, refused for good, or dropped from the queue to make room.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "agent/delivery_queue.h"
#include "agent/sender_stats.h"
#include "remote/http_url.h"
#include "stacksym/result.h"

namespace stacksym::remote {
class HttpClient;
}

namespace stacksym::agent {

// "http[s]://[user:password@]host:port/prefix" → the part the HTTP client connects to, the
// path prefix every request path is put under ("" or "/prefix", no trailing slash) and the
// URL's credentials as a header: remote/http_url.h.
using remote::SplitUrl;
inline Result<SplitUrl> SplitReceiverUrl(const std::string& url) {
  return remote::SplitHttpUrl(url);
}

struct HttpSenderOptions {
  double connect_timeout_s = 5;
  double timeout_s = 10;  // an answer that takes longer is retried
  double backoff_initial_s = 1;
  double backoff_max_s = 30;
  remote::HttpHeaders headers;  // sent with every request (authorization, tenant)
  std::string ca_file;          // https: CA certificates (PEM); empty: the system's
};

class HttpSender {
 public:
  // Starts the thread; an error when the URL cannot be used or HTTP is unavailable.
  // `exporter` (may be null) judges the receiver's 2xx answers (partial success); it must
  // outlive the sender.
  static Result<std::unique_ptr<HttpSender>> Start(const std::string& url, size_t destination,
                                                   DeliveryQueue* queue,
                                                   const HttpSenderOptions& options,
                                                   const Exporter* exporter = nullptr);
  ~HttpSender();  // Stop() and join
  // Ends the thread after the attempt under way (the request stays queued).
  void Stop();
  const SenderStats& stats() const { return stats_; }
  const std::string& url() const { return url_; }  // without credentials

 private:
  HttpSender() = default;
  void Loop();
  // Sleeps up to `seconds`; false when stopped meanwhile.
  bool Wait(double seconds);
  // A request's own headers (Content-Encoding) and then headers_.
  remote::HttpHeaders WithOurHeaders(const remote::HttpHeaders& request_headers) const;

  std::string url_;
  SplitUrl split_;
  remote::HttpHeaders headers_;  // the URL's and the options' headers, sent with every request
  size_t destination_ = 0;
  DeliveryQueue* queue_ = nullptr;
  const Exporter* exporter_ = nullptr;
  HttpSenderOptions options_;
  std::unique_ptr<remote::HttpClient> client_;
  SenderStats stats_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace stacksym::agent
