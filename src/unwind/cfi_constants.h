// cfi_constants.h — the DWARF call-frame constants the CFI reader and interpreter use
// (DWARF 5 section 6.4, the LSB's .eh_frame pointer encodings, GNU extensions).
#pragma once

#include <cstdint>

namespace stacksym::unwind {

// Call frame instructions. The high two bits select the three "primary" ops whose operand
// lives in the low six bits.
enum : uint8_t {
  DW_CFA_advance_loc = 0x40,
  DW_CFA_offset = 0x80,
  DW_CFA_restore = 0xc0,
  DW_CFA_nop = 0x00,
  DW_CFA_set_loc = 0x01,
  DW_CFA_advance_loc1 = 0x02,
  DW_CFA_advance_loc2 = 0x03,
  DW_CFA_advance_loc4 = 0x04,
  DW_CFA_offset_extended = 0x05,
  DW_CFA_restore_extended = 0x06,
  DW_CFA_undefined = 0x07,
  DW_CFA_same_value = 0x08,
  DW_CFA_register = 0x09,
  DW_CFA_remember_state = 0x0a,
  DW_CFA_restore_state = 0x0b,
  DW_CFA_def_cfa = 0x0c,
  DW_CFA_def_cfa_register = 0x0d,
  DW_CFA_def_cfa_offset = 0x0e,
  DW_CFA_def_cfa_expression = 0x0f,
  DW_CFA_expression = 0x10,
  DW_CFA_offset_extended_sf = 0x11,
  DW_CFA_def_cfa_sf = 0x12,
  DW_CFA_def_cfa_offset_sf = 0x13,
  DW_CFA_val_offset = 0x14,
  DW_CFA_val_offset_sf = 0x15,
  DW_CFA_val_expression = 0x16,
  DW_CFA_GNU_window_save = 0x2d,
  DW_CFA_GNU_args_size = 0x2e,
  DW_CFA_GNU_negative_offset_extended = 0x2f,
};

// Pointer encodings (.eh_frame augmentation R/P/L, .eh_frame_hdr): low nibble = format,
// bits 4-6 = what the value is relative to, bit 7 = indirect.
enum : uint8_t {
  DW_EH_PE_absptr = 0x00,
  DW_EH_PE_uleb128 = 0x01,
  DW_EH_PE_udata2 = 0x02,
  DW_EH_PE_udata4 = 0x03,
  DW_EH_PE_udata8 = 0x04,
  DW_EH_PE_sleb128 = 0x09,
  DW_EH_PE_sdata2 = 0x0a,
  DW_EH_PE_sdata4 = 0x0b,
  DW_EH_PE_sdata8 = 0x0c,
  DW_EH_PE_pcrel = 0x10,
  DW_EH_PE_textrel = 0x20,
  DW_EH_PE_datarel = 0x30,
  DW_EH_PE_funcrel = 0x40,
  DW_EH_PE_aligned = 0x50,
  DW_EH_PE_indirect = 0x80,
  DW_EH_PE_omit = 0xff,
};

// The few DWARF expression ops the table compiler recognises in CFA and register rules.
enum : uint8_t {
  DW_OP_deref = 0x06,
  DW_OP_and = 0x1a,
  DW_OP_plus = 0x22,
  DW_OP_shl = 0x24,
  DW_OP_ge = 0x2a,
  DW_OP_lit0 = 0x30,
  DW_OP_lit31 = 0x4f,
  DW_OP_breg0 = 0x70,
};

// x86_64 DWARF register numbers (System V psABI, figure 3.36).
inline constexpr uint32_t kDwarfRbp = 6;
inline constexpr uint32_t kDwarfRsp = 7;
inline constexpr uint32_t kDwarfRip = 16;

}  // namespace stacksym::unwind
