#include "dwarf_builder.h"

#include "dwarf/dwarf_constants.h"

namespace stacksym::testing {

using namespace stacksym::dwarf;

ByteWriter& ByteWriter::Fixed(uint64_t v, int n) {
  for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return *this;
}

ByteWriter& ByteWriter::Uleb(uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    bytes_.push_back(b);
  } while (v != 0);
  return *this;
}

ByteWriter& ByteWriter::Sleb(int64_t v) {
  bool more = true;
  while (more) {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
      more = false;
    } else {
      b |= 0x80;
    }
    bytes_.push_back(b);
  }
  return *this;
}

ByteWriter& ByteWriter::Str(std::string_view s) {
  bytes_.insert(bytes_.end(), s.begin(), s.end());
  bytes_.push_back(0);
  return *this;
}

ByteWriter& ByteWriter::Raw(std::span<const uint8_t> bytes) {
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  return *this;
}

void ByteWriter::Patch32(size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes_[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

dwarf::DwarfSections TinyDwarf::sections() const {
  dwarf::DwarfSections s;
  s.info = info;
  s.abbrev = abbrev;
  s.line = line;
  s.str = str;
  return s;
}

TinyDwarf BuildTinyDwarf(int version, bool without_main) {
  TinyDwarf t;
  ByteWriter ab;
  // 1: compile unit
  ab.Uleb(1).Uleb(DW_TAG_compile_unit).U8(1);
  ab.Uleb(DW_AT_name).Uleb(DW_FORM_string);
  ab.Uleb(DW_AT_comp_dir).Uleb(DW_FORM_string);
  ab.Uleb(DW_AT_low_pc).Uleb(DW_FORM_addr);
  ab.Uleb(DW_AT_high_pc).Uleb(DW_FORM_data4);
  ab.Uleb(DW_AT_stmt_list).Uleb(DW_FORM_sec_offset);
  ab.Uleb(0).Uleb(0);
  // 2: abstract subprogram (name only, no code)
  ab.Uleb(2).Uleb(DW_TAG_subprogram).U8(0);
  ab.Uleb(DW_AT_name).Uleb(DW_FORM_string);
  ab.Uleb(0).Uleb(0);
  // 3: concrete subprogram with children
  ab.Uleb(3).Uleb(DW_TAG_subprogram).U8(1);
  ab.Uleb(DW_AT_name).Uleb(DW_FORM_strp);
  ab.Uleb(DW_AT_low_pc).Uleb(DW_FORM_addr);
  ab.Uleb(DW_AT_high_pc).Uleb(DW_FORM_data4);
  ab.Uleb(0).Uleb(0);
  // 4: inlined subroutine with children
  ab.Uleb(4).Uleb(DW_TAG_inlined_subroutine).U8(1);
  ab.Uleb(DW_AT_abstract_origin).Uleb(DW_FORM_ref4);
  ab.Uleb(DW_AT_low_pc).Uleb(DW_FORM_addr);
  ab.Uleb(DW_AT_high_pc).Uleb(DW_FORM_data4);
  ab.Uleb(DW_AT_call_file).Uleb(DW_FORM_data1);
  ab.Uleb(DW_AT_call_line).Uleb(DW_FORM_data1);
  ab.Uleb(DW_AT_call_column).Uleb(DW_FORM_data1);
  ab.Uleb(0).Uleb(0);
  ab.Uleb(0);
  t.abbrev = ab.bytes();

  ByteWriter str;
  str.Str("main");

  ByteWriter in;
  in.U32(0);  // length, patched
  in.U16(static_cast<uint64_t>(version));
  if (version >= 5) {
    in.U8(DW_UT_compile).U8(8).U32(0);
  } else {
    in.U32(0).U8(8);
  }
  in.Uleb(1).Str("tiny.c").Str("/src").U64(0x1000).U32(0x100).U32(0);
  t.helper_abstract_die = in.size();
  in.Uleb(2).Str("helper");
  t.leaf_abstract_die = in.size();
  in.Uleb(2).Str("leaf");
  if (!without_main) in.Uleb(3).U32(0).U64(0x1000).U32(0x100);  // main
  in.Uleb(4);
  t.helper_origin_field = in.size();
  in.U32(static_cast<uint32_t>(t.helper_abstract_die)).U64(0x1010).U32(0x10).U8(1).U8(7).U8(3);
  in.Uleb(4).U32(static_cast<uint32_t>(t.leaf_abstract_die)).U64(0x1014).U32(4).U8(1).U8(42).U8(9);
  in.U8(0);                     // end of leaf's children
  in.U8(0);                     // end of helper's children
  if (!without_main) in.U8(0);  // end of main's children
  in.U8(0);                     // end of the unit's children
  in.Patch32(0, static_cast<uint32_t>(in.size() - 4));
  t.info = in.bytes();

  // Line table, version 4 (version 5 units may still use a v4 line table).
  ByteWriter ln;
  ln.U32(0).U16(4);
  size_t header_length_at = ln.size();
  ln.U32(0);
  size_t header_start = ln.size();
  ln.U8(1).U8(1).U8(1).Fixed(static_cast<uint64_t>(-5), 1).U8(14).U8(13);
  const uint8_t lengths[] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};
  for (uint8_t l : lengths) ln.U8(l);
  ln.Str("inc").U8(0);                       // include_directories
  ln.Str("tiny.c").Uleb(0).Uleb(0).Uleb(0);  // file 1
  ln.Str("tiny.h").Uleb(1).Uleb(0).Uleb(0);  // file 2, in "inc"
  ln.U8(0);
  ln.Patch32(header_length_at, static_cast<uint32_t>(ln.size() - header_start));
  ln.U8(0).Uleb(9).U8(DW_LNE_set_address).U64(0x1000);
  ln.U8(DW_LNS_advance_line).Sleb(9).U8(DW_LNS_copy);  // 0x1000 line 10
  ln.U8(DW_LNS_advance_pc).Uleb(0x10).U8(DW_LNS_advance_line).Sleb(10);
  ln.U8(DW_LNS_set_file).Uleb(2).U8(DW_LNS_set_column).Uleb(5).U8(DW_LNS_copy);       // 0x1010 l20
  ln.U8(DW_LNS_advance_pc).Uleb(4).U8(DW_LNS_advance_line).Sleb(10).U8(DW_LNS_copy);  // 0x1014
  ln.U8(DW_LNS_advance_pc).Uleb(0xec).U8(0).Uleb(1).U8(DW_LNE_end_sequence);          // end 0x1100
  ln.Patch32(0, static_cast<uint32_t>(ln.size() - 4));
  t.line = ln.bytes();
  t.str = str.bytes();
  return t;
}

}  // namespace stacksym::testing
