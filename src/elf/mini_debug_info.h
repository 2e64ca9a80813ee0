// elf/mini_debug_info.h — MiniDebugInfo: the small ELF image that Fedora, RHEL and their kin
// keep xz-compressed in a binary's .gnu_debugdata section. It holds a .symtab of the function
// symbols .dynsym lacks (static functions, _start), so that a stripped binary still names its
// frames without its debug package (gdb's manual, "MiniDebugInfo").
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym::elf {

// Bounds on the decoding of untrusted bytes: the image a distribution embeds is a few MiB at
// most (the symbols of libxul's 300 000 functions make ~10 MiB); more is refused rather than
// allocated. The decoder's own memory (its dictionary) is bounded as well.
inline constexpr size_t kMaxMiniDebugInfoBytes = size_t{256} << 20;
inline constexpr uint64_t kMaxXzDecoderMemory = uint64_t{128} << 20;

// Decodes one .xz stream (concatenated streams too, as xz(1) writes them when appending).
// Errors: not xz, corrupt or truncated data, a check (CRC/SHA) mismatch, an output larger
// than max_bytes, a decoder needing more than kMaxXzDecoderMemory.
Result<std::vector<uint8_t>> DecompressXz(std::span<const uint8_t> input, size_t max_bytes);

// The ELF image of `binary`'s .gnu_debugdata, opened; null when the file has no such section.
// Errors: the section cannot be read or decoded, or what it holds is not ELF.
Result<std::shared_ptr<ElfFile>> OpenMiniDebugInfo(const ElfFile& binary);

}  // namespace stacksym::elf
