// eh_frame_hdr.h — the .eh_frame_hdr section (PT_GNU_EH_FRAME): a pointer to .eh_frame and a
// table of (initial location, FDE address) pairs sorted by location, which the runtime
// binary-searches. We read it and check it against the FDEs actually found in .eh_frame, so
// that a header that disagrees (a corrupt or stale file) is reported, not trusted.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stacksym/result.h"
#include "unwind/cfi_reader.h"

namespace stacksym::unwind {

struct EhFrameHdrEntry {
  uint64_t initial_location = 0;
  uint64_t fde_vaddr = 0;
};

struct EhFrameHdr {
  uint64_t eh_frame_vaddr = 0;
  std::vector<EhFrameHdrEntry> table;  // empty when the header has no search table
  bool has_table = false;
};

// `vaddr` is the section's address (the base of pcrel and datarel encodings in it).
Result<EhFrameHdr> ReadEhFrameHdr(std::span<const uint8_t> data, uint64_t vaddr);

// The header must point at `eh_frame_vaddr`, its table must be sorted, and it must list
// exactly the FDEs of `entries` (read from that .eh_frame) with their initial locations.
Result<void> CheckEhFrameHdr(const EhFrameHdr& hdr, const CfiEntries& entries,
                             uint64_t eh_frame_vaddr);

}  // namespace stacksym::unwind
