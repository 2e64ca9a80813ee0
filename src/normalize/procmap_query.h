// The PROCMAP_QUERY ioctl on /proc/PID/maps (Linux 6.11+), defined here because Debian
// bookworm's 6.1 kernel headers lack it. Layout and numbers are the kernel's uapi
// (include/uapi/linux/fs.h); the static_assert pins the 104-byte struct the ioctl number
// encodes.
#pragma once

#include <sys/ioctl.h>

#include <cstdint>

namespace stacksym::normalize {

struct procmap_query {
  uint64_t size;           // sizeof(procmap_query), for forward/backward compatibility
  uint64_t query_flags;    // in: kQuery* flags
  uint64_t query_addr;     // in
  uint64_t vma_start;      // out
  uint64_t vma_end;        // out
  uint64_t vma_flags;      // out: kVma* permission bits (same values as the query filters)
  uint64_t vma_page_size;  // out
  uint64_t vma_offset;     // out: file offset of vma_start (0 if anonymous)
  uint64_t inode;          // out
  uint32_t dev_major;      // out
  uint32_t dev_minor;      // out
  uint32_t vma_name_size;  // in: buffer size; out: name length incl. NUL (0: no name)
  uint32_t build_id_size;  // in: buffer size; out: build ID length (0: none or unreadable)
  uint64_t vma_name_addr;  // in: user buffer for the name
  uint64_t build_id_addr;  // in: user buffer for the build ID
};
static_assert(sizeof(procmap_query) == 104, "procmap_query must match the kernel uapi");

inline constexpr uint64_t kQueryVmaReadable = 0x01;
inline constexpr uint64_t kQueryVmaWritable = 0x02;
inline constexpr uint64_t kQueryVmaExecutable = 0x04;
inline constexpr uint64_t kQueryVmaShared = 0x08;
inline constexpr uint64_t kQueryCoveringOrNextVma = 0x10;
inline constexpr uint64_t kQueryFileBackedVma = 0x20;

inline constexpr unsigned long kProcfsIoctlMagic = 'f';
inline constexpr unsigned long kProcmapQuery = _IOWR(kProcfsIoctlMagic, 17, procmap_query);
static_assert(kProcmapQuery == 0xC0686611ul, "PROCMAP_QUERY ioctl number");

}  // namespace stacksym::normalize
