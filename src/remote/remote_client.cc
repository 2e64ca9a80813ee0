// The client of `stacksym serve`: a FrameSymbolBackend for the profile symbolizer. A pass's
// distinct (build ID, file offset) pairs go to the server in batches of at most batch_offsets
// offsets; every answer is checked to cover exactly what was asked.
#include <algorithm>
#include <utility>

#include "remote/http_transport.h"
#include "remote/symbolize_api.h"
#include "stacksym/remote.h"

namespace stacksym {
namespace {

using remote::ModuleQuery;
using remote::SymbolizeRequest;
using remote::SymbolizeResponse;

class ServerBackend : public FrameSymbolBackend {
 public:
  ServerBackend(std::string url, std::unique_ptr<remote::HttpClient> client,
                const SymbolServerClientOptions& options)
      : url_(std::move(url)), client_(std::move(client)), options_(options) {}

  Result<void> Symbolize(std::span<BuildIdQuery> queries, const SymbolizeOptions& options) override;
  std::string name() const override { return url_; }
  uint64_t requests() const override { return requests_; }

 private:
  // One request, its answers handed out to the queries that asked (`asked`: for each module of
  // the request, its query and where its offsets start in the query).
  Result<void> Send(const SymbolizeRequest& request,
                    std::span<const std::pair<BuildIdQuery*, size_t>> asked);
  Result<SymbolizeResponse> Post(const SymbolizeRequest& request);

  std::string url_;
  std::unique_ptr<remote::HttpClient> client_;
  SymbolServerClientOptions options_;
  uint64_t requests_ = 0;
};

Result<SymbolizeResponse> ServerBackend::Post(const SymbolizeRequest& request) {
  remote::HttpPostResult res =
      client_->Post("/v1/symbolize", remote::WriteSymbolizeRequest(request), "application/json");
  ++requests_;
  if (!res.sent) {
    return MakeError(ErrorCode::kIo, "symbolization server " + url_ + ": " + res.error);
  }
  if (res.status != 200) {
    return MakeError(ErrorCode::kIo, "symbolization server " + url_ + ": HTTP " +
                                         std::to_string(res.status) + " " +
                                         res.body.substr(0, 300));
  }
  Result<SymbolizeResponse> response = remote::ParseSymbolizeResponse(res.body);
  if (!response) {
    return MakeError(ErrorCode::kMalformed, "symbolization server " + url_ +
                                                ": unexpected answer: " + response.error().message);
  }
  bool same = response->modules.size() == request.modules.size();
  for (size_t m = 0; same && m < request.modules.size(); ++m) {
    same = response->modules[m].build_id == request.modules[m].build_id &&
           response->modules[m].offsets == request.modules[m].offsets &&
           response->modules[m].answers.size() == request.modules[m].offsets.size();
  }
  if (!same) {
    return MakeError(ErrorCode::kMalformed,
                     "symbolization server " + url_ + ": the answer does not match the request");
  }
  return response;
}

Result<void> ServerBackend::Send(const SymbolizeRequest& request,
                                 std::span<const std::pair<BuildIdQuery*, size_t>> asked) {
  if (request.modules.empty()) return {};
  Result<SymbolizeResponse> response = Post(request);
  if (!response) return response.error();
  for (size_t m = 0; m < response->modules.size(); ++m) {
    auto [query, first] = asked[m];
    remote::ModuleAnswer& answer = response->modules[m];
    if (!answer.message.empty() && query->message.empty()) query->message = answer.message;
    for (size_t k = 0; k < answer.answers.size(); ++k) {
      query->answers[first + k] = std::move(answer.answers[k]);
    }
  }
  return {};
}

Result<void> ServerBackend::Symbolize(std::span<BuildIdQuery> queries,
                                      const SymbolizeOptions& options) {
  size_t batch = std::max<size_t>(1, options_.batch_offsets);
  SymbolizeRequest request;
  request.demangle = options.demangle;
  request.inlines = options.inlines;
  std::vector<std::pair<BuildIdQuery*, size_t>> asked;
  size_t in_request = 0;
  for (BuildIdQuery& query : queries) {
    query.answers.assign(query.offsets.size(), FrameSymbols{Reason::kNotFound, {}});
    for (size_t first = 0; first < query.offsets.size();) {
      size_t take = std::min(query.offsets.size() - first, batch - in_request);
      request.modules.push_back(
          ModuleQuery{query.build_id, std::vector<uint64_t>(query.offsets.begin() + first,
                                                            query.offsets.begin() + first + take)});
      asked.emplace_back(&query, first);
      first += take;
      in_request += take;
      if (in_request == batch) {
        if (Result<void> sent = Send(request, asked); !sent) return sent;
        request.modules.clear();
        asked.clear();
        in_request = 0;
      }
    }
  }
  return Send(request, asked);
}

}  // namespace

Result<std::shared_ptr<FrameSymbolBackend>> ConnectSymbolServer(
    const std::string& url, const SymbolServerClientOptions& options) {
  Result<const remote::HttpTransport*> http = remote::LoadHttpTransport();
  if (!http) return http.error();
  remote::HttpClientConfig config;
  config.connection_timeout_seconds = 5;
  config.timeout_seconds = options.timeout_seconds;
  std::unique_ptr<remote::HttpClient> client = (*http)->new_client(url, config);
  if (!client || !client->valid()) {
    return MakeError(ErrorCode::kInvalidArgument, "invalid server URL " + url);
  }
  return std::shared_ptr<FrameSymbolBackend>(
      std::make_shared<ServerBackend>(url, std::move(client), options));
}

}  // namespace stacksym
