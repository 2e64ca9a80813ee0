// The string table of a protobuf message with `repeated string string_table` (pprof's Profile,
// OTLP's ProfilesDictionary), deduplicated as it fills: the one table both dictionary writers
// (output/pprof_dictionary.h, export/otlp_dictionary.h) keep.
//
//   ProtoStringTable<pprof::Profile> strings(&profile);  // string 0 is "" when it was empty
//   int64_t name = strings.Index(function_name);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "output/flame_tree.h"

namespace stacksym {

template <typename Message>
class ProtoStringTable {
 public:
  // Indexes the strings `out` has (of equal ones, the first), and writes "" as entry 0 of an
  // empty table.
  explicit ProtoStringTable(Message* out) : out_(out) {
    if (out_->string_table_size() == 0) out_->add_string_table();
    for (int i = out_->string_table_size() - 1; i >= 0; --i) by_written_[out_->string_table(i)] = i;
  }

  // Strings must be UTF-8 (a proto3 string that is not fails to parse): bytes that are not
  // become '?'. A string met before costs one lookup, without the UTF-8 check.
  int64_t Index(std::string_view s) {
    if (auto it = by_given_.find(s); it != by_given_.end()) return it->second;
    std::string valid = output::ToValidUtf8(s);
    auto [written, added] = by_written_.try_emplace(valid, out_->string_table_size());
    if (added) out_->add_string_table(std::move(valid));
    by_given_.emplace(std::string(s), written->second);
    return written->second;
  }

 private:
  // Looked up by string_view: no copy of the caller's string on a hit.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Map = std::unordered_map<std::string, int64_t, Hash, std::equal_to<>>;

  Message* out_;
  Map by_given_;    // as callers gave them
  Map by_written_;  // as written (UTF-8)
};

}  // namespace stacksym
