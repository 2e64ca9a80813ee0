// cfi_elf.h — wraps hand-made CFI bytes into a minimal ELF (with the ELF test builder) so that
// UnwindTable::Build can be tested on them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "stacksym/elf.h"

namespace stacksym::testing {

// An x86_64 ET_DYN with a .text at 0x1000 and the given .eh_frame (at 0x10000) and
// .debug_frame sections (either may be empty: then it is absent).
// With `code_segment`, .text is also mapped by an executable PT_LOAD [0x1000, 0x1100).
std::shared_ptr<ElfFile> ElfWithCfi(const std::vector<uint8_t>& eh_frame,
                                    const std::vector<uint8_t>& debug_frame,
                                    bool code_segment = false);

}  // namespace stacksym::testing
