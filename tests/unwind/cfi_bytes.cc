#include "cfi_bytes.h"

#include <cstring>

#include "../elf/elf_builder.h"

namespace stacksym::testing {
namespace {

void Patch32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

void AppendUleb(std::vector<uint8_t>& b, uint64_t v) {
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    if (v != 0) byte |= 0x80;
    b.push_back(byte);
  } while (v != 0);
}

void AppendSleb(std::vector<uint8_t>& b, int64_t v) {
  bool more = true;
  while (more) {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    if ((v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40))) {
      more = false;
    } else {
      byte |= 0x80;
    }
    b.push_back(byte);
  }
}

std::vector<uint8_t> X86CieInstructions() {
  return {unwind::DW_CFA_def_cfa, 7, 8, unwind::DW_CFA_offset | 16, 1};
}

size_t CfiBytes::AddCie(const std::vector<uint8_t>& instructions, bool signal_frame) {
  const bool eh = kind_ == unwind::CfiSectionKind::kEhFrame;
  size_t start = bytes_.size();
  Append32(bytes_, 0);  // length, patched below
  Append32(bytes_, eh ? 0 : 0xffffffffu);
  bytes_.push_back(1);  // version
  std::string aug = eh ? (signal_frame ? "zRS" : "zR") : "";
  bytes_.insert(bytes_.end(), aug.begin(), aug.end());
  bytes_.push_back(0);
  AppendUleb(bytes_, 1);   // code alignment
  AppendSleb(bytes_, -8);  // data alignment
  bytes_.push_back(16);    // return address column
  if (eh) {
    AppendUleb(bytes_, 1);
    bytes_.push_back(unwind::DW_EH_PE_udata8);
  }
  bytes_.insert(bytes_.end(), instructions.begin(), instructions.end());
  Patch32(bytes_, start, static_cast<uint32_t>(bytes_.size() - start - 4));
  return start;
}

size_t CfiBytes::AddFde(size_t cie_offset, uint64_t begin, uint64_t size,
                        const std::vector<uint8_t>& instructions) {
  const bool eh = kind_ == unwind::CfiSectionKind::kEhFrame;
  size_t start = bytes_.size();
  Append32(bytes_, 0);
  size_t id_at = bytes_.size();
  Append32(bytes_, static_cast<uint32_t>(eh ? id_at - cie_offset : cie_offset));
  Append64(bytes_, begin);
  Append64(bytes_, size);
  if (eh) AppendUleb(bytes_, 0);  // augmentation data length
  bytes_.insert(bytes_.end(), instructions.begin(), instructions.end());
  Patch32(bytes_, start, static_cast<uint32_t>(bytes_.size() - start - 4));
  return start;
}

size_t CfiBytes::AddCie(const CieSpec& spec) {
  const bool eh = kind_ == unwind::CfiSectionKind::kEhFrame;
  size_t start = bytes_.size();
  if (spec.dwarf64) {
    Append32(bytes_, 0xffffffffu);
    Append64(bytes_, 0);
    if (eh) {
      Append32(bytes_, 0);  // the LSB keeps .eh_frame's CIE id at 4 bytes
    } else {
      Append64(bytes_, ~uint64_t{0});
    }
  } else {
    Append32(bytes_, 0);
    Append32(bytes_, eh ? 0 : 0xffffffffu);
  }
  bytes_.push_back(spec.version);
  bytes_.insert(bytes_.end(), spec.augmentation.begin(), spec.augmentation.end());
  bytes_.push_back(0);
  bytes_.insert(bytes_.end(), spec.after_augmentation.begin(), spec.after_augmentation.end());
  AppendUleb(bytes_, spec.code_alignment);
  AppendSleb(bytes_, spec.data_alignment);
  if (spec.version == 1) {
    bytes_.push_back(static_cast<uint8_t>(spec.return_address_column));
  } else {
    AppendUleb(bytes_, spec.return_address_column);
  }
  if (spec.z) {
    AppendUleb(bytes_, spec.augmentation_data.size());
    bytes_.insert(bytes_.end(), spec.augmentation_data.begin(), spec.augmentation_data.end());
  }
  bytes_.insert(bytes_.end(), spec.instructions.begin(), spec.instructions.end());
  PatchLength(start, spec.dwarf64);
  return start;
}

size_t CfiBytes::AddFde(const FdeSpec& spec) {
  const bool eh = kind_ == unwind::CfiSectionKind::kEhFrame;
  size_t start = bytes_.size();
  if (spec.dwarf64) {
    Append32(bytes_, 0xffffffffu);
    Append64(bytes_, 0);
    size_t id_at = bytes_.size();
    if (eh) {
      Append32(bytes_, static_cast<uint32_t>(id_at - spec.cie_offset));
    } else {
      Append64(bytes_, spec.cie_offset);
    }
  } else {
    Append32(bytes_, 0);
    size_t id_at = bytes_.size();
    Append32(bytes_, static_cast<uint32_t>(eh ? id_at - spec.cie_offset : spec.cie_offset));
  }
  bytes_.insert(bytes_.end(), spec.pc_fields.begin(), spec.pc_fields.end());
  if (spec.z) {
    AppendUleb(bytes_, spec.augmentation_data.size());
    bytes_.insert(bytes_.end(), spec.augmentation_data.begin(), spec.augmentation_data.end());
  }
  bytes_.insert(bytes_.end(), spec.instructions.begin(), spec.instructions.end());
  PatchLength(start, spec.dwarf64);
  return start;
}

void CfiBytes::PatchLength(size_t start, bool dwarf64) {
  if (dwarf64) {
    uint64_t length = bytes_.size() - start - 12;
    for (int i = 0; i < 8; ++i) bytes_[start + 4 + i] = static_cast<uint8_t>(length >> (8 * i));
  } else {
    Patch32(bytes_, start, static_cast<uint32_t>(bytes_.size() - start - 4));
  }
}

unwind::CfiSectionInfo CfiBytes::Info() const {
  unwind::CfiSectionInfo info;
  info.kind = kind_;
  info.data = bytes_;
  info.vaddr = kind_ == unwind::CfiSectionKind::kEhFrame ? 0x10000 : 0;
  return info;
}

}  // namespace stacksym::testing
