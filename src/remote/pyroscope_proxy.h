// serve as a Pyroscope symbolizing proxy (`POST /push.v1.PusherService/Push`, Connect unary,
// application/proto): a PushRequest whose raw_profiles (pprof, gzipped or not) get their
// native frames named.
//
// A pprof Location is named when its Mapping has a hex build ID and a file path (not
// "[kernel...]", "[vdso]" or another bracketed name) and the Location has no Lines: its
// address is a process address, `address - memory_start + file_offset` the file offset in
// that build ID's file (as profile.proto defines it and the pprof reader reads it). It gets
// Lines (the inline chain, innermost first) and Functions; a mapping whose unnamed locations
// were all named is marked has_functions, has_filenames, has_line_numbers and
// has_inline_frames. Everything else stays as it came; a raw_profile with nothing named is
// passed on byte for byte.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "remote/proxy_frames.h"
#include "remote/symbol_service.h"
#include "stacksym/result.h"

namespace stacksym::remote {

// `body`: the serialized PushRequest (not compressed). Returns it serialized again with the
// names added; kMalformed when it, or one of its raw_profiles, does not parse, or when its
// gzipped raw_profiles inflate to more than `max_profile_bytes` together.
Result<std::string> SymbolizePushRequest(std::string_view body, SymbolService& service,
                                         std::chrono::steady_clock::time_point deadline,
                                         size_t max_profile_bytes, ProxyTally* tally);

}  // namespace stacksym::remote
