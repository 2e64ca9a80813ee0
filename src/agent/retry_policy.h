// What a sender does with a receiver's answer, as the OTLP/HTTP specification says
// (opentelemetry-proto docs/specification.md, "Failures"): 429, 502, 503 and 504 are retried,
// with exponential backoff and jitter, waiting at least what Retry-After asks; a connection
// that failed or an answer that never came is retried the same way; every other 4xx and 5xx
// is dropped and counted. Pyroscope's Connect API answers with the same HTTP statuses.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace stacksym::agent {

enum class Outcome : uint8_t {
  kSent,     // 2xx
  kRetry,    // try again after a delay
  kDropped,  // the receiver refused it for good (4xx but 429, other 5xx)
};

struct Verdict {
  Outcome outcome = Outcome::kSent;
  std::string reason;  // for metrics: "status_400", "connection", ...
};

// `sent` false: no answer (connection refused or reset, timeout).
Verdict Judge(bool sent, int status);

// Retry-After as seconds ("120") or an HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT"), relative to
// `now_unix` seconds; nullopt when absent or unreadable.
std::optional<double> ParseRetryAfter(std::string_view value, double now_unix);

// Exponential backoff with jitter: attempt n waits a uniform time between half and all of
// initial × 2^n, never more than `max`, so that agents a store turned away together do not
// come back together; a Retry-After raises the wait to at least its value (at most an hour).
class Backoff {
 public:
  Backoff(double initial_s, double max_s, uint64_t seed)
      : initial_(initial_s), max_(max_s), rng_(seed) {}
  double Next(std::optional<double> retry_after_s);
  void Reset() { attempt_ = 0; }
  uint32_t attempt() const { return attempt_; }

 private:
  double initial_, max_;
  uint32_t attempt_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace stacksym::agent
