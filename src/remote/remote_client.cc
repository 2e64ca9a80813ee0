// The client of `symbolize-profile --server` and `record --server`: a profile's distinct
// (build ID, file offset) pairs go to the server in batches; kernel frames stay local.
#include <algorithm>
#include <map>
#include <utility>

#include "output/kernel_frames.h"
#include "remote/http_transport.h"
#include "remote/symbolize_api.h"
#include "stacksym/elf.h"
#include "stacksym/remote.h"

namespace stacksym {
namespace {

using remote::ModuleQuery;
using remote::SymbolizeRequest;
using remote::SymbolizeResponse;

bool NeedsSymbols(const Profile& profile, uint32_t i, bool resymbolize) {
  return resymbolize || !profile.symbols[i] || profile.symbols[i]->lines.empty();
}

// One request: sends it, checks that the answer covers exactly what was asked.
Result<SymbolizeResponse> Post(remote::HttpClient& client, const SymbolizeRequest& request,
                               const std::string& url) {
  remote::HttpPostResult res =
      client.Post("/v1/symbolize", remote::WriteSymbolizeRequest(request), "application/json");
  if (!res.sent) {
    return MakeError(ErrorCode::kIo, "symbolization server " + url + ": " + res.error);
  }
  if (res.status != 200) {
    return MakeError(ErrorCode::kIo, "symbolization server " + url + ": HTTP " +
                                         std::to_string(res.status) + " " +
                                         res.body.substr(0, 300));
  }
  Result<SymbolizeResponse> response = remote::ParseSymbolizeResponse(res.body);
  if (!response) {
    return MakeError(ErrorCode::kMalformed, "symbolization server " + url +
                                                ": unexpected answer: " + response.error().message);
  }
  bool same = response->modules.size() == request.modules.size();
  for (size_t m = 0; same && m < request.modules.size(); ++m) {
    same = response->modules[m].build_id == request.modules[m].build_id &&
           response->modules[m].offsets == request.modules[m].offsets;
  }
  if (!same) {
    return MakeError(ErrorCode::kMalformed,
                     "symbolization server " + url + ": the answer does not match the request");
  }
  return response;
}

}  // namespace

Result<RemoteSymbolizeStats> SymbolizeProfileRemote(Profile& profile,
                                                    const RemoteSymbolizeOptions& options) {
  RemoteSymbolizeStats stats;
  profile.symbols.resize(profile.frames.size());

  // Distinct (build ID, offset) pairs and the frames each answers (modules that differ only
  // by path share a build ID).
  std::map<std::vector<uint8_t>, std::map<uint64_t, std::vector<uint32_t>>> pairs;
  for (uint32_t i = 0; i < profile.frames.size(); ++i) {
    const ProfileFrame& frame = profile.frames[i];
    if (frame.kind != FrameKind::kUser || frame.module >= profile.modules.size()) continue;
    if (!NeedsSymbols(profile, i, options.resymbolize)) continue;
    const ProfileModule& module = profile.modules[frame.module];
    ++stats.frames;
    if (module.build_id.size() < 2) {
      // The server finds files by build ID only.
      profile.symbols[i] = FrameSymbols{Reason::kNoBuildId, {}};
      continue;
    }
    pairs[module.build_id][frame.address].push_back(i);
  }

  if (!pairs.empty()) {
    Result<const remote::HttpTransport*> http = remote::LoadHttpTransport();
    if (!http) return http.error();
    remote::HttpClientConfig config;
    config.connection_timeout_seconds = 5;
    config.timeout_seconds = options.timeout_seconds;
    std::unique_ptr<remote::HttpClient> client_owner = (*http)->new_client(options.url, config);
    remote::HttpClient& client = *client_owner;
    if (!client.valid()) {
      return MakeError(ErrorCode::kInvalidArgument, "invalid server URL " + options.url);
    }

    size_t batch = std::max<size_t>(1, options.batch_offsets);
    SymbolizeRequest request;
    request.demangle = options.demangle;
    request.inlines = options.inlines;
    size_t in_request = 0;
    std::map<std::string, bool> reported;
    auto flush = [&]() -> Result<void> {
      if (request.modules.empty()) return {};
      Result<SymbolizeResponse> response = Post(client, request, options.url);
      if (!response) return response.error();
      ++stats.requests;
      for (remote::ModuleAnswer& m : response->modules) {
        if (!m.message.empty() && !reported[ToHex(m.build_id)]) {
          reported[ToHex(m.build_id)] = true;
          stats.messages.push_back("build ID " + ToHex(m.build_id) + ": " + m.message);
        }
        const auto& by_offset = pairs[m.build_id];
        for (size_t k = 0; k < m.offsets.size(); ++k) {
          for (uint32_t frame : by_offset.at(m.offsets[k])) profile.symbols[frame] = m.answers[k];
        }
      }
      request.modules.clear();
      in_request = 0;
      return {};
    };
    for (const auto& [build_id, offsets] : pairs) {
      ModuleQuery* query = nullptr;
      for (const auto& [offset, frames] : offsets) {
        ++stats.pairs;
        if (query == nullptr) {
          request.modules.push_back(ModuleQuery{build_id, {}});
          query = &request.modules.back();
        }
        query->offsets.push_back(offset);
        if (++in_request == batch) {
          if (Result<void> r = flush(); !r) return r.error();
          query = nullptr;
        }
      }
    }
    if (Result<void> r = flush(); !r) return r.error();
  }

  for (uint32_t i = 0; i < profile.frames.size(); ++i) {
    if (profile.frames[i].kind == FrameKind::kUser && profile.symbols[i] &&
        !profile.symbols[i]->lines.empty()) {
      ++stats.symbolized;
    }
  }
  if (!options.kallsyms_path.empty()) {  // kernel frames stay local
    KernelFramesResult kernel =
        SymbolizeKernelFrames(profile, options.kallsyms_path, options.resymbolize);
    stats.kernel_frames += kernel.frames;
    stats.symbolized += kernel.symbolized;
    for (std::string& m : kernel.messages) stats.messages.push_back(std::move(m));
  }
  return stats;
}

}  // namespace stacksym
