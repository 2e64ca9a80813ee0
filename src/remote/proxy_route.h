// The one way a proxied request goes through serve (OTLP and Pyroscope alike): its body read
// (gzip or not, within the size limit), its frames named within the time limit (the route's
// transform: otlp_proxy.h, pyroscope_proxy.h), then forwarded downstream with the client's
// headers, or, without a downstream, answered with the symbolized request itself.
//
// A body that is not the route's message gets 400 with a google.rpc.Status
// (INVALID_ARGUMENT) and is not forwarded; one over the size limit gets 413.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "remote/http_transport.h"
#include "remote/latency_histogram.h"
#include "remote/proxy_forwarder.h"
#include "remote/proxy_frames.h"
#include "stacksym/result.h"

namespace stacksym::remote {

// What one route did, for /metrics.
struct ProxyRouteCounters {
  std::atomic<uint64_t> requests{0};         // answered, whatever the answer
  std::atomic<uint64_t> malformed{0};        // 400: not forwarded
  std::atomic<uint64_t> too_large{0};        // 413
  std::atomic<uint64_t> busy{0};             // 503: over the concurrency limit
  std::atomic<uint64_t> forwarded{0};        // the downstream answered (any status)
  std::atomic<uint64_t> downstream_down{0};  // no answer from the downstream: 503
  std::atomic<uint64_t> locations_named{0};
  std::atomic<uint64_t> locations_unnamed{0};
  std::atomic<uint64_t> locations_timed_out{0};
  std::atomic<uint64_t> frames_asked{0};  // distinct (build ID, address) pairs
  LatencyHistogram latency;               // every answer, forwarding included
};

// A request body → the symbolized body (both serialized, not compressed), or kMalformed.
using ProxyTransform = std::function<Result<std::string>(
    std::string_view body, std::chrono::steady_clock::time_point deadline, ProxyTally* tally)>;

struct ProxyRoute {
  std::string path;  // "/v1development/profiles", forwarded to the same path downstream
  ProxyTransform transform;
  ProxyForwarder* forwarder = nullptr;       // null: answer with the symbolized request
  size_t max_body_bytes = size_t{64} << 20;  // on the wire and inflated
  double symbolize_timeout_seconds = 10;
  ProxyRouteCounters* counters = nullptr;
};

void AnswerProxyRequest(const ProxyRoute& route, const HttpRequest& request,
                        HttpResponse& response);

}  // namespace stacksym::remote
