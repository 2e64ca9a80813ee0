// The persisted unwind table: one file per binary in the symbol cache directory, next to the
// symbol indexes (docs/unwind-table-format.md). A recording loads a binary's table from it
// instead of interpreting .eh_frame again; a file that is truncated, corrupt, of another
// version or of another binary is detected here and the caller rebuilds it.
//
//   std::vector<uint8_t> bytes = unwind::Serialize(*table, unwind::IdentityOf(elf));
//   Result<unwind::Loaded> back = unwind::Parse(bytes);    // every check, no trust
//   Result<std::shared_ptr<const UnwindTable>> t = unwind::Load(path, elf);
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stacksym/elf.h"
#include "stacksym/result.h"
#include "stacksym/unwind.h"

namespace stacksym::unwind {

inline constexpr char kMagic[8] = {'S', 'T', 'K', 'U', 'N', 'W', 'T', 'B'};
// Bump whenever the layout or the rows UnwindTable::Build compiles change: the version is in
// the file name too, so two stacksym versions sharing a directory keep their own files.
// 2: Go functions' rows from .gopclntab (a version-1 file of a Go binary has none).
inline constexpr uint32_t kVersion = 2;
inline constexpr uint32_t kHeaderSize = 64;

// "<build ID hex>-v<version>.unwtab", or "noid-<hash of dev, inode, size, mtime>-v<version>.unwtab"
// for a binary without a build ID.
std::string FileName(const ElfFile& elf);

// What the file records about the binary, as "key value" lines: "binary <path>" always (for
// `cache list`), and for a binary without a build ID "noid <dev> <inode> <size> <mtime_ns>",
// which must still match when the file is loaded.
std::string IdentityOf(const ElfFile& elf);

std::vector<uint8_t> Serialize(const UnwindTable& table, const std::string& identity);

struct Loaded {
  std::shared_ptr<const UnwindTable> table;
  std::string identity;
};
// Checks everything: magic, version, sizes, the header/meta/rows CRC32Cs, and the rows'
// invariants (sorted pcs inside [base, end), known rule values), so that no byte sequence
// gives a table the unwinders could misread.
Result<Loaded> Parse(std::span<const uint8_t> bytes);

// The table stored at `path` if it is intact and belongs to `elf` (same build ID; without
// one, same file identity). ErrorCode::kNotFound when there is no file it could open.
Result<std::shared_ptr<const UnwindTable>> Load(const std::string& path, const ElfFile& elf);

}  // namespace stacksym::unwind
