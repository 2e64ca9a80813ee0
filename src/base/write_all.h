// WriteAll — pieces of memory written one after the other to a file descriptor with writev
// (or pwritev from an offset), IOV_MAX pieces per call, resumed after short writes and
// EINTR: the index writer's pieces and a command's rendered answers go out without being
// copied together first.
//
//   int err = WriteAll(fd, pieces);          // at the file position (a pipe, stdout)
//   int err = WriteAll(fd, pieces, offset);  // at `offset` (a regular file)
//   if (err != 0) ... std::strerror(err) ...
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace stacksym {

// 0, or the errno of the write that failed (ENOSPC for a write that took nothing).
int WriteAll(int fd, std::span<const std::span<const uint8_t>> pieces,
             std::optional<uint64_t> offset = std::nullopt);

}  // namespace stacksym
