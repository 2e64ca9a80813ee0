// The agent's delivery pieces on their own: the bounded queue (order per destination, the
// oldest dropped first, a request dropped while being tried), the retry rules (which statuses
// are retried, Retry-After in both forms, backoff bounds), and the receiver URL split.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "agent/delivery_queue.h"
#include "agent/http_sender.h"
#include "agent/retry_policy.h"

namespace stacksym::agent {
namespace {

ExportRequest Request(size_t body_bytes, char fill = 'x') {
  ExportRequest r;
  r.path = "/p";
  r.body.assign(body_bytes, fill);
  r.samples = 1;
  return r;
}

TEST(DeliveryQueueTest, KeepsOrderPerDestination) {
  DeliveryQueue q(1 << 20, 2);
  ASSERT_TRUE(q.Push(0, Request(10, 'a'), 1));
  ASSERT_TRUE(q.Push(1, Request(10, 'b'), 1));
  ASSERT_TRUE(q.Push(0, Request(10, 'c'), 2));
  auto first = q.Front(0, std::chrono::milliseconds(0));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->request.body[0], 'a');
  // Front does not take it: tried again, it is the same request.
  EXPECT_EQ(q.Front(0, std::chrono::milliseconds(0)), first);
  EXPECT_TRUE(q.Settle(0, first));
  EXPECT_EQ(q.Front(0, std::chrono::milliseconds(0))->request.body[0], 'c');
  EXPECT_EQ(q.Front(1, std::chrono::milliseconds(0))->request.body[0], 'b');
  EXPECT_EQ(q.counters().requests, 2u);
}

TEST(DeliveryQueueTest, DropsTheOldestWhenFullAcrossDestinations) {
  // Each request counts its body, path and 64 bytes of overhead: 1000 + 2 + 64.
  DeliveryQueue q(3 * 1066, 2);
  ASSERT_TRUE(q.Push(0, Request(1000, 'a'), 1));
  ASSERT_TRUE(q.Push(1, Request(1000, 'b'), 1));
  ASSERT_TRUE(q.Push(0, Request(1000, 'c'), 2));
  ASSERT_TRUE(q.Push(1, Request(1000, 'd'), 2));  // 'a' goes
  DeliveryQueueCounters c = q.counters();
  EXPECT_EQ(c.dropped_full, 1u);
  EXPECT_EQ(c.requests, 3u);
  EXPECT_LE(c.bytes, 3u * 1066);
  EXPECT_EQ(q.Front(0, std::chrono::milliseconds(0))->request.body[0], 'c');
  EXPECT_EQ(q.Front(1, std::chrono::milliseconds(0))->request.body[0], 'b');
  // Larger than the whole queue: refused, counted, nothing else dropped.
  EXPECT_FALSE(q.Push(0, Request(4000), 3));
  EXPECT_EQ(q.counters().dropped_too_big, 1u);
  EXPECT_EQ(q.counters().requests, 3u);
}

TEST(DeliveryQueueTest, ARequestDroppedWhileTriedIsNotSettled) {
  DeliveryQueue q(2 * 1066, 1);
  ASSERT_TRUE(q.Push(0, Request(1000, 'a'), 1));
  auto trying = q.Front(0, std::chrono::milliseconds(0));
  ASSERT_TRUE(q.Push(0, Request(1000, 'b'), 2));
  ASSERT_TRUE(q.Push(0, Request(1000, 'c'), 3));  // drops 'a', the one being tried
  EXPECT_FALSE(q.Settle(0, trying));
  EXPECT_EQ(q.counters().requests, 2u);
  EXPECT_EQ(q.Front(0, std::chrono::milliseconds(0))->request.body[0], 'b');
}

TEST(DeliveryQueueTest, CloseAndAbortEndTheWait) {
  DeliveryQueue q(1 << 20, 1);
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    q.Close();
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(q.Front(0, std::chrono::seconds(10)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  closer.join();
  ASSERT_TRUE(q.Push(0, Request(10), 1));
  EXPECT_FALSE(q.WaitEmpty(std::chrono::steady_clock::now() + std::chrono::milliseconds(20)));
  q.Abort();
  EXPECT_EQ(q.counters().dropped_shutdown, 1u);
  EXPECT_FALSE(q.Front(0, std::chrono::seconds(10)));
}

TEST(RetryPolicyTest, RetriesWhatOtlpSaysAndDropsTheRest) {
  EXPECT_EQ(Judge(true, 200).outcome, Outcome::kSent);
  EXPECT_EQ(Judge(true, 204).outcome, Outcome::kSent);
  for (int status : {429, 502, 503, 504}) {
    EXPECT_EQ(Judge(true, status).outcome, Outcome::kRetry) << status;
  }
  for (int status : {400, 401, 403, 404, 413, 500, 501}) {
    Verdict v = Judge(true, status);
    EXPECT_EQ(v.outcome, Outcome::kDropped) << status;
    EXPECT_EQ(v.reason, "status_" + std::to_string(status));
  }
  EXPECT_EQ(Judge(false, 0).outcome, Outcome::kRetry);
  EXPECT_EQ(Judge(false, 0).reason, "connection");
}

TEST(RetryPolicyTest, RetryAfterInSecondsOrAsADate) {
  EXPECT_EQ(ParseRetryAfter("7", 0), 7.0);
  EXPECT_EQ(ParseRetryAfter(" 120 ", 0), 120.0);
  // 2015-10-21 07:28:00 UTC is 1445412480.
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470), 10.0);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", 1445412490), 0.0);  // past
  EXPECT_FALSE(ParseRetryAfter("", 0));
  EXPECT_FALSE(ParseRetryAfter("soon", 0));
  EXPECT_FALSE(ParseRetryAfter("-5", 0));
  EXPECT_FALSE(ParseRetryAfter("99999999999999", 0));
}

TEST(RetryPolicyTest, BackoffGrowsWithJitterAndHonoursRetryAfter) {
  Backoff b(1, 30, 42);
  std::set<double> seen;
  double ceiling = 1;
  for (int i = 0; i < 8; ++i) {
    double w = b.Next(std::nullopt);
    EXPECT_GE(w, ceiling / 2) << i;
    EXPECT_LE(w, ceiling) << i;
    seen.insert(w);
    ceiling = std::min(30.0, ceiling * 2);
  }
  EXPECT_EQ(seen.size(), 8u) << "jittered";
  b.Reset();
  EXPECT_GE(b.Next(5.0), 5.0);
  EXPECT_LE(b.Next(7200.0), 3600.0);
}

TEST(ReceiverUrlTest, SplitsOriginAndPrefix) {
  Result<SplitUrl> a = SplitReceiverUrl("http://127.0.0.1:4318");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->origin, "http://127.0.0.1:4318");
  EXPECT_EQ(a->prefix, "");
  Result<SplitUrl> b = SplitReceiverUrl("http://collector:4318/otlp/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->origin, "http://collector:4318");
  EXPECT_EQ(b->prefix, "/otlp");
  EXPECT_FALSE(SplitReceiverUrl("127.0.0.1:4318").ok());
  EXPECT_FALSE(SplitReceiverUrl("ftp://x:1").ok());
  EXPECT_FALSE(SplitReceiverUrl("http://").ok());
  EXPECT_FALSE(SplitReceiverUrl("https://user@").ok()) << "no host";
  EXPECT_FALSE(SplitReceiverUrl("https://pw%4@host").ok());
  EXPECT_FALSE(SplitReceiverUrl("https://us%4gr:pw@host").ok()) << "bad percent-escape";
}

// Credentials in the URL leave the origin and become Basic authorization (RFC 7617: base64 of
// "user:password", percent-escapes decoded first), as Pyroscope's and Grafana's clients send them.
TEST(ReceiverUrlTest, HttpsAndCredentials) {
  Result<SplitUrl> a = SplitReceiverUrl("https://collector.example:4318/otlp");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->origin, "https://collector.example:4318");
  EXPECT_EQ(a->prefix, "/otlp");
  EXPECT_TRUE(a->headers.empty());
  Result<SplitUrl> b = SplitReceiverUrl("https://123456:glc%40x%3Ay@profiles.example/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->origin, "https://profiles.example");
  EXPECT_EQ(b->prefix, "");
  ASSERT_EQ(b->headers.size(), 1u);
  EXPECT_EQ(b->headers[0].first, "Authorization");
  // printf '123456:glc@x:y' | base64
  EXPECT_EQ(b->headers[0].second, "Basic MTIzNDU2OmdsY0B4Onk=");
  Result<SplitUrl> c = SplitReceiverUrl("http://Aladdin:open%20sesame@h:1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->origin, "http://h:1");
  EXPECT_EQ(c->headers[0].second, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");  // RFC 7617's example
}

TEST(ReceiverUrlTest, Base64MatchesRfc4648) {
  // RFC 4648 section 10's test vectors.
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (auto [in, out] : vectors) EXPECT_EQ(remote::Base64(in), out) << in;
  EXPECT_EQ(remote::Base64(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(ReceiverUrlTest, HeaderArguments) {
  auto h = remote::ParseHeaderArgument("X-Scope-OrgID:  tenant-1 ");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->first, "X-Scope-OrgID");
  EXPECT_EQ(h->second, "tenant-1");
  auto empty_value = remote::ParseHeaderArgument("X-Empty:");
  ASSERT_TRUE(empty_value.ok());
  EXPECT_EQ(empty_value->second, "");
  EXPECT_FALSE(remote::ParseHeaderArgument("no colon").ok());
  EXPECT_FALSE(remote::ParseHeaderArgument(": value").ok());
  EXPECT_FALSE(remote::ParseHeaderArgument("Bad Name: v").ok());
  EXPECT_FALSE(remote::ParseHeaderArgument("X: a\r\nInjected: b").ok());
}

}  // namespace
}  // namespace stacksym::agent
