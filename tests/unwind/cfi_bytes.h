// cfi_bytes.h — writes .eh_frame / .debug_frame bytes by hand for tests: well-formed CIEs and
// FDEs with chosen instructions, and the raw pieces to make broken ones.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "unwind/cfi_reader.h"

namespace stacksym::testing {

void AppendUleb(std::vector<uint8_t>& b, uint64_t v);
void AppendSleb(std::vector<uint8_t>& b, int64_t v);

class CfiBytes {
 public:
  explicit CfiBytes(unwind::CfiSectionKind kind) : kind_(kind) {}

  // A version-1 CIE ("zR" with absolute udata8 FDE pointers in .eh_frame, "" in .debug_frame)
  // with code alignment 1, data alignment -8, return address column 16. Returns its offset.
  size_t AddCie(const std::vector<uint8_t>& instructions, bool signal_frame = false);
  // An FDE for [begin, begin + size) using the CIE at `cie_offset`.
  size_t AddFde(size_t cie_offset, uint64_t begin, uint64_t size,
                const std::vector<uint8_t>& instructions);
  // Full control, for every header variant.
  struct CieSpec {
    bool dwarf64 = false;
    uint8_t version = 1;
    std::string augmentation;                 // written as is
    std::vector<uint8_t> after_augmentation;  // "eh" pointer, v4 address/segment size
    uint64_t code_alignment = 1;
    int64_t data_alignment = -8;
    uint64_t return_address_column = 16;
    std::vector<uint8_t> augmentation_data;  // written with its length when `z` is used
    bool z = false;
    std::vector<uint8_t> instructions;
  };
  size_t AddCie(const CieSpec& spec);
  struct FdeSpec {
    bool dwarf64 = false;
    size_t cie_offset = 0;
    std::vector<uint8_t> pc_fields;  // pc_begin and range, already encoded
    bool z = false;
    std::vector<uint8_t> augmentation_data;
    std::vector<uint8_t> instructions;
  };
  size_t AddFde(const FdeSpec& spec);
  // Where the pc_begin field of the next FDE will be (for pcrel encodings).
  size_t NextFdePcField(bool dwarf64) const {
    const bool eh = kind_ == unwind::CfiSectionKind::kEhFrame;
    return bytes_.size() + (dwarf64 ? (eh ? 16 : 20) : 8);
  }
  size_t size() const { return bytes_.size(); }

  // Bytes appended as they are (to break the section on purpose).
  void AddRaw(const std::vector<uint8_t>& bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  }

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  unwind::CfiSectionInfo Info() const;

 private:
  void PatchLength(size_t start, bool dwarf64);

  unwind::CfiSectionKind kind_;
  std::vector<uint8_t> bytes_;
};

// The CIE instructions gcc emits on x86_64: CFA = RSP+8, RA at CFA-8.
std::vector<uint8_t> X86CieInstructions();

}  // namespace stacksym::testing
