#include "agent/retry_policy.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace stacksym::agent {

Verdict Judge(bool sent, int status) {
  if (!sent) return {Outcome::kRetry, "connection"};
  if (status >= 200 && status < 300) return {Outcome::kSent, ""};
  std::string reason = "status_" + std::to_string(status);
  if (status == 429 || status == 502 || status == 503 || status == 504) {
    return {Outcome::kRetry, reason};
  }
  return {Outcome::kDropped, reason};
}

std::optional<double> ParseRetryAfter(std::string_view value, double now_unix) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (value.size() > 9) return std::nullopt;  // absurd: over 30 years
    return static_cast<double>(std::strtoul(std::string(value).c_str(), nullptr, 10));
  }
  // IMF-fixdate, the form HTTP/1.1 senders must use.
  tm date = {};
  std::string text(value);
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &date);
  if (end == nullptr || *end != '\0') return std::nullopt;
  double at = static_cast<double>(timegm(&date));
  return std::max(0.0, at - now_unix);
}

double Backoff::Next(std::optional<double> retry_after_s) {
  double ceiling =
      std::min(max_, initial_ * std::ldexp(1.0, static_cast<int>(std::min(attempt_, 30u))));
  ++attempt_;
  std::uniform_real_distribution<double> jitter(ceiling / 2, ceiling);
  double wait = jitter(rng_);
  if (retry_after_s) wait = std::max(wait, std::min(*retry_after_s, 3600.0));
  return wait;
}

}  // namespace stacksym::agent
