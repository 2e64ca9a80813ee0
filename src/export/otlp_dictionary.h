// The ProfilesDictionary of an OTLP profiles request (opentelemetry-proto v1.11.0,
// profiles.v1development), its tables deduplicated as they fill. Entry 0 of every table is the
// zero value, so that an index 0 anywhere means "unset". One writer for both paths that write
// dictionaries: the agent's exporter (a fresh dictionary per request) and serve's OTLP proxy
// (names added to a client's dictionary), so that a Function or a string is written one way.
//
//   OtlpDictionaryWriter d = OtlpDictionaryWriter::Fresh(request.mutable_dictionary());
//   int32_t fn = d.Function(frame, /*python=*/false);
//
//   OtlpDictionaryWriter more = OtlpDictionaryWriter::Adopt(received.mutable_dictionary());
//   int32_t same_or_new = more.Function(frame, false);  // reuses an equal Function of the client's
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "otlp_profiles.pb.h"
#include "output/proto_string_table.h"
#include "stacksym/frame.h"

namespace stacksym {

class OtlpDictionaryWriter {
 public:
  // An empty dictionary: entries 0 of every table written (the zero Link with the zero bytes
  // of the lengths codecs expect).
  static OtlpDictionaryWriter Fresh(otlp::ProfilesDictionary* out);
  // A dictionary that has entries already (a received request): its strings and functions are
  // indexed, so that equal ones are reused; its other tables are appended to without looking.
  // Entry 0 of the string and function tables is added when missing.
  static OtlpDictionaryWriter Adopt(otlp::ProfilesDictionary* out);

  // Strings must be UTF-8: bytes that are not become '?' (ProtoStringTable).
  int32_t String(std::string_view s) { return static_cast<int32_t>(strings_.Index(s)); }
  int32_t StringAttribute(std::string_view key, std::string_view value) {
    return Attribute(key, /*is_int=*/false, value, 0);
  }
  int32_t IntAttribute(std::string_view key, int64_t value) {
    return Attribute(key, /*is_int=*/true, "", value);
  }
  // name (demangled, else the linkage name), system_name (the linkage name), filename; the
  // start line for Python functions only (a native function's is left out, as pprof's is: not
  // every path that names native frames knows it).
  int32_t Function(const SourceFrame& line, bool python);
  int32_t Stack(const std::vector<int32_t>& locations);
  otlp::ProfilesDictionary* out() { return out_; }

 private:
  explicit OtlpDictionaryWriter(otlp::ProfilesDictionary* out) : out_(out), strings_(out) {}
  int32_t Attribute(std::string_view key, bool is_int, std::string_view s, int64_t i);

  otlp::ProfilesDictionary* out_;
  ProtoStringTable<otlp::ProfilesDictionary> strings_;
  std::map<std::tuple<int32_t, bool, std::string, int64_t>, int32_t> attributes_;
  std::map<std::tuple<int32_t, int32_t, int32_t, int64_t>, int32_t> functions_;
  std::map<std::vector<int32_t>, int32_t> stacks_;
};

}  // namespace stacksym
