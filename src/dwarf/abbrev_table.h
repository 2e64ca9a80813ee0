// One .debug_abbrev table: abbreviation code → tag, children flag and attribute specs.
// Parsed once per (offset, unit shape); each abbreviation knows the byte size of its
// attributes when every form has a fixed size, so DIEs of no interest are skipped in one step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "dwarf/dwarf_form.h"
#include "stacksym/result.h"

namespace stacksym::dwarf {

struct AttrSpec {
  uint16_t name = 0;
  uint16_t form = 0;
  int32_t size = -1;  // the value's byte size when the form fixes it (in this unit shape), or -1
  int64_t implicit_const = 0;
};

struct Abbrev {
  uint64_t code = 0;
  uint16_t tag = 0;
  bool has_children = false;
  uint32_t first_spec = 0;  // index into AbbrevTable::specs()
  uint32_t num_specs = 0;
  int32_t fixed_size = -1;   // total size of the attribute values, or -1 when variable
  bool has_sibling = false;  // has a DW_AT_sibling attribute (lets readers skip the subtree)
};

class AbbrevTable {
 public:
  // Parses the table at `offset` of `section` (up to its terminating 0 code).
  static Result<AbbrevTable> Parse(std::span<const uint8_t> section, uint64_t offset,
                                   const FormContext& ctx);

  // nullptr for an unknown code.
  const Abbrev* Find(uint64_t code) const {
    if (code < dense_.size()) {
      uint32_t i = dense_[code];
      return i == kNone ? nullptr : &abbrevs_[i];
    }
    return FindSparse(code);
  }
  std::span<const AttrSpec> specs(const Abbrev& a) const {
    return {specs_.data() + a.first_spec, a.num_specs};
  }
  size_t size() const { return abbrevs_.size(); }
  size_t memory_bytes() const {
    return abbrevs_.capacity() * sizeof(Abbrev) + specs_.capacity() * sizeof(AttrSpec) +
           dense_.capacity() * sizeof(uint32_t);
  }

 private:
  static constexpr uint32_t kNone = 0xffffffffu;
  const Abbrev* FindSparse(uint64_t code) const;

  std::vector<Abbrev> abbrevs_;  // in file order; sorted by code after parsing for FindSparse
  std::vector<AttrSpec> specs_;
  std::vector<uint32_t> dense_;  // code → index for small codes (the usual 1..N numbering)
  bool sorted_ = false;
};

}  // namespace stacksym::dwarf
