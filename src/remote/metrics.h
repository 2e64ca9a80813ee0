// Counters of the symbolization server, rendered in the Prometheus text format for
// GET /metrics. Lock-free: every counter is an atomic.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "remote/debuginfod_path.h"
#include "remote/latency_histogram.h"
#include "remote/proxy_route.h"
#include "remote/symbol_service.h"
#include "stacksym/remote.h"

namespace stacksym::remote {

class ServerMetrics {
 public:
  void CountResponse(int status);                // every answer, whoever made it
  void ObserveSymbolizeLatency(double seconds);  // POST /v1/symbolize answers
  // A /buildid/ answer (debuginfod_api.h): nullopt for a malformed path.
  void CountBuildIdAnswer(std::optional<BuildIdArtifact> artifact, int status);
  std::atomic<int64_t> in_flight{0};
  // The proxies' routes (proxy_route.h): POST /v1development/profiles and
  // /push.v1.PusherService/Push.
  ProxyRouteCounters otlp;
  ProxyRouteCounters pyroscope;

  std::string Render(const SymbolServiceCounters& service,
                     const DebuginfodCounters* debuginfod) const;

 private:
  void RenderBuildIdAnswers(std::string* out) const;
  void RenderProxies(std::string* out) const;

  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> client_errors_{0};  // 4xx
  std::atomic<uint64_t> server_errors_{0};  // 5xx
  LatencyHistogram symbolize_latency_;      // POST /v1/symbolize
  // /buildid/ answers by endpoint (the artifacts, then "invalid" paths) and by status: the
  // ones debuginfod_api.cc gives, then any other.
  static constexpr std::array<int, 4> kBuildIdStatuses = {200, 400, 404, 500};
  std::array<std::array<std::atomic<uint64_t>, kBuildIdStatuses.size() + 1>,
             kBuildIdArtifactCount + 1>
      buildid_answers_{};
};

}  // namespace stacksym::remote
