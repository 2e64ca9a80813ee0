// Where the members of C structs lie, by name, from a file's DWARF: a narrow query for readers of
// another program's memory (the Python interpreter's thread states, frames and code objects), not
// a type system.
//
//   std::string_view names[] = {"_ts", "PyASCIIObject"};
//   StructMembers members = StructMembers::Find(file, names);
//   std::optional<MemberLocation> m = members.Member("_ts", "cframe");
//   std::optional<MemberLocation> k = members.Member("PyASCIIObject", "state.kind");  // bit field
//   std::optional<uint64_t> size = members.Size("PyASCIIObject");
//
// Bad DWARF never fails the query: a struct that cannot be read is not found, and a member that
// cannot be read is missing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dwarf/dwarf_file.h"

namespace stacksym::dwarf {

struct MemberLocation {
  uint64_t offset = 0;      // bytes from the start of the outer struct
  uint32_t bit_offset = 0;  // a bit field's first bit from `offset`, least significant first
  uint32_t bit_size = 0;    // 0: not a bit field
  bool operator==(const MemberLocation&) const = default;
};

class StructMembers {
 public:
  // Reads, from the non-type units of `file` in order until every name is found, the first
  // complete definition (not a declaration) of each named struct or union: by its tag name
  // ("_ts") or by the name of a typedef of it ("PyASCIIObject"), at the top level of a unit.
  static StructMembers Find(DwarfFile& file, std::span<const std::string_view> names);

  bool Has(std::string_view name) const { return named_.count(std::string(name)) != 0; }
  std::optional<uint64_t> Size(std::string_view name) const;  // DW_AT_byte_size
  // `path` is "a" or "a.b.c": member a, then member b of a's struct type, and so on. Members of
  // anonymous structs and unions are found as members of the struct that holds them.
  std::optional<MemberLocation> Member(std::string_view name, std::string_view path) const;

 private:
  friend class StructReader;
  struct Field {
    std::string name;  // empty: an anonymous struct or union member
    MemberLocation location;
    int32_t type = -1;  // index into structs_ of its struct or union type; -1: another type
  };
  struct Struct {
    std::optional<uint64_t> size;
    std::vector<Field> fields;
  };
  std::optional<MemberLocation> FindField(size_t index, std::string_view name, int depth,
                                          int32_t* type) const;

  std::vector<Struct> structs_;
  std::unordered_map<std::string, size_t> named_;  // name → index into structs_
};

}  // namespace stacksym::dwarf
