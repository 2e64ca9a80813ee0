// serve as an OTLP symbolizing proxy (`POST /v1development/profiles`): an
// ExportProfilesServiceRequest (opentelemetry-proto v1.11.0, profiles.v1development, as the
// OpenTelemetry eBPF profiler and stacksym's agent send it) with its native frames named.
//
// A Location is named when its Mapping carries `process.executable.build_id.gnu` (hex), it has
// no Lines, and its `profile.frame.type` is "native" or absent: its address is taken as an ELF
// virtual address of that build ID's file. It gets Lines (the inline chain, innermost first)
// whose Functions (name, system_name, filename) are added to the dictionary, deduplicated
// with those already there. Everything else stays as it came: kernel and interpreter frames,
// locations with lines, frames nothing names, and every other field of the request.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "remote/proxy_frames.h"
#include "remote/symbol_service.h"
#include "stacksym/result.h"

namespace stacksym::remote {

// `body`: the serialized request (not compressed). Returns it serialized again with the
// names added; kMalformed when it is not such a request (unparsable protobuf, or a table
// index out of range in what the proxy reads).
Result<std::string> SymbolizeOtlpRequest(std::string_view body, SymbolService& service,
                                         std::chrono::steady_clock::time_point deadline,
                                         ProxyTally* tally);

}  // namespace stacksym::remote
