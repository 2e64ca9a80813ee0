#include "dwarf/dwarf_form.h"

#include "dwarf/dwarf_constants.h"

namespace stacksym::dwarf {

int FixedFormSize(uint16_t form, const FormContext& ctx) {
  switch (form) {
    case DW_FORM_flag_present:
    case DW_FORM_implicit_const:
      return 0;
    case DW_FORM_data1:
    case DW_FORM_ref1:
    case DW_FORM_flag:
    case DW_FORM_strx1:
    case DW_FORM_addrx1:
      return 1;
    case DW_FORM_data2:
    case DW_FORM_ref2:
    case DW_FORM_strx2:
    case DW_FORM_addrx2:
      return 2;
    case DW_FORM_strx3:
    case DW_FORM_addrx3:
      return 3;
    case DW_FORM_data4:
    case DW_FORM_ref4:
    case DW_FORM_ref_sup4:
    case DW_FORM_strx4:
    case DW_FORM_addrx4:
      return 4;
    case DW_FORM_data8:
    case DW_FORM_ref8:
    case DW_FORM_ref_sig8:
    case DW_FORM_ref_sup8:
      return 8;
    case DW_FORM_data16:
      return 16;
    case DW_FORM_addr:
      return ctx.address_size;
    case DW_FORM_ref_addr:
      return ctx.version <= 2 ? ctx.address_size : ctx.offset_size;
    case DW_FORM_strp:
    case DW_FORM_line_strp:
    case DW_FORM_sec_offset:
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_GNU_strp_alt:
      return ctx.offset_size;
    case DW_FORM_block:
    case DW_FORM_block1:
    case DW_FORM_block2:
    case DW_FORM_block4:
    case DW_FORM_exprloc:
    case DW_FORM_string:
    case DW_FORM_sdata:
    case DW_FORM_udata:
    case DW_FORM_ref_udata:
    case DW_FORM_indirect:
    case DW_FORM_strx:
    case DW_FORM_addrx:
    case DW_FORM_loclistx:
    case DW_FORM_rnglistx:
    case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index:
      return kVariableSize;
    default:
      return kUnknownForm;
  }
}

bool IsConstantForm(uint16_t form) {
  switch (form) {
    case DW_FORM_data1:
    case DW_FORM_data2:
    case DW_FORM_data4:
    case DW_FORM_data8:
    case DW_FORM_sdata:
    case DW_FORM_udata:
    case DW_FORM_implicit_const:
      return true;
    default:
      return false;
  }
}

namespace {

// DW_FORM_indirect may name another indirect form; a few levels are plenty for real data and
// keep crafted input from recursing without end.
constexpr int kMaxIndirection = 4;

bool ReadValue(ByteCursor& c, uint16_t form, int64_t implicit_const, const FormContext& ctx,
               AttrValue* out, int depth) {
  out->form = form;
  out->data = nullptr;
  switch (form) {
    case DW_FORM_addr:
      if (ctx.address_size == 0 || ctx.address_size > 8) return false;
      out->kind = ValueKind::kAddress;
      out->value = c.UN(ctx.address_size);
      break;
    case DW_FORM_data1:
      out->kind = ValueKind::kUnsigned;
      out->value = c.U8();
      break;
    case DW_FORM_data2:
      out->kind = ValueKind::kUnsigned;
      out->value = c.U16();
      break;
    case DW_FORM_data4:
      out->kind = ValueKind::kUnsigned;
      out->value = c.U32();
      break;
    case DW_FORM_data8:
      out->kind = ValueKind::kUnsigned;
      out->value = c.U64();
      break;
    case DW_FORM_data16: {
      out->kind = ValueKind::kBlock;
      auto bytes = c.Bytes(16);
      out->data = bytes.data();
      out->value = bytes.size();
      break;
    }
    case DW_FORM_flag:
      out->kind = ValueKind::kUnsigned;
      out->value = c.U8();
      break;
    case DW_FORM_flag_present:
      out->kind = ValueKind::kUnsigned;
      out->value = 1;
      break;
    case DW_FORM_udata:
      out->kind = ValueKind::kUnsigned;
      out->value = c.Uleb128();
      break;
    case DW_FORM_sdata:
      out->kind = ValueKind::kSigned;
      out->value = static_cast<uint64_t>(c.Sleb128());
      break;
    case DW_FORM_implicit_const:
      out->kind = ValueKind::kSigned;
      out->value = static_cast<uint64_t>(implicit_const);
      break;
    case DW_FORM_string: {
      std::string_view s = c.CStr();
      out->kind = ValueKind::kInlineString;
      out->data = reinterpret_cast<const uint8_t*>(s.data());
      out->value = s.size();
      break;
    }
    case DW_FORM_strp:
      out->kind = ValueKind::kStrOffset;
      out->value = c.UN(ctx.offset_size);
      break;
    case DW_FORM_line_strp:
      out->kind = ValueKind::kLineStrOffset;
      out->value = c.UN(ctx.offset_size);
      break;
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_strp_alt:
      out->kind = ValueKind::kAltStrOffset;
      out->value = c.UN(ctx.offset_size);
      break;
    case DW_FORM_strx:
    case DW_FORM_GNU_str_index:
      out->kind = ValueKind::kStrIndex;
      out->value = c.Uleb128();
      break;
    case DW_FORM_strx1:
      out->kind = ValueKind::kStrIndex;
      out->value = c.U8();
      break;
    case DW_FORM_strx2:
      out->kind = ValueKind::kStrIndex;
      out->value = c.U16();
      break;
    case DW_FORM_strx3:
      out->kind = ValueKind::kStrIndex;
      out->value = c.U24();
      break;
    case DW_FORM_strx4:
      out->kind = ValueKind::kStrIndex;
      out->value = c.U32();
      break;
    case DW_FORM_addrx:
    case DW_FORM_GNU_addr_index:
      out->kind = ValueKind::kAddrIndex;
      out->value = c.Uleb128();
      break;
    case DW_FORM_addrx1:
      out->kind = ValueKind::kAddrIndex;
      out->value = c.U8();
      break;
    case DW_FORM_addrx2:
      out->kind = ValueKind::kAddrIndex;
      out->value = c.U16();
      break;
    case DW_FORM_addrx3:
      out->kind = ValueKind::kAddrIndex;
      out->value = c.U24();
      break;
    case DW_FORM_addrx4:
      out->kind = ValueKind::kAddrIndex;
      out->value = c.U32();
      break;
    case DW_FORM_ref1:
      out->kind = ValueKind::kUnitRef;
      out->value = c.U8();
      break;
    case DW_FORM_ref2:
      out->kind = ValueKind::kUnitRef;
      out->value = c.U16();
      break;
    case DW_FORM_ref4:
      out->kind = ValueKind::kUnitRef;
      out->value = c.U32();
      break;
    case DW_FORM_ref8:
      out->kind = ValueKind::kUnitRef;
      out->value = c.U64();
      break;
    case DW_FORM_ref_udata:
      out->kind = ValueKind::kUnitRef;
      out->value = c.Uleb128();
      break;
    case DW_FORM_ref_addr:
      out->kind = ValueKind::kInfoRef;
      out->value = c.UN(ctx.version <= 2 ? ctx.address_size : ctx.offset_size);
      break;
    case DW_FORM_GNU_ref_alt:
      out->kind = ValueKind::kAltRef;
      out->value = c.UN(ctx.offset_size);
      break;
    case DW_FORM_ref_sup4:
      out->kind = ValueKind::kAltRef;
      out->value = c.U32();
      break;
    case DW_FORM_ref_sup8:
      out->kind = ValueKind::kAltRef;
      out->value = c.U64();
      break;
    case DW_FORM_ref_sig8:
      out->kind = ValueKind::kTypeSignature;
      out->value = c.U64();
      break;
    case DW_FORM_sec_offset:
      out->kind = ValueKind::kSecOffset;
      out->value = c.UN(ctx.offset_size);
      break;
    case DW_FORM_rnglistx:
      out->kind = ValueKind::kRnglistIndex;
      out->value = c.Uleb128();
      break;
    case DW_FORM_loclistx:
      out->kind = ValueKind::kLoclistIndex;
      out->value = c.Uleb128();
      break;
    case DW_FORM_block1:
    case DW_FORM_block2:
    case DW_FORM_block4:
    case DW_FORM_block:
    case DW_FORM_exprloc: {
      uint64_t len = form == DW_FORM_block1   ? c.U8()
                     : form == DW_FORM_block2 ? c.U16()
                     : form == DW_FORM_block4 ? c.U32()
                                              : c.Uleb128();
      if (!c.ok() || len > c.remaining()) {
        c.Fail();
        return false;
      }
      auto bytes = c.Bytes(static_cast<size_t>(len));
      out->kind = ValueKind::kBlock;
      out->data = bytes.data();
      out->value = bytes.size();
      break;
    }
    case DW_FORM_indirect: {
      uint64_t actual = c.Uleb128();
      if (!c.ok() || depth >= kMaxIndirection || actual > 0xffff ||
          actual == DW_FORM_implicit_const) {
        return false;
      }
      return ReadValue(c, static_cast<uint16_t>(actual), 0, ctx, out, depth + 1);
    }
    default:
      return false;
  }
  return c.ok();
}

}  // namespace

bool ReadAttrValue(ByteCursor& cursor, uint16_t form, int64_t implicit_const,
                   const FormContext& ctx, AttrValue* out) {
  return ReadValue(cursor, form, implicit_const, ctx, out, 0);
}

bool SkipAttrValue(ByteCursor& c, uint16_t form, const FormContext& ctx) {
  int depth = 0;
  while (true) {
    int size = FixedFormSize(form, ctx);
    if (size >= 0) {
      c.Skip(static_cast<size_t>(size));
      return c.ok();
    }
    if (size == kUnknownForm) return false;
    switch (form) {
      case DW_FORM_string:
        c.CStr();
        return c.ok();
      case DW_FORM_block1:
        c.Skip(c.U8());
        return c.ok();
      case DW_FORM_block2:
        c.Skip(c.U16());
        return c.ok();
      case DW_FORM_block4:
        c.Skip(c.U32());
        return c.ok();
      case DW_FORM_block:
      case DW_FORM_exprloc: {
        uint64_t len = c.Uleb128();
        if (len > c.remaining()) {
          c.Fail();
          return false;
        }
        c.Skip(static_cast<size_t>(len));
        return c.ok();
      }
      case DW_FORM_indirect: {
        uint64_t actual = c.Uleb128();
        if (!c.ok() || ++depth > kMaxIndirection || actual > 0xffff ||
            actual == DW_FORM_implicit_const) {
          return false;
        }
        form = static_cast<uint16_t>(actual);
        continue;
      }
      default:  // every other variable-size form is one LEB128
        c.SkipLeb128();
        return c.ok();
    }
  }
}

}  // namespace stacksym::dwarf
