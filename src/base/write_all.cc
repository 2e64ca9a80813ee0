#include "base/write_all.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <vector>

namespace stacksym {

int WriteAll(int fd, std::span<const std::span<const uint8_t>> pieces,
             std::optional<uint64_t> offset) {
  std::vector<iovec> iov;
  size_t next = 0;           // first piece not yet (wholly) written
  size_t written_of_it = 0;  // its bytes already written
  for (;;) {
    // Past what is written, and past empty pieces (a write of nothing would look like a full
    // disk).
    while (next < pieces.size() && written_of_it == pieces[next].size()) {
      ++next;
      written_of_it = 0;
    }
    if (next == pieces.size()) return 0;
    iov.clear();
    for (size_t i = next; i < pieces.size() && iov.size() < IOV_MAX; ++i) {
      size_t skip = i == next ? written_of_it : 0;
      if (pieces[i].size() == skip) continue;
      iov.push_back({const_cast<uint8_t*>(pieces[i].data()) + skip, pieces[i].size() - skip});
    }
    const int count = static_cast<int>(iov.size());
    ssize_t n = offset ? ::pwritev(fd, iov.data(), count, static_cast<off_t>(*offset))
                       : ::writev(fd, iov.data(), count);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ENOSPC;
    if (offset) *offset += static_cast<uint64_t>(n);
    size_t left = static_cast<size_t>(n);
    while (next < pieces.size() && left >= pieces[next].size() - written_of_it) {
      left -= pieces[next].size() - written_of_it;
      written_of_it = 0;
      ++next;
    }
    written_of_it += left;
  }
}

}  // namespace stacksym
