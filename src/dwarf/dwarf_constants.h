// DWARF constants (tags, attributes, forms, line-program opcodes, range-list kinds) that the
// reader needs. Values are from the DWARF 5 standard plus the GNU extensions gcc and dwz emit.
#pragma once

#include <cstdint>

namespace stacksym::dwarf {

// Unit types (DWARF 5 header field; earlier versions are always compile units).
inline constexpr uint8_t DW_UT_compile = 0x01;
inline constexpr uint8_t DW_UT_type = 0x02;
inline constexpr uint8_t DW_UT_partial = 0x03;
inline constexpr uint8_t DW_UT_skeleton = 0x04;
inline constexpr uint8_t DW_UT_split_compile = 0x05;
inline constexpr uint8_t DW_UT_split_type = 0x06;

// Tags.
inline constexpr uint16_t DW_TAG_class_type = 0x02;
inline constexpr uint16_t DW_TAG_enumeration_type = 0x04;
inline constexpr uint16_t DW_TAG_lexical_block = 0x0b;
inline constexpr uint16_t DW_TAG_compile_unit = 0x11;
inline constexpr uint16_t DW_TAG_structure_type = 0x13;
inline constexpr uint16_t DW_TAG_union_type = 0x17;
inline constexpr uint16_t DW_TAG_inlined_subroutine = 0x1d;
inline constexpr uint16_t DW_TAG_subprogram = 0x2e;
inline constexpr uint16_t DW_TAG_catch_block = 0x25;
inline constexpr uint16_t DW_TAG_try_block = 0x32;
inline constexpr uint16_t DW_TAG_namespace = 0x39;
inline constexpr uint16_t DW_TAG_partial_unit = 0x3c;
inline constexpr uint16_t DW_TAG_imported_unit = 0x3d;
inline constexpr uint16_t DW_TAG_type_unit = 0x41;
inline constexpr uint16_t DW_TAG_skeleton_unit = 0x4a;
inline constexpr uint16_t DW_TAG_module = 0x1e;
inline constexpr uint16_t DW_TAG_formal_parameter = 0x05;
inline constexpr uint16_t DW_TAG_variable = 0x34;
inline constexpr uint16_t DW_TAG_member = 0x0d;  // struct members (struct_members.h)
// Type tags (the ones LLVM's dwarf::isType() names), for the variable table.
inline constexpr uint16_t DW_TAG_array_type = 0x01;
inline constexpr uint16_t DW_TAG_pointer_type = 0x0f;
inline constexpr uint16_t DW_TAG_reference_type = 0x10;
inline constexpr uint16_t DW_TAG_string_type = 0x12;
inline constexpr uint16_t DW_TAG_subroutine_type = 0x15;
inline constexpr uint16_t DW_TAG_typedef = 0x16;
inline constexpr uint16_t DW_TAG_ptr_to_member_type = 0x1f;
inline constexpr uint16_t DW_TAG_set_type = 0x20;
inline constexpr uint16_t DW_TAG_subrange_type = 0x21;
inline constexpr uint16_t DW_TAG_base_type = 0x24;
inline constexpr uint16_t DW_TAG_const_type = 0x26;
inline constexpr uint16_t DW_TAG_file_type = 0x29;
inline constexpr uint16_t DW_TAG_packed_type = 0x2d;
inline constexpr uint16_t DW_TAG_thrown_type = 0x31;
inline constexpr uint16_t DW_TAG_volatile_type = 0x35;
inline constexpr uint16_t DW_TAG_restrict_type = 0x37;
inline constexpr uint16_t DW_TAG_interface_type = 0x38;
inline constexpr uint16_t DW_TAG_unspecified_type = 0x3b;
inline constexpr uint16_t DW_TAG_shared_type = 0x40;
inline constexpr uint16_t DW_TAG_rvalue_reference_type = 0x42;
inline constexpr uint16_t DW_TAG_coarray_type = 0x44;
inline constexpr uint16_t DW_TAG_dynamic_type = 0x46;
inline constexpr uint16_t DW_TAG_atomic_type = 0x47;
inline constexpr uint16_t DW_TAG_immutable_type = 0x4b;

// Attributes.
inline constexpr uint16_t DW_AT_sibling = 0x01;
inline constexpr uint16_t DW_AT_name = 0x03;
inline constexpr uint16_t DW_AT_stmt_list = 0x10;
inline constexpr uint16_t DW_AT_low_pc = 0x11;
inline constexpr uint16_t DW_AT_high_pc = 0x12;
inline constexpr uint16_t DW_AT_comp_dir = 0x1b;
inline constexpr uint16_t DW_AT_location = 0x02;
inline constexpr uint16_t DW_AT_byte_size = 0x0b;
inline constexpr uint16_t DW_AT_lower_bound = 0x22;
inline constexpr uint16_t DW_AT_upper_bound = 0x2f;
inline constexpr uint16_t DW_AT_abstract_origin = 0x31;
inline constexpr uint16_t DW_AT_count = 0x37;
inline constexpr uint16_t DW_AT_decl_file = 0x3a;
inline constexpr uint16_t DW_AT_decl_line = 0x3b;
inline constexpr uint16_t DW_AT_type = 0x49;
// Struct members (struct_members.h).
inline constexpr uint16_t DW_AT_bit_offset = 0x0c;  // DWARF 2-3: from the storage unit's MSB
inline constexpr uint16_t DW_AT_bit_size = 0x0d;
inline constexpr uint16_t DW_AT_data_member_location = 0x38;
inline constexpr uint16_t DW_AT_declaration = 0x3c;
inline constexpr uint16_t DW_AT_data_bit_offset = 0x6b;
inline constexpr uint16_t DW_AT_specification = 0x47;
inline constexpr uint16_t DW_AT_entry_pc = 0x52;
inline constexpr uint16_t DW_AT_ranges = 0x55;
inline constexpr uint16_t DW_AT_call_column = 0x57;
inline constexpr uint16_t DW_AT_call_file = 0x58;
inline constexpr uint16_t DW_AT_call_line = 0x59;
inline constexpr uint16_t DW_AT_linkage_name = 0x6e;
inline constexpr uint16_t DW_AT_str_offsets_base = 0x72;
inline constexpr uint16_t DW_AT_addr_base = 0x73;
inline constexpr uint16_t DW_AT_loclists_base = 0x8c;
inline constexpr uint16_t DW_AT_rnglists_base = 0x74;
inline constexpr uint16_t DW_AT_dwo_name = 0x76;
inline constexpr uint16_t DW_AT_MIPS_linkage_name = 0x2007;
inline constexpr uint16_t DW_AT_GNU_dwo_name = 0x2130;
inline constexpr uint16_t DW_AT_GNU_dwo_id = 0x2131;
inline constexpr uint16_t DW_AT_GNU_ranges_base = 0x2132;
inline constexpr uint16_t DW_AT_GNU_addr_base = 0x2133;
inline constexpr uint16_t DW_AT_GNU_discriminator = 0x2136;

// Forms.
inline constexpr uint16_t DW_FORM_addr = 0x01;
inline constexpr uint16_t DW_FORM_block2 = 0x03;
inline constexpr uint16_t DW_FORM_block4 = 0x04;
inline constexpr uint16_t DW_FORM_data2 = 0x05;
inline constexpr uint16_t DW_FORM_data4 = 0x06;
inline constexpr uint16_t DW_FORM_data8 = 0x07;
inline constexpr uint16_t DW_FORM_string = 0x08;
inline constexpr uint16_t DW_FORM_block = 0x09;
inline constexpr uint16_t DW_FORM_block1 = 0x0a;
inline constexpr uint16_t DW_FORM_data1 = 0x0b;
inline constexpr uint16_t DW_FORM_flag = 0x0c;
inline constexpr uint16_t DW_FORM_sdata = 0x0d;
inline constexpr uint16_t DW_FORM_strp = 0x0e;
inline constexpr uint16_t DW_FORM_udata = 0x0f;
inline constexpr uint16_t DW_FORM_ref_addr = 0x10;
inline constexpr uint16_t DW_FORM_ref1 = 0x11;
inline constexpr uint16_t DW_FORM_ref2 = 0x12;
inline constexpr uint16_t DW_FORM_ref4 = 0x13;
inline constexpr uint16_t DW_FORM_ref8 = 0x14;
inline constexpr uint16_t DW_FORM_ref_udata = 0x15;
inline constexpr uint16_t DW_FORM_indirect = 0x16;
inline constexpr uint16_t DW_FORM_sec_offset = 0x17;
inline constexpr uint16_t DW_FORM_exprloc = 0x18;
inline constexpr uint16_t DW_FORM_flag_present = 0x19;
inline constexpr uint16_t DW_FORM_strx = 0x1a;
inline constexpr uint16_t DW_FORM_addrx = 0x1b;
inline constexpr uint16_t DW_FORM_ref_sup4 = 0x1c;
inline constexpr uint16_t DW_FORM_strp_sup = 0x1d;
inline constexpr uint16_t DW_FORM_data16 = 0x1e;
inline constexpr uint16_t DW_FORM_line_strp = 0x1f;
inline constexpr uint16_t DW_FORM_ref_sig8 = 0x20;
inline constexpr uint16_t DW_FORM_implicit_const = 0x21;
inline constexpr uint16_t DW_FORM_loclistx = 0x22;
inline constexpr uint16_t DW_FORM_rnglistx = 0x23;
inline constexpr uint16_t DW_FORM_ref_sup8 = 0x24;
inline constexpr uint16_t DW_FORM_strx1 = 0x25;
inline constexpr uint16_t DW_FORM_strx2 = 0x26;
inline constexpr uint16_t DW_FORM_strx3 = 0x27;
inline constexpr uint16_t DW_FORM_strx4 = 0x28;
inline constexpr uint16_t DW_FORM_addrx1 = 0x29;
inline constexpr uint16_t DW_FORM_addrx2 = 0x2a;
inline constexpr uint16_t DW_FORM_addrx3 = 0x2b;
inline constexpr uint16_t DW_FORM_addrx4 = 0x2c;
inline constexpr uint16_t DW_FORM_GNU_addr_index = 0x1f01;
inline constexpr uint16_t DW_FORM_GNU_str_index = 0x1f02;
inline constexpr uint16_t DW_FORM_GNU_ref_alt = 0x1f20;
inline constexpr uint16_t DW_FORM_GNU_strp_alt = 0x1f21;

// Location expression operations (the ones a global's address is written with).
inline constexpr uint8_t DW_OP_addr = 0x03;
inline constexpr uint8_t DW_OP_plus_uconst = 0x23;
inline constexpr uint8_t DW_OP_constu = 0x10;  // member locations of DWARF 2 producers
inline constexpr uint8_t DW_OP_addrx = 0xa1;
inline constexpr uint8_t DW_OP_GNU_addr_index = 0xfb;  // DWARF 4 split units' DW_OP_addrx
// Line-number program.
inline constexpr uint8_t DW_LNS_copy = 0x01;
inline constexpr uint8_t DW_LNS_advance_pc = 0x02;
inline constexpr uint8_t DW_LNS_advance_line = 0x03;
inline constexpr uint8_t DW_LNS_set_file = 0x04;
inline constexpr uint8_t DW_LNS_set_column = 0x05;
inline constexpr uint8_t DW_LNS_negate_stmt = 0x06;
inline constexpr uint8_t DW_LNS_set_basic_block = 0x07;
inline constexpr uint8_t DW_LNS_const_add_pc = 0x08;
inline constexpr uint8_t DW_LNS_fixed_advance_pc = 0x09;
inline constexpr uint8_t DW_LNS_set_prologue_end = 0x0a;
inline constexpr uint8_t DW_LNS_set_epilogue_begin = 0x0b;
inline constexpr uint8_t DW_LNS_set_isa = 0x0c;
inline constexpr uint8_t DW_LNE_end_sequence = 0x01;
inline constexpr uint8_t DW_LNE_set_address = 0x02;
inline constexpr uint8_t DW_LNE_define_file = 0x03;
inline constexpr uint8_t DW_LNE_set_discriminator = 0x04;
inline constexpr uint16_t DW_LNCT_path = 0x1;
inline constexpr uint16_t DW_LNCT_directory_index = 0x2;
inline constexpr uint16_t DW_LNCT_timestamp = 0x3;
inline constexpr uint16_t DW_LNCT_size = 0x4;
inline constexpr uint16_t DW_LNCT_MD5 = 0x5;
inline constexpr uint16_t DW_LNCT_LLVM_source = 0x2001;  // the file's text (clang -gembed-source)

// Range lists (.debug_rnglists).
inline constexpr uint8_t DW_RLE_end_of_list = 0x00;
inline constexpr uint8_t DW_RLE_base_addressx = 0x01;
inline constexpr uint8_t DW_RLE_startx_endx = 0x02;
inline constexpr uint8_t DW_RLE_startx_length = 0x03;
inline constexpr uint8_t DW_RLE_offset_pair = 0x04;
inline constexpr uint8_t DW_RLE_base_address = 0x05;
inline constexpr uint8_t DW_RLE_start_end = 0x06;
inline constexpr uint8_t DW_RLE_start_length = 0x07;
// Location lists (.debug_loclists).
inline constexpr uint8_t DW_LLE_end_of_list = 0x00;
inline constexpr uint8_t DW_LLE_base_addressx = 0x01;
inline constexpr uint8_t DW_LLE_startx_endx = 0x02;
inline constexpr uint8_t DW_LLE_startx_length = 0x03;
inline constexpr uint8_t DW_LLE_offset_pair = 0x04;
inline constexpr uint8_t DW_LLE_default_location = 0x05;
inline constexpr uint8_t DW_LLE_base_address = 0x06;
inline constexpr uint8_t DW_LLE_start_end = 0x07;
inline constexpr uint8_t DW_LLE_start_length = 0x08;
// DWARF 4 split units' .debug_loc.dwo entries (GNU extension, the DWARF 5 draft's codes).
inline constexpr uint8_t DW_LLE_GNU_end_of_list_entry = 0x00;
inline constexpr uint8_t DW_LLE_GNU_base_address_selection_entry = 0x01;
inline constexpr uint8_t DW_LLE_GNU_start_end_entry = 0x02;
inline constexpr uint8_t DW_LLE_GNU_start_length_entry = 0x03;

}  // namespace stacksym::dwarf
