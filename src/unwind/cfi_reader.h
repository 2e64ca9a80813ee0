// cfi_reader.h — CIEs and FDEs of one .eh_frame or .debug_frame section.
//
// Every entry is read with bounds checks: 32- and 64-bit initial lengths, the CIE id
// conventions of both sections (0 in .eh_frame, all-ones in .debug_frame), CIE versions 1, 3
// and 4, augmentations "z" "R" "P" "L" "S" and the old "eh", every DW_EH_PE pointer encoding.
// A malformed entry is skipped with a problem naming it; the entries after it are still read
// when the length field allows it.
//
//   CfiSectionInfo info{.kind = CfiSectionKind::kEhFrame, .data = bytes, .vaddr = addr};
//   CfiEntries entries = ReadCfiSection(info);
//   for (const Fde& fde : entries.fdes) { const Cie& cie = entries.cies[fde.cie_index]; ... }
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/byte_cursor.h"
#include "unwind/cfi_constants.h"

namespace stacksym::unwind {

enum class CfiSectionKind : uint8_t { kEhFrame, kDebugFrame };

const char* CfiSectionName(CfiSectionKind kind);

// The bases that DW_EH_PE_* relative encodings refer to, and a way to follow an indirect
// pointer (read 8 bytes at a virtual address of the file; nullopt when it cannot).
struct PointerBases {
  uint64_t section_vaddr = 0;  // vaddr of byte 0 of the cursor's bytes (pcrel)
  uint64_t text_vaddr = 0;     // textrel
  uint64_t data_vaddr = 0;     // datarel
  uint64_t func_vaddr = 0;     // funcrel (only inside an FDE)
  uint8_t address_size = 8;    // DW_EH_PE_absptr and _aligned
  std::function<std::optional<uint64_t>(uint64_t vaddr)> read_pointer;
};

// Reads one pointer encoded with `encoding` at the cursor. False (and the cursor failed or
// *error set) on a bad encoding or truncation. DW_EH_PE_omit is the caller's business.
bool ReadEncodedPointer(ByteCursor& cursor, uint8_t encoding, const PointerBases& bases,
                        uint64_t* out, std::string* error);

struct CfiSectionInfo {
  CfiSectionKind kind = CfiSectionKind::kEhFrame;
  std::span<const uint8_t> data;
  uint64_t vaddr = 0;        // the section's address (pcrel base); 0 for .debug_frame
  uint8_t address_size = 8;  // of the ELF class; a version-4 CIE says its own
  uint64_t text_vaddr = 0;
  uint64_t data_vaddr = 0;
  std::function<std::optional<uint64_t>(uint64_t vaddr)> read_pointer;
};

struct Cie {
  uint64_t offset = 0;  // of the length field, in the section
  uint8_t version = 0;
  std::string augmentation;
  uint8_t address_size = 8;
  uint64_t code_alignment = 1;
  int64_t data_alignment = 0;
  uint64_t return_address_column = 16;
  uint8_t fde_encoding = DW_EH_PE_absptr;
  uint8_t lsda_encoding = DW_EH_PE_omit;
  bool has_augmentation_data = false;  // 'z': FDEs carry an augmentation length
  bool signal_frame = false;           // 'S'
  std::span<const uint8_t> initial_instructions;
};

struct Fde {
  uint64_t offset = 0;  // of the length field, in the section
  uint32_t cie_index = 0;
  uint64_t pc_begin = 0;
  uint64_t pc_end = 0;  // pc_begin + address range
  std::span<const uint8_t> instructions;
  uint64_t instructions_vaddr = 0;  // section vaddr + offset of the instructions (set_loc)
};

struct CfiProblem {
  uint64_t offset = 0;  // of the entry in the section
  std::string message;
};

struct CfiEntries {
  std::vector<Cie> cies;
  std::vector<Fde> fdes;  // in section order
  std::vector<CfiProblem> problems;
  uint64_t zero_terminators = 0;
};

// Reads every CIE and FDE of the section. FDEs whose CIE is missing or malformed, whose
// pc range wraps around, or which are truncated are left out and named in `problems`.
CfiEntries ReadCfiSection(const CfiSectionInfo& info);

}  // namespace stacksym::unwind
