// stacksym/build_id_fetcher.h — one more place files are found by build ID, after the local
// debug dirs: a remote service such as debuginfod (see stacksym/remote.h for the one built in).
//
//   SymbolizeOptions opts;
//   opts.fetcher = MakeDebuginfodFetcher({});     // null when DEBUGINFOD_URLS is empty
//   auto sym = ElfSymbolizer::Open(path, opts);   // a missing debug file is now fetched
//
// The finders call Fetch() only when nothing local matched, and verify the build ID of what
// it returns, as for local candidates.
//
// Thread-safety: implementations are called from any thread, concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "stacksym/result.h"

namespace stacksym {

class BuildIdFetcher {
 public:
  enum class Kind : uint8_t { kExecutable, kDebugInfo };
  virtual ~BuildIdFetcher() = default;
  // Path of a local copy of the file with that build ID. Error kNotFound when no source has
  // it; other codes (with a message naming the source) when a source is down or too slow.
  virtual Result<std::string> Fetch(std::span<const uint8_t> build_id, Kind kind) const = 0;
};

}  // namespace stacksym
