// stacksym/export.h — a window of a continuous recording, encoded for the profile stores people
// run: OTLP profiles (opentelemetry-proto v1.11.0, `profiles.v1development`) and Pyroscope's
// Push API. One Exporter per wire format, behind this one interface; the agent (agent.h) calls
// them on closed windows and hands the requests to its delivery queue and senders.
//
//   ExportWindow window{.profile = profile, .start_ns = t0, .end_ns = t0 + 10'000'000'000,
//                       .host_name = "web-1"};
//   std::unique_ptr<Exporter> otlp = MakeOtlpExporter({});
//   Result<std::vector<ExportRequest>> requests = otlp->Encode(window);
//   for (const ExportRequest& r : *requests) post(url + r.path, r.body, r.headers);
//
// An Exporter encodes; it never sends. Requests stay within the receiver's limits (a window too
// big for one request is split), and each says how many samples it carries so that what a
// sender drops can be counted.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stacksym/profile.h"
#include "stacksym/result.h"

namespace stacksym {

// A closed window: the samples taken in [start_ns, end_ns) (wall clock, ns since the epoch),
// symbolized or not (profile.symbols), with the processes they belong to (profile.processes).
struct ExportWindow {
  const Profile& profile;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  // Initialized, so that designated initializations may leave them out warning-free.
  std::string host_name{};     // host.name; empty: not labelled
  std::string service_name{};  // service.name / service_name; empty: each process's executable name
};

// One request for a receiver: the path under the receiver's base URL, the body as it goes on
// the wire (already gzipped where the format says so), and its headers.
struct ExportRequest {
  std::string path;  // "/v1development/profiles", "/push.v1.PusherService/Push"
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. Content-Encoding: gzip
  std::string body;
  uint64_t samples = 0;  // samples and off-CPU intervals this request carries
};

class Exporter {
 public:
  virtual ~Exporter() = default;
  virtual std::string_view name() const = 0;  // "otlp", "pyroscope"
  // The window as one or more requests; an error only when nothing could be encoded.
  virtual Result<std::vector<ExportRequest>> Encode(const ExportWindow& window) = 0;
  // A 2xx answer's body that says part of the request was rejected (OTLP's partial success):
  // the sender counts it and does not retry. False for a format without partial success.
  virtual bool PartlyRejected(std::string_view response_body) const { return false; }
};

struct OtlpExportOptions {
  // A request whose encoded (uncompressed) size would pass this is split by process.
  uint64_t max_request_bytes = 4 << 20;
};
std::unique_ptr<Exporter> MakeOtlpExporter(const OtlpExportOptions& options = {});

struct PyroscopeExportOptions {
  // Pyroscope's own limits per series: uncompressed pprof bytes, samples, labels.
  uint64_t max_profile_bytes = 4 << 20;
  uint64_t max_samples = 16000;
  uint32_t max_labels = 30;
};
std::unique_ptr<Exporter> MakePyroscopeExporter(const PyroscopeExportOptions& options = {});

}  // namespace stacksym
