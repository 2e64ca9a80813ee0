// Counters of the symbolization server, rendered in the Prometheus text format for
// GET /metrics. Lock-free: every counter is an atomic.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "remote/symbol_service.h"
#include "stacksym/remote.h"

namespace stacksym::remote {

class ServerMetrics {
 public:
  // Upper bounds (seconds) of the latency histogram's buckets; +Inf is implied.
  static constexpr std::array<double, 12> kLatencyBuckets = {
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};

  void CountResponse(int status);                // every answer, whoever made it
  void ObserveSymbolizeLatency(double seconds);  // POST /v1/symbolize answers
  std::atomic<int64_t> in_flight{0};

  std::string Render(const SymbolServiceCounters& service,
                     const DebuginfodCounters* debuginfod) const;

 private:
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> client_errors_{0};  // 4xx
  std::atomic<uint64_t> server_errors_{0};  // 5xx
  std::array<std::atomic<uint64_t>, kLatencyBuckets.size() + 1> buckets_{};
  std::atomic<uint64_t> latency_count_{0};
  std::atomic<uint64_t> latency_sum_us_{0};
};

}  // namespace stacksym::remote
