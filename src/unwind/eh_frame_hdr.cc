#include "unwind/eh_frame_hdr.h"

#include <algorithm>
#include <unordered_map>

#include "base/hex.h"

namespace stacksym::unwind {
namespace {

Error Malformed(std::string message) {
  return std::move(
      MakeError(ErrorCode::kMalformed, std::move(message)).WithSection(".eh_frame_hdr"));
}

}  // namespace

Result<EhFrameHdr> ReadEhFrameHdr(std::span<const uint8_t> data, uint64_t vaddr) {
  ByteCursor c(data);
  uint8_t version = c.U8();
  uint8_t eh_frame_ptr_enc = c.U8();
  uint8_t fde_count_enc = c.U8();
  uint8_t table_enc = c.U8();
  if (!c.ok()) return Malformed("header truncated");
  if (version != 1) return Malformed("version " + std::to_string(version) + " not supported");
  PointerBases bases;
  bases.section_vaddr = vaddr;
  bases.data_vaddr = vaddr;
  EhFrameHdr hdr;
  std::string error;
  if (!ReadEncodedPointer(c, eh_frame_ptr_enc, bases, &hdr.eh_frame_vaddr, &error)) {
    return Malformed("eh_frame_ptr: " + error);
  }
  if (fde_count_enc == DW_EH_PE_omit || table_enc == DW_EH_PE_omit) return hdr;
  uint64_t count = 0;
  if (!ReadEncodedPointer(c, fde_count_enc, bases, &count, &error)) {
    return Malformed("fde_count: " + error);
  }
  // Each entry takes at least 2 bytes (two LEB128s); a count beyond that is a lie.
  if (count > c.remaining() / 2) {
    return Malformed("fde_count " + std::to_string(count) + " does not fit in the section");
  }
  hdr.has_table = true;
  hdr.table.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    EhFrameHdrEntry e;
    if (!ReadEncodedPointer(c, table_enc, bases, &e.initial_location, &error) ||
        !ReadEncodedPointer(c, table_enc, bases, &e.fde_vaddr, &error)) {
      return Malformed("search table entry " + std::to_string(i) + ": " + error);
    }
    hdr.table.push_back(e);
  }
  return hdr;
}

Result<void> CheckEhFrameHdr(const EhFrameHdr& hdr, const CfiEntries& entries,
                             uint64_t eh_frame_vaddr) {
  if (hdr.eh_frame_vaddr != eh_frame_vaddr) {
    return Malformed("eh_frame_ptr " + HexU64(hdr.eh_frame_vaddr) + " is not .eh_frame's address " +
                     HexU64(eh_frame_vaddr));
  }
  if (!hdr.has_table) return {};
  for (size_t i = 1; i < hdr.table.size(); ++i) {
    if (hdr.table[i].initial_location < hdr.table[i - 1].initial_location) {
      return Malformed("search table not sorted at entry " + std::to_string(i));
    }
  }
  std::unordered_map<uint64_t, uint64_t> pc_by_fde;  // FDE vaddr -> pc_begin
  pc_by_fde.reserve(entries.fdes.size());
  for (const Fde& fde : entries.fdes) pc_by_fde.emplace(eh_frame_vaddr + fde.offset, fde.pc_begin);
  for (size_t i = 0; i < hdr.table.size(); ++i) {
    const EhFrameHdrEntry& e = hdr.table[i];
    auto it = pc_by_fde.find(e.fde_vaddr);
    if (it == pc_by_fde.end()) {
      return Malformed("search table entry " + std::to_string(i) + " points at " +
                       HexU64(e.fde_vaddr) + ", where .eh_frame has no FDE");
    }
    if (it->second != e.initial_location) {
      return Malformed("search table entry " + std::to_string(i) + " says " +
                       HexU64(e.initial_location) + " but its FDE begins at " + HexU64(it->second));
    }
  }
  if (hdr.table.size() != entries.fdes.size()) {
    return Malformed("search table lists " + std::to_string(hdr.table.size()) +
                     " FDEs, .eh_frame has " + std::to_string(entries.fdes.size()));
  }
  return {};
}

}  // namespace stacksym::unwind
