// Reading and skipping DWARF attribute values (DW_FORM_*), versions 2–5, 32- and 64-bit DWARF,
// plus the GNU split-DWARF and dwz forms. Values come out raw and classified (an index into
// .debug_str_offsets, a unit-relative reference, ...); resolving them needs the unit's bases
// and is done by DwarfFile.
#pragma once

#include <cstdint>

#include "base/byte_cursor.h"

namespace stacksym::dwarf {

// What the reader needs to know about the unit a value sits in.
struct FormContext {
  uint16_t version = 4;
  uint8_t address_size = 8;
  uint8_t offset_size = 4;  // 4 for 32-bit DWARF, 8 for 64-bit DWARF
};

enum class ValueKind : uint8_t {
  kUnsigned,       // data1/2/4/8, udata, flag, implicit_const (as bits)
  kSigned,         // sdata (and implicit_const, which is signed)
  kAddress,        // DW_FORM_addr
  kAddrIndex,      // addrx*, GNU_addr_index: index into .debug_addr at the unit's addr_base
  kStrOffset,      // strp: offset into .debug_str
  kLineStrOffset,  // line_strp: offset into .debug_line_str
  kAltStrOffset,   // GNU_strp_alt, strp_sup: offset into the supplementary file's .debug_str
  kStrIndex,       // strx*, GNU_str_index: index into .debug_str_offsets at str_offsets_base
  kInlineString,   // DW_FORM_string: data/size point at the bytes (no NUL)
  kUnitRef,        // ref1/2/4/8/udata: offset relative to the start of the unit
  kInfoRef,        // ref_addr: offset into .debug_info
  kAltRef,         // GNU_ref_alt, ref_sup4/8: offset into the supplementary file's .debug_info
  kSecOffset,      // sec_offset: offset into some other section (lines, ranges, ...)
  kRnglistIndex,   // rnglistx
  kLoclistIndex,   // loclistx
  kBlock,          // block*, exprloc, data16: data/size
  kTypeSignature,  // ref_sig8
};

struct AttrValue {
  uint16_t form = 0;
  ValueKind kind = ValueKind::kUnsigned;
  uint64_t value = 0;             // integer, offset or index; size of data for strings/blocks
  const uint8_t* data = nullptr;  // kInlineString, kBlock
};

// Reads one value of `form`. `implicit_const` is the abbreviation's constant for
// DW_FORM_implicit_const. Returns false (and fails the cursor when bytes are missing) for
// truncated data and unknown forms.
bool ReadAttrValue(ByteCursor& cursor, uint16_t form, int64_t implicit_const,
                   const FormContext& ctx, AttrValue* out);

// Moves past one value of `form`; false on truncation or an unknown form.
bool SkipAttrValue(ByteCursor& cursor, uint16_t form, const FormContext& ctx);

// Size in bytes of a value of `form` when it does not depend on the data; kVariableSize for
// LEB128, strings and blocks; kUnknownForm for forms the reader does not know.
inline constexpr int kVariableSize = -1;
inline constexpr int kUnknownForm = -2;
int FixedFormSize(uint16_t form, const FormContext& ctx);

// True for forms whose value is a constant (DW_AT_high_pc as an offset from DW_AT_low_pc).
bool IsConstantForm(uint16_t form);

}  // namespace stacksym::dwarf
