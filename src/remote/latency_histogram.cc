#include "remote/latency_histogram.h"

#include <cstdio>

#include "remote/prometheus_text.h"

namespace stacksym::remote {

void LatencyHistogram::Observe(double seconds) {
  size_t i = 0;
  while (i < kBuckets.size() && seconds > kBuckets[i]) ++i;
  ++buckets_[i];
  ++count_;
  sum_us_ += static_cast<uint64_t>(seconds * 1e6);
}

void LatencyHistogram::Render(std::string* out, std::string_view name,
                              std::string_view labels) const {
  std::string prefix = labels.empty() ? "" : std::string(labels) + ",";
  std::string own = labels.empty() ? "" : "{" + std::string(labels) + "}";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= kBuckets.size(); ++i) {
    cumulative += buckets_[i].load();
    char le[32];
    if (i < kBuckets.size()) {
      std::snprintf(le, sizeof le, "%g", kBuckets[i]);
    } else {
      std::snprintf(le, sizeof le, "+Inf");
    }
    PrometheusLine(out, std::string(name) + "_bucket", "{" + prefix + "le=\"" + le + "\"}",
                   static_cast<double>(cumulative));
  }
  PrometheusLine(out, std::string(name) + "_sum", own, static_cast<double>(sum_us_.load()) / 1e6);
  PrometheusLine(out, std::string(name) + "_count", own, static_cast<double>(count_.load()));
}

}  // namespace stacksym::remote
