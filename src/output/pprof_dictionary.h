// The string table and Functions of a pprof profile (profile.proto), deduplicated as they fill.
// One writer for both paths that write them: the pprof encoder (a fresh profile) and serve's
// Pyroscope proxy (names added to a client's raw profile), so that a frame's Function is
// written one way. String 0 is "", as profile.proto wants; Function ids start at 1.
//
//   PprofDictionaryWriter d = PprofDictionaryWriter::Fresh(&profile);
//   location->add_line()->set_function_id(d.Function(frame, /*python=*/false));
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "output/proto_string_table.h"
#include "profile.pb.h"
#include "stacksym/frame.h"

namespace stacksym {

class PprofDictionaryWriter {
 public:
  static PprofDictionaryWriter Fresh(perftools::profiles::Profile* out);
  // A profile that has strings and Functions already: they are indexed, so that equal ones are
  // reused; new Functions get ids past the largest there.
  static PprofDictionaryWriter Adopt(perftools::profiles::Profile* out);

  // profile.proto strings must be UTF-8: bytes that are not become '?' (ProtoStringTable).
  int64_t String(std::string_view s) { return strings_.Index(s); }
  // name (demangled, else the linkage name), system_name (the linkage name, else the name),
  // filename; the start line for Python functions only: not every path that names native
  // frames knows it, and every path's profile must be the same bytes.
  uint64_t Function(const SourceFrame& line, bool python);

 private:
  explicit PprofDictionaryWriter(perftools::profiles::Profile* out) : out_(out), strings_(out) {}

  perftools::profiles::Profile* out_;
  ProtoStringTable<perftools::profiles::Profile> strings_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, uint64_t> functions_;
  uint64_t next_function_id_ = 1;
};

}  // namespace stacksym
