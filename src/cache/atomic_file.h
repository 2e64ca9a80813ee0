// AtomicFile — a file that readers see whole or not at all: written as a private temporary
// (`path.tmp.<pid>.<random>`), fsync'd, renamed over `path`, then the directory fsync'd. A
// run of pieces may be written on a thread of its own while the caller produces the rest (an
// index build hands over its records while it compresses its strings).
//
//   AtomicFile file(dir, path);
//   file.WriteInBackground(offset, pieces);  // optional; the pieces stay valid until Commit
//   Result<void> r = file.Commit(all_pieces, first_written, end_written);
//
// Destroyed without a successful Commit, it removes the temporary. Durability::kRenameOnly
// skips both fsyncs, for files a reader checks whole and can do without (a crash may then
// leave an empty or partial file under `path`, which its checksums reject).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::cache {

class AtomicFile {
 public:
  enum class Durability { kSynced, kRenameOnly };
  AtomicFile(std::string dir, std::string path, Durability durability = Durability::kSynced);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Writes `pieces`, one after the other, from `offset` on, on a thread of its own, and starts
  // their writeback to the device.
  void WriteInBackground(uint64_t offset, std::vector<std::span<const uint8_t>> pieces);
  // Writes `pieces` (the whole file, in order, from offset 0) but for [first_written,
  // end_written), which WriteInBackground was given; then fsync, rename over the path, fsync
  // of the directory.
  Result<void> Commit(std::span<const std::span<const uint8_t>> pieces, size_t first_written = 0,
                      size_t end_written = 0);

 private:
  void Discard();

  std::string dir_, path_, tmp_;
  Durability durability_;
  int fd_ = -1;
  Result<void> opened_;
  bool renamed_ = false;
  std::thread background_;
  Result<void> background_result_;
};

}  // namespace stacksym::cache
