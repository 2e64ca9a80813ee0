// The JSON body of `POST /v1/symbolize` (request and response), shared by the server and its
// clients. A request names build IDs and file offsets, never paths:
//
//   {"modules": [{"build_id": "5d0a...", "offsets": [4660, 8192]}],
//    "demangle": true, "inlines": true}                     // both optional, default true
//
// and the response answers every offset, in order, with its frames (innermost first, as
// FrameSymbols) or a Reason:
//
//   {"modules": [{"build_id": "5d0a...", "message": "...",   // message only when not found
//                 "answers": [{"offset": 4660, "frames": [{"function": "f", "raw_function":
//                 "_Z1fv",
//                              "file": "a.c", "line": 3, "column": 7, "inlined": false}]},
//                             {"offset": 8192, "reason": "no_symbol"}]}]}
//
// Both parsers take untrusted bytes and are strict: unknown fields, wrong types, invalid build
// IDs and more offsets than the limit are errors (kInvalidArgument) with a message for the
// HTTP 4xx answer; malformed JSON is kMalformed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stacksym/frame.h"
#include "stacksym/profile.h"
#include "stacksym/result.h"

namespace stacksym::remote {

struct ModuleQuery {
  std::vector<uint8_t> build_id;
  std::vector<uint64_t> offsets;
  // What `offsets` are. Not in the JSON (whose offsets are always file offsets): the OTLP
  // proxy asks by ELF virtual address (otlp_proxy.h), converted by the module's symbolizer.
  AddressKind kind = AddressKind::kFileOffset;
};

struct SymbolizeRequest {
  std::vector<ModuleQuery> modules;
  bool demangle = true;
  bool inlines = true;
};

struct RequestLimits {
  size_t max_modules = 4096;
  size_t max_offsets = 100000;  // over all modules of one request
};

struct ModuleAnswer {
  std::vector<uint8_t> build_id;
  std::string message;                // why the module could not be used; empty otherwise
  std::vector<uint64_t> offsets;      // as asked
  std::vector<FrameSymbols> answers;  // parallel to offsets
};

struct SymbolizeResponse {
  std::vector<ModuleAnswer> modules;
};

Result<SymbolizeRequest> ParseSymbolizeRequest(std::string_view body,
                                               const RequestLimits& limits = {});
std::string WriteSymbolizeRequest(const SymbolizeRequest& request);

Result<SymbolizeResponse> ParseSymbolizeResponse(std::string_view body);
std::string WriteSymbolizeResponse(const SymbolizeResponse& response);

// {"error": "...", "message": "..."} for 4xx/5xx answers.
std::string WriteErrorBody(std::string_view error, std::string_view message);

// The Reason whose ReasonName() is `name`.
std::optional<Reason> ReasonFromName(std::string_view name);

}  // namespace stacksym::remote
