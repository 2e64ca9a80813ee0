// What an index was built from, as "key value" lines in its identity section, and the check
// that those files are still the same: the DWARF file and every other debug file read (by
// path and dev/inode/size/mtime), the binary's own identity when it has no build ID, and the
// build-ID debug paths that did not exist (a debug package installed later makes the index
// stale).
//
//   binary /usr/lib/x86_64-linux-gnu/libc.so.6
//   debug /usr/lib/debug/.build-id/ab/cdef.debug
//   file 2049 1234 5000000 1700000000000000000 /usr/lib/debug/.build-id/ab/cdef.debug
//   absent /usr/lib/debug/.build-id/ab/cdef.debug      (only when no DWARF was found)
//   noid 2049 99 12345 1700000000000000000             (only for a binary without build ID)
//   location /usr/bin|/usr/bin/x|/proc/7/root          (only when DWARF was found, or not
//                                                       found, by the binary's location)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dwarf/dwarf_options.h"
#include "stacksym/elf.h"
#include "stacksym/result.h"

namespace stacksym::index {

struct SourceFile {
  std::string path;
  FileIdentity identity;
};

std::string DescribeSources(const ElfFile& binary, const dwarf::DebugFileSearch& search,
                            const std::string& debug_path, const std::vector<SourceFile>& files);

// Ok when every file the identity names is unchanged (and, for DWARF whose finding depends
// on where the binary is, the binary is where the index was built for); otherwise says why.
Result<void> CheckSources(std::string_view identity, const ElfFile& binary,
                          const dwarf::DebugFileSearch& search);

// The value of the first line with `key` ("binary", "debug"), empty when absent.
std::string IdentityValue(std::string_view identity, std::string_view key);

}  // namespace stacksym::index
