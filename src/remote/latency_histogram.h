// A Prometheus histogram of request durations (lock-free: every bucket is an atomic), for
// /v1/symbolize and the proxies' routes.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace stacksym::remote {

class LatencyHistogram {
 public:
  // Upper bounds (seconds) of the buckets; +Inf is implied.
  static constexpr std::array<double, 12> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,   0.25,   0.5,   1,    2.5,   10};

  void Observe(double seconds);
  // NAME_bucket{LABELS,le="..."}, NAME_sum{LABELS} and NAME_count{LABELS} lines; `labels` is
  // empty or label pairs without braces (route="otlp").
  void Render(std::string* out, std::string_view name, std::string_view labels) const;

 private:
  std::array<std::atomic<uint64_t>, kBuckets.size() + 1> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_us_{0};
};

}  // namespace stacksym::remote
