#include "unwind/cfi_reader.h"

#include <string_view>
#include <unordered_map>

#include "base/hex.h"

namespace stacksym::unwind {
namespace {

// Reads a value in the format of the low nibble of `encoding` (no base applied).
bool ReadPointerFormat(ByteCursor& c, uint8_t format, uint8_t address_size, uint64_t* out,
                       std::string* error) {
  switch (format) {
    case DW_EH_PE_absptr:
      *out = c.UN(address_size);
      break;
    case DW_EH_PE_uleb128:
      *out = c.Uleb128();
      break;
    case DW_EH_PE_udata2:
      *out = c.U16();
      break;
    case DW_EH_PE_udata4:
      *out = c.U32();
      break;
    case DW_EH_PE_udata8:
      *out = c.U64();
      break;
    case DW_EH_PE_sleb128:
      *out = static_cast<uint64_t>(c.Sleb128());
      break;
    case DW_EH_PE_sdata2:
      *out = static_cast<uint64_t>(int64_t{c.S16()});
      break;
    case DW_EH_PE_sdata4:
      *out = static_cast<uint64_t>(int64_t{c.S32()});
      break;
    case DW_EH_PE_sdata8:
      *out = static_cast<uint64_t>(c.S64());
      break;
    default:
      *error = "unknown pointer format " + HexU64(format);
      return false;
  }
  if (!c.ok()) {
    *error = "pointer truncated";
    return false;
  }
  return true;
}

class SectionReader {
 public:
  explicit SectionReader(const CfiSectionInfo& info) : info_(info) {
    bases_.section_vaddr = info.vaddr;
    bases_.text_vaddr = info.text_vaddr;
    bases_.data_vaddr = info.data_vaddr;
    bases_.read_pointer = info.read_pointer;
  }

  CfiEntries Read() {
    ByteCursor c(info_.data);
    while (!c.at_end()) {
      const uint64_t entry_offset = c.offset();
      Header h;
      if (!ReadHeader(c, &h)) {
        Problem(entry_offset, h.error);
        break;  // without a trustworthy length the next entry cannot be found
      }
      if (h.length == 0) {
        ++out_.zero_terminators;
        continue;
      }
      if (h.is_cie) {
        (void)CieAt(entry_offset);  // parsed (and any problem noted) once, when first met
      } else {
        ReadFde(entry_offset, h);
      }
      c.Seek(h.end);
    }
    return std::move(out_);
  }

 private:
  struct Header {
    uint64_t length = 0;
    bool is64 = false;
    uint64_t id_offset = 0;
    uint8_t id_size = 4;
    uint64_t id = 0;
    bool is_cie = false;
    uint64_t end = 0;  // one past the entry
    std::string error;
  };

  bool eh() const { return info_.kind == CfiSectionKind::kEhFrame; }

  bool ReadHeader(ByteCursor& c, Header* h) {
    h->length = c.U32();
    if (h->length == 0xffffffffu) {
      h->is64 = true;
      h->length = c.U64();
    }
    if (!c.ok()) {
      h->error = "entry length truncated";
      return false;
    }
    if (h->length == 0) return true;
    if (h->length > c.remaining()) {
      h->error = "entry length " + HexU64(h->length) + " runs past the end of the section";
      return false;
    }
    h->end = c.offset() + h->length;
    h->id_offset = c.offset();
    // The LSB gives .eh_frame a 4-byte CIE id / pointer even after a 64-bit length.
    h->id_size = h->is64 && !eh() ? 8 : 4;
    h->id = h->id_size == 8 ? c.U64() : c.U32();
    if (!c.ok() || c.offset() > h->end) {
      h->error = "entry too short for its CIE id";
      return false;
    }
    const uint64_t cie_id = eh() ? 0 : (h->id_size == 8 ? ~uint64_t{0} : 0xffffffffu);
    h->is_cie = h->id == cie_id;
    return true;
  }

  void Problem(uint64_t offset, std::string message) {
    out_.problems.push_back({offset, std::move(message)});
  }

  // The index of the CIE at `offset`, parsing it on first use; -1 when it is not a valid CIE
  // (the problem is recorded once, the first time).
  int64_t CieAt(uint64_t offset) {
    auto it = cie_by_offset_.find(offset);
    if (it != cie_by_offset_.end()) return it->second;
    std::string error;
    Cie cie;
    int64_t index = -1;
    if (ParseCie(offset, &cie, &error)) {
      index = static_cast<int64_t>(out_.cies.size());
      out_.cies.push_back(std::move(cie));
    } else {
      Problem(offset, "CIE: " + error);
    }
    cie_by_offset_.emplace(offset, index);
    return index;
  }

  bool ParseCie(uint64_t offset, Cie* cie, std::string* error) {
    if (offset >= info_.data.size()) {
      *error = "offset " + HexU64(offset) + " is past the end of the section";
      return false;
    }
    ByteCursor whole(info_.data);
    whole.Seek(offset);
    Header h;
    if (!ReadHeader(whole, &h)) {
      *error = h.error;
      return false;
    }
    if (h.length == 0 || !h.is_cie) {
      *error = "no CIE at offset " + HexU64(offset);
      return false;
    }
    // A cursor that ends with the entry but keeps section offsets (pcrel, aligned).
    ByteCursor c(info_.data.data(), h.end);
    c.Seek(whole.offset());
    cie->offset = offset;
    cie->address_size = info_.address_size;
    cie->version = c.U8();
    if (cie->version != 1 && cie->version != 3 && cie->version != 4) {
      *error = "unsupported CIE version " + std::to_string(cie->version);
      return false;
    }
    std::string_view aug = c.CStr();
    if (!c.ok()) {
      *error = "augmentation string not terminated";
      return false;
    }
    cie->augmentation = std::string(aug);
    if (cie->version == 4) {
      cie->address_size = c.U8();
      uint8_t segment_size = c.U8();
      if (cie->address_size != 4 && cie->address_size != 8) {
        *error = "address size " + std::to_string(cie->address_size) + " not supported";
        return false;
      }
      if (segment_size != 0) {
        *error = "segment selectors not supported";
        return false;
      }
    }
    if (aug.starts_with("eh")) {  // gcc < 3: a pointer to the exception table follows
      c.Skip(cie->address_size);
      aug.remove_prefix(2);
    }
    cie->code_alignment = c.Uleb128();
    cie->data_alignment = c.Sleb128();
    cie->return_address_column = cie->version == 1 ? c.U8() : c.Uleb128();
    if (!c.ok()) {
      *error = "CIE truncated";
      return false;
    }
    if (!aug.empty()) {
      if (aug[0] != 'z') {
        *error = "augmentation \"" + cie->augmentation + "\" not understood";
        return false;
      }
      cie->has_augmentation_data = true;
      uint64_t aug_length = c.Uleb128();
      if (!c.ok() || aug_length > c.remaining()) {
        *error = "augmentation data length " + HexU64(aug_length) + " runs past the CIE";
        return false;
      }
      const uint64_t aug_end = c.offset() + aug_length;
      ByteCursor a(info_.data.data(), aug_end);
      a.Seek(c.offset());
      for (char ch : aug.substr(1)) {
        if (ch == 'R') {
          cie->fde_encoding = a.U8();
        } else if (ch == 'L') {
          cie->lsda_encoding = a.U8();
        } else if (ch == 'P') {
          uint8_t encoding = a.U8();
          uint64_t personality = 0;
          PointerBases bases = bases_;
          bases.address_size = cie->address_size;
          // Only where the personality is matters to us, not its value: an indirect
          // pointer is not followed.
          encoding = static_cast<uint8_t>(encoding & ~DW_EH_PE_indirect);
          if (!a.ok() || !ReadEncodedPointer(a, encoding, bases, &personality, error)) {
            *error = "personality: " + (error->empty() ? std::string("truncated") : *error);
            return false;
          }
        } else if (ch == 'S') {
          cie->signal_frame = true;
        } else if (ch == 'B') {
          // AArch64 pointer authentication key B: no data.
        } else {
          break;  // unknown: the augmentation length lets us skip the rest
        }
        if (!a.ok()) {
          *error = "augmentation data truncated";
          return false;
        }
      }
      c.Seek(aug_end);
    }
    if ((cie->fde_encoding & 0x0f) > DW_EH_PE_sdata8 || cie->fde_encoding == DW_EH_PE_omit) {
      *error = "FDE pointer encoding " + HexU64(cie->fde_encoding) + " not usable";
      return false;
    }
    cie->initial_instructions = c.Bytes(c.remaining());
    return c.ok();
  }

  void ReadFde(uint64_t offset, const Header& h) {
    uint64_t cie_offset = h.id;
    if (eh()) {
      if (h.id > h.id_offset) {
        Problem(offset, "FDE: CIE pointer " + HexU64(h.id) + " points before the section");
        return;
      }
      cie_offset = h.id_offset - h.id;
    }
    int64_t cie_index = CieAt(cie_offset);
    if (cie_index < 0) {
      Problem(offset, "FDE: no usable CIE at " + HexU64(cie_offset));
      return;
    }
    const Cie& cie = out_.cies[static_cast<size_t>(cie_index)];
    ByteCursor c(info_.data.data(), h.end);
    c.Seek(h.id_offset + h.id_size);
    Fde fde;
    fde.offset = offset;
    fde.cie_index = static_cast<uint32_t>(cie_index);
    std::string error;
    PointerBases bases = bases_;
    bases.address_size = cie.address_size;
    uint64_t range = 0;
    if (!ReadEncodedPointer(c, cie.fde_encoding, bases, &fde.pc_begin, &error) ||
        !ReadPointerFormat(c, cie.fde_encoding & 0x0f, cie.address_size, &range, &error)) {
      Problem(offset, "FDE: pc range: " + error);
      return;
    }
    if (cie.address_size == 4) {
      fde.pc_begin &= 0xffffffffu;
      range &= 0xffffffffu;
    }
    if (fde.pc_begin + range < fde.pc_begin) {
      Problem(offset,
              "FDE: pc range " + HexU64(fde.pc_begin) + "+" + HexU64(range) + " wraps around");
      return;
    }
    fde.pc_end = fde.pc_begin + range;
    if (cie.has_augmentation_data) {
      uint64_t aug_length = c.Uleb128();
      if (!c.ok() || aug_length > c.remaining()) {
        Problem(offset,
                "FDE: augmentation data length " + HexU64(aug_length) + " runs past the FDE");
        return;
      }
      c.Skip(aug_length);
    }
    fde.instructions_vaddr = info_.vaddr + c.offset();
    fde.instructions = c.Bytes(c.remaining());
    out_.fdes.push_back(fde);
  }

  const CfiSectionInfo& info_;
  PointerBases bases_;
  CfiEntries out_;
  std::unordered_map<uint64_t, int64_t> cie_by_offset_;
};

}  // namespace

const char* CfiSectionName(CfiSectionKind kind) {
  return kind == CfiSectionKind::kEhFrame ? ".eh_frame" : ".debug_frame";
}

bool ReadEncodedPointer(ByteCursor& c, uint8_t encoding, const PointerBases& bases, uint64_t* out,
                        std::string* error) {
  if (encoding == DW_EH_PE_omit) {
    *error = "pointer encoding is DW_EH_PE_omit";
    return false;
  }
  const uint8_t application = encoding & 0x70;
  uint8_t format = encoding & 0x0f;
  if (application == DW_EH_PE_aligned) {
    const uint64_t align = bases.address_size;
    const uint64_t here = bases.section_vaddr + c.offset();
    c.Skip(static_cast<size_t>((align - here % align) % align));
    format = DW_EH_PE_absptr;
  }
  const uint64_t field_vaddr = bases.section_vaddr + c.offset();
  uint64_t v = 0;
  if (!ReadPointerFormat(c, format, bases.address_size, &v, error)) return false;
  switch (application) {
    case DW_EH_PE_absptr:
    case DW_EH_PE_aligned:
      break;
    case DW_EH_PE_pcrel:
      v += field_vaddr;
      break;
    case DW_EH_PE_textrel:
      v += bases.text_vaddr;
      break;
    case DW_EH_PE_datarel:
      v += bases.data_vaddr;
      break;
    case DW_EH_PE_funcrel:
      v += bases.func_vaddr;
      break;
    default:
      *error = "unknown pointer application " + HexU64(application);
      return false;
  }
  if (encoding & DW_EH_PE_indirect) {
    std::optional<uint64_t> target;
    if (bases.read_pointer) target = bases.read_pointer(v);
    if (!target) {
      *error = "indirect pointer at " + HexU64(v) + " cannot be read";
      return false;
    }
    v = *target;
  }
  *out = v;
  return true;
}

CfiEntries ReadCfiSection(const CfiSectionInfo& info) { return SectionReader(info).Read(); }

}  // namespace stacksym::unwind
