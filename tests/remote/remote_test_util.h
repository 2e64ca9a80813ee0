// Helpers of the remote tests: temporary debug dirs laid out by build ID, a profile over the
// remote_prog fixture, raw loopback sockets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stacksym/profile.h"

namespace stacksym::testing {

// A fresh directory under /tmp, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The whole file ("" when it cannot be read).
std::string ReadFile(const std::string& path);
std::vector<uint8_t> BuildIdOf(const std::string& path);
// Copies `file` to <dir>/.build-id/xx/rest<suffix> (suffix "" or ".debug").
void PlaceByBuildId(const std::string& dir, const std::string& file, const std::string& suffix);

// File offsets inside every function of the (unstripped) remote_prog fixture, and a few
// beyond its code.
std::vector<uint64_t> RemoteProgOffsets();
// The same for the unstripped ELF file at `path`.
std::vector<uint64_t> CodeOffsets(const std::string& path);
// A normalized-only profile: remote_prog's offsets (module path that does not exist here),
// a module whose build ID nobody has, and one kernel frame.
Profile MakeRemoteProgProfile();

// Connects to 127.0.0.1:port, sends `data` (and keeps the connection open for
// `hold_seconds` before reading); returns what the server sent until it closed the
// connection or 10 s passed. *closed_after: seconds from the end of sending to the close.
std::string RawExchange(int port, const std::string& data, double hold_seconds = 0,
                        double* closed_after = nullptr);

}  // namespace stacksym::testing
