#include "remote/proxy_route.h"

#include <span>
#include <utility>

#include "output/gzip.h"
#include "remote/rpc_status.h"

namespace stacksym::remote {
namespace {

// The request's protobuf bytes: inflated when gzipped (cpp-httplib inflates a body sent with
// Content-Encoding: gzip itself; a gzip stream can never be a protobuf message, whose first
// byte 0x1f would be wire type 7), within `max_bytes`. Error code: kMalformed (a corrupt
// stream: 400) or kInvalidArgument (too large: 413).
Result<std::string> ReadBody(std::string_view body, size_t max_bytes) {
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  if (!output::IsGzip(bytes)) {
    if (body.size() > max_bytes) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "the request is larger than " + std::to_string(max_bytes) + " bytes");
    }
    return std::string(body);
  }
  // One byte over the limit tells a body too large from a corrupt one.
  Result<std::string> inflated = output::GzipDecompress(bytes, max_bytes + 1);
  if (!inflated) {
    return MakeError(ErrorCode::kMalformed, "gzip: " + inflated.error().message);
  }
  if (inflated->size() > max_bytes) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the request inflates to more than " + std::to_string(max_bytes) + " bytes");
  }
  return inflated;
}

void AddTally(const ProxyTally& tally, ProxyRouteCounters& c) {
  c.locations_named += tally.named;
  c.locations_unnamed += tally.unnamed;
  c.locations_timed_out += tally.timed_out;
  c.frames_asked += tally.distinct;
}

// Sends the symbolized body on, as the client sent it (gzipped again when it came gzipped),
// and answers with what the downstream answered.
void Forward(const ProxyRoute& route, const HttpRequest& request, std::string body,
             HttpResponse& response) {
  std::string type = FindHeader(request.headers, "Content-Type");
  if (type.empty()) type = "application/x-protobuf";
  HttpHeaders headers = ForwardedHeaders(request.headers);
  if (FindHeader(request.headers, "Content-Encoding") == "gzip") {
    Result<std::string> gz = output::GzipCompress(body);
    if (!gz) return SetRpcStatus(response, 500, RpcCode::kInternal, gz.error().message);
    body = *std::move(gz);
    headers.emplace_back("Content-Encoding", "gzip");
  }
  HttpPostResult answer = route.forwarder->Post(route.path, body, type, headers);
  ++(answer.sent ? route.counters->forwarded : route.counters->downstream_down);
  AnswerFromDownstream(answer, route.forwarder->url(), response);
}

}  // namespace

void AnswerProxyRequest(const ProxyRoute& route, const HttpRequest& request,
                        HttpResponse& response) {
  auto start = std::chrono::steady_clock::now();
  struct Timer {
    ~Timer() {
      latency.Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    LatencyHistogram& latency;
    std::chrono::steady_clock::time_point start;
  } timer{route.counters->latency, start};
  ProxyRouteCounters& counters = *route.counters;
  ++counters.requests;
  Result<std::string> body = ReadBody(request.body, route.max_body_bytes);
  if (!body) {
    bool large = body.error().code == ErrorCode::kInvalidArgument;
    ++(large ? counters.too_large : counters.malformed);
    return SetRpcStatus(response, large ? 413 : 400,
                        large ? RpcCode::kResourceExhausted : RpcCode::kInvalidArgument,
                        body.error().message);
  }
  auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(route.symbolize_timeout_seconds));
  ProxyTally tally;
  Result<std::string> symbolized = route.transform(*body, deadline, &tally);
  AddTally(tally, counters);
  if (!symbolized) {
    if (symbolized.error().code != ErrorCode::kMalformed) {
      return SetRpcStatus(response, 500, RpcCode::kInternal, symbolized.error().message);
    }
    ++counters.malformed;
    return SetRpcStatus(response, 400, RpcCode::kInvalidArgument, symbolized.error().message);
  }
  if (route.forwarder == nullptr) {
    std::string type = FindHeader(request.headers, "Content-Type");
    response.Set(200, *std::move(symbolized), type.empty() ? "application/x-protobuf" : type);
    return;
  }
  Forward(route, request, *std::move(symbolized), response);
}

}  // namespace stacksym::remote
