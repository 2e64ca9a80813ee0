// A sender against a loopback receiver that answers as stores do when they are unwell: 503
// with Retry-After, 429, then 200 (retried, Retry-After waited for, sent once, in order); 400
// (dropped and counted, the next request goes); nobody listening (retried until it comes up).
#include "agent/http_sender.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>

#include "remote/http_transport.h"

namespace stacksym::agent {
namespace {

using remote::HttpRequest;
using remote::HttpResponse;

// Answers POST /v1development/profiles with the statuses given, then 200; records bodies.
class Receiver {
 public:
  explicit Receiver(std::deque<std::pair<int, std::string>> script, int port = 0)
      : script_(std::move(script)) {
    Result<const remote::HttpTransport*> http = remote::LoadHttpTransport();
    if (!http) return;
    remote::HttpServerConfig config;
    config.threads = 2;
    config.routes.push_back({"POST", "/prefix/v1development/profiles",
                             [this](const HttpRequest& req, HttpResponse& res) {
                               std::lock_guard lock(mu_);
                               bodies_.emplace_back(req.body);
                               for (const auto& [name, value] : req.headers) {
                                 if (name == "X-Stacksym-Test") encoding_ = value;
                               }
                               if (script_.empty()) {
                                 res.Set(200, "", "application/x-protobuf");
                                 return;
                               }
                               auto [status, retry_after] = script_.front();
                               script_.pop_front();
                               if (retry_after.starts_with("body:")) {
                                 res.Set(status, retry_after.substr(5), "application/x-protobuf");
                                 return;
                               }
                               res.Set(status, "", "text/plain");
                               if (!retry_after.empty())
                                 res.headers.emplace_back("Retry-After", retry_after);
                             }});
    server_ = (*http)->new_server(config);
    port_ = server_->Start("127.0.0.1", port);
  }
  int port() const { return port_; }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  std::string encoding() {
    std::lock_guard lock(mu_);
    return encoding_;
  }

 private:
  std::mutex mu_;
  std::deque<std::pair<int, std::string>> script_;
  std::vector<std::string> bodies_;
  std::string encoding_;
  std::unique_ptr<remote::HttpServer> server_;
  int port_ = -1;
};

ExportRequest Request(const std::string& body) {
  ExportRequest r;
  r.path = "/v1development/profiles";
  r.content_type = "application/x-protobuf";
  r.headers = {{"X-Stacksym-Test", "window"}};  // the request's own headers go along
  r.body = body;
  r.samples = 3;
  return r;
}

HttpSenderOptions Fast() {
  HttpSenderOptions o;
  o.backoff_initial_s = 0.02;
  o.backoff_max_s = 0.1;
  o.timeout_s = 2;
  o.connect_timeout_s = 1;
  return o;
}

bool WaitFor(const std::function<bool()>& done, double seconds = 10) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(HttpSenderTest, RetriesUnwellAnswersHonouringRetryAfter) {
  Receiver receiver({{503, "1"}, {429, ""}});
  ASSERT_GT(receiver.port(), 0);
  DeliveryQueue queue(1 << 20, 1);
  ASSERT_TRUE(queue.Push(0, Request("first"), 1));
  ASSERT_TRUE(queue.Push(0, Request("second"), 2));
  auto start = std::chrono::steady_clock::now();
  auto sender = HttpSender::Start("http://127.0.0.1:" + std::to_string(receiver.port()) + "/prefix",
                                  0, &queue, Fast());
  ASSERT_TRUE(sender.ok()) << sender.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return (*sender)->stats().Snapshot().sent == 2; }));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(took, 1.0) << "Retry-After: 1 was not waited for";
  SenderCounts c = (*sender)->stats().Snapshot();
  EXPECT_EQ(c.retried["status_503"], 1u);
  EXPECT_EQ(c.retried["status_429"], 1u);
  EXPECT_EQ(c.sent_samples, 6u);
  EXPECT_EQ(c.sent_bytes, 11u);
  EXPECT_TRUE(c.dropped.empty());
  EXPECT_EQ(receiver.bodies(), (std::vector<std::string>{"first", "first", "first", "second"}));
  EXPECT_EQ(receiver.encoding(), "window");
  EXPECT_EQ(queue.counters().requests, 0u);
}

TEST(HttpSenderTest, ABadRequestIsDroppedAndCounted) {
  Receiver receiver({{400, ""}});
  ASSERT_GT(receiver.port(), 0);
  DeliveryQueue queue(1 << 20, 1);
  ASSERT_TRUE(queue.Push(0, Request("bad"), 1));
  ASSERT_TRUE(queue.Push(0, Request("good"), 2));
  auto sender = HttpSender::Start(
      "http://127.0.0.1:" + std::to_string(receiver.port()) + "/prefix/", 0, &queue, Fast());
  ASSERT_TRUE(sender.ok());
  ASSERT_TRUE(WaitFor([&] { return (*sender)->stats().Snapshot().sent == 1; }));
  SenderCounts c = (*sender)->stats().Snapshot();
  EXPECT_EQ(c.dropped["status_400"], 1u);
  EXPECT_EQ(receiver.bodies(), (std::vector<std::string>{"bad", "good"}));
}

// OTLP's partial success: accepted, counted as partial, not tried again.
TEST(HttpSenderTest, APartialSuccessIsCountedNotRetried) {
  // ExportProfilesServiceResponse{partial_success: {rejected_profiles: 1}}, and one without.
  Receiver receiver({{200, std::string("body:") + std::string("\x0a\x02\x08\x01", 4)},
                     {200, std::string("body:")}});
  ASSERT_GT(receiver.port(), 0);
  DeliveryQueue queue(1 << 20, 1);
  ASSERT_TRUE(queue.Push(0, Request("a"), 1));
  ASSERT_TRUE(queue.Push(0, Request("b"), 2));
  std::unique_ptr<Exporter> otlp = MakeOtlpExporter();
  auto sender = HttpSender::Start("http://127.0.0.1:" + std::to_string(receiver.port()) + "/prefix",
                                  0, &queue, Fast(), otlp.get());
  ASSERT_TRUE(sender.ok());
  ASSERT_TRUE(WaitFor([&] { return (*sender)->stats().Snapshot().sent == 2; }));
  SenderCounts c = (*sender)->stats().Snapshot();
  EXPECT_EQ(c.partial, 1u);
  EXPECT_TRUE(c.retried.empty());
  EXPECT_EQ(receiver.bodies().size(), 2u);
}

TEST(HttpSenderTest, CatchesUpWhenTheReceiverComesUp) {
  // A port nobody listens on yet: take one, then free it.
  int port = 0;
  {
    Receiver probe({});
    port = probe.port();
  }
  ASSERT_GT(port, 0);
  DeliveryQueue queue(1 << 20, 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(queue.Push(0, Request("w" + std::to_string(i)), i));
  auto sender =
      HttpSender::Start("http://127.0.0.1:" + std::to_string(port) + "/prefix", 0, &queue, Fast());
  ASSERT_TRUE(sender.ok());
  ASSERT_TRUE(WaitFor([&] { return (*sender)->stats().Snapshot().retried["connection"] >= 2; }));
  Receiver receiver({}, port);
  if (receiver.port() != port) GTEST_SKIP() << "port " << port << " was taken meanwhile";
  ASSERT_TRUE(WaitFor([&] { return (*sender)->stats().Snapshot().sent == 3; }));
  EXPECT_EQ(receiver.bodies(), (std::vector<std::string>{"w0", "w1", "w2"}));
}

}  // namespace
}  // namespace stacksym::agent
