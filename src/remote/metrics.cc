#include "remote/metrics.h"

#include <cstdio>

#include "remote/prometheus_text.h"

namespace stacksym::remote {
namespace {

void Line(std::string* out, const char* name, const char* labels, double value) {
  PrometheusLine(out, name, labels, value);
}

void Help(std::string* out, const char* name, const char* type, const char* help) {
  PrometheusHelp(out, name, type, help);
}

}  // namespace

void ServerMetrics::CountResponse(int status) {
  ++requests_;
  if (status >= 400 && status < 500) ++client_errors_;
  if (status >= 500) ++server_errors_;
}

void ServerMetrics::ObserveSymbolizeLatency(double seconds) { symbolize_latency_.Observe(seconds); }

void ServerMetrics::CountBuildIdAnswer(std::optional<BuildIdArtifact> artifact, int status) {
  size_t endpoint = artifact ? static_cast<size_t>(*artifact) : kBuildIdArtifactCount;
  size_t code = 0;
  while (code < kBuildIdStatuses.size() && kBuildIdStatuses[code] != status) ++code;
  ++buildid_answers_[endpoint][code];
}

void ServerMetrics::RenderBuildIdAnswers(std::string* out) const {
  Help(out, "stacksym_buildid_requests_total", "counter",
       "debuginfod API answers (GET and HEAD /buildid/...), by endpoint and status.");
  for (size_t endpoint = 0; endpoint <= kBuildIdArtifactCount; ++endpoint) {
    const char* name = endpoint < kBuildIdArtifactCount
                           ? BuildIdArtifactName(static_cast<BuildIdArtifact>(endpoint))
                           : "invalid";
    for (size_t code = 0; code <= kBuildIdStatuses.size(); ++code) {
      uint64_t count = buildid_answers_[endpoint][code].load();
      // Every endpoint's successes always (a dashboard sees the series), others once seen.
      if (count == 0 && (code != 0 || endpoint >= static_cast<size_t>(BuildIdArtifact::kSource))) {
        continue;
      }
      std::string status =
          code < kBuildIdStatuses.size() ? std::to_string(kBuildIdStatuses[code]) : "other";
      std::string labels = std::string("{endpoint=\"") + name + "\",code=\"" + status + "\"}";
      Line(out, "stacksym_buildid_requests_total", labels.c_str(), static_cast<double>(count));
    }
  }
}

void ServerMetrics::RenderProxies(std::string* out) const {
  struct Route {
    const char* name;
    const ProxyRouteCounters* c;
  };
  const Route routes[] = {{"otlp", &otlp}, {"pyroscope", &pyroscope}};
  Help(out, "stacksym_proxy_requests_total", "counter",
       "Proxied profile requests (OTLP, Pyroscope Push), by route and outcome.");
  for (const Route& r : routes) {
    const std::pair<const char*, const std::atomic<uint64_t>*> outcomes[] = {
        {"all", &r.c->requests},        {"forwarded", &r.c->forwarded},
        {"malformed", &r.c->malformed}, {"too_large", &r.c->too_large},
        {"busy", &r.c->busy},           {"downstream_down", &r.c->downstream_down}};
    for (const auto& [outcome, value] : outcomes) {
      std::string labels = std::string("{route=\"") + r.name + "\",outcome=\"" + outcome + "\"}";
      Line(out, "stacksym_proxy_requests_total", labels.c_str(),
           static_cast<double>(value->load()));
    }
  }
  Help(out, "stacksym_proxy_locations_total", "counter",
       "Native locations without lines the proxies looked at, by route and result.");
  for (const Route& r : routes) {
    const std::pair<const char*, const std::atomic<uint64_t>*> results[] = {
        {"named", &r.c->locations_named},
        {"unnamed", &r.c->locations_unnamed},
        {"timed_out", &r.c->locations_timed_out}};
    for (const auto& [result, value] : results) {
      std::string labels = std::string("{route=\"") + r.name + "\",result=\"" + result + "\"}";
      Line(out, "stacksym_proxy_locations_total", labels.c_str(),
           static_cast<double>(value->load()));
    }
  }
  Help(out, "stacksym_proxy_duration_seconds", "histogram",
       "Time to answer a proxied request, by route: reading, naming and forwarding it.");
  for (const Route& r : routes) {
    r.c->latency.Render(out, "stacksym_proxy_duration_seconds",
                        std::string("route=\"") + r.name + "\"");
  }
  Help(out, "stacksym_proxy_frames_total", "counter",
       "Distinct (build ID, address) pairs the proxies asked for, by route.");
  for (const Route& r : routes) {
    std::string labels = std::string("{route=\"") + r.name + "\"}";
    Line(out, "stacksym_proxy_frames_total", labels.c_str(),
         static_cast<double>(r.c->frames_asked.load()));
  }
}

std::string ServerMetrics::Render(const SymbolServiceCounters& service,
                                  const DebuginfodCounters* debuginfod) const {
  std::string out;
  Help(&out, "stacksym_requests_total", "counter", "HTTP requests answered.");
  Line(&out, "stacksym_requests_total", "", static_cast<double>(requests_.load()));
  Help(&out, "stacksym_request_errors_total", "counter", "HTTP answers with an error status.");
  Line(&out, "stacksym_request_errors_total", "{class=\"4xx\"}",
       static_cast<double>(client_errors_.load()));
  Line(&out, "stacksym_request_errors_total", "{class=\"5xx\"}",
       static_cast<double>(server_errors_.load()));
  Help(&out, "stacksym_requests_in_flight", "gauge",
       "Symbolizing requests (/v1/symbolize and the proxies) being answered.");
  Line(&out, "stacksym_requests_in_flight", "", static_cast<double>(in_flight.load()));

  Help(&out, "stacksym_symbolize_duration_seconds", "histogram",
       "Time to answer POST /v1/symbolize, from parsed headers to the response.");
  symbolize_latency_.Render(&out, "stacksym_symbolize_duration_seconds", "");

  Help(&out, "stacksym_offsets_total", "counter", "File offsets asked for.");
  Line(&out, "stacksym_offsets_total", "", static_cast<double>(service.offsets.load()));
  Help(&out, "stacksym_cache_hits_total", "counter", "Modules answered by a file already parsed.");
  Line(&out, "stacksym_cache_hits_total", "", static_cast<double>(service.cache_hits.load()));
  Help(&out, "stacksym_cache_misses_total", "counter", "Modules that had to be found and opened.");
  Line(&out, "stacksym_cache_misses_total", "", static_cast<double>(service.cache_misses.load()));
  Help(&out, "stacksym_cache_evictions_total", "counter",
       "Parsed files dropped to stay in budget.");
  Line(&out, "stacksym_cache_evictions_total", "", static_cast<double>(service.evictions.load()));
  Help(&out, "stacksym_cache_bytes", "gauge", "Heap held by parsed files after the last request.");
  Line(&out, "stacksym_cache_bytes", "", static_cast<double>(service.cached_bytes.load()));

  Help(&out, "stacksym_debuginfod_fetches_total", "counter",
       "Files asked of debuginfod, by outcome.");
  uint64_t found = debuginfod ? debuginfod->found.load() : 0;
  uint64_t missing = debuginfod ? debuginfod->missing.load() : 0;
  uint64_t failures = debuginfod ? debuginfod->failures.load() : 0;
  Line(&out, "stacksym_debuginfod_fetches_total", "{outcome=\"found\"}",
       static_cast<double>(found));
  Line(&out, "stacksym_debuginfod_fetches_total", "{outcome=\"missing\"}",
       static_cast<double>(missing));
  Line(&out, "stacksym_debuginfod_fetches_total", "{outcome=\"failed\"}",
       static_cast<double>(failures));
  RenderBuildIdAnswers(&out);
  RenderProxies(&out);
  return out;
}

}  // namespace stacksym::remote
